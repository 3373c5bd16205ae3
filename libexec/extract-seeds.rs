//! `ctxfold-extract-seeds`: see `ctxfold::commands::extract_seeds`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::extract_seeds::ExtractSeedsArgs>()
}
