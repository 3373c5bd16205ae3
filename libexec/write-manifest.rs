//! `ctxfold-write-manifest`: see `ctxfold::commands::write_manifest`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::write_manifest::WriteManifestArgs>()
}
