//! `ctxfold-hash-object`: see `ctxfold::commands::hash_object`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::hash_object::HashObjectArgs>()
}
