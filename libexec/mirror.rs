//! `ctxfold-mirror`: see `ctxfold::commands::mirror`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::mirror::MirrorArgs>()
}
