//! `ctxfold-split`: see `ctxfold::commands::split`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::split::SplitArgs>()
}
