//! `ctxfold-verify-span`: see `ctxfold::commands::verify_span`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::verify_span::VerifySpanArgs>()
}
