//! `ctxfold-cat-object`: see `ctxfold::commands::cat_object`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::cat_object::CatObjectArgs>()
}
