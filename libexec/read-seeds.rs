//! `ctxfold-read-seeds`: see `ctxfold::commands::read_seeds`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::read_seeds::ReadSeedsArgs>()
}
