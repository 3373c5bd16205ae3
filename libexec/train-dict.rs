//! `ctxfold-train-dict`: see `ctxfold::commands::train_dict`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::train_dict::TrainDictArgs>()
}
