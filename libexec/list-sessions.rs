//! `ctxfold-list-sessions`: see `ctxfold::commands::list_sessions`.

fn main() -> std::process::ExitCode {
    ctxfold::cli::main::<ctxfold::commands::list_sessions::ListSessionsArgs>()
}
