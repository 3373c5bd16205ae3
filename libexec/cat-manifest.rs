//! `ctxfold-cat-manifest`: see `ctxfold::commands::cat_manifest`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::cat_manifest::CatManifestArgs>()
}
