//! Shell completion at run time: every binary answers the scripts of `ctxfold completions`
//! (clap_complete's `COMPLETE=<shell> <program> -- <words>` protocol) from its clap definition, and
//! the candidates no definition can list, such as the ids of the folded sessions, are read here.

use clap_complete::{ArgValueCandidates, CompletionCandidate};

use super::StoreArgs;

/// When a completion script asks (`$COMPLETE` is set), print the candidates for the words it
/// passes and exit; otherwise return and let the program run.
pub fn answer(command: fn() -> clap::Command) {
    clap_complete::CompleteEnv::with_factory(command).complete();
}

/// Completes an argument that names a folded session (`restore <TAB>`): add it to the argument's
/// clap definition, `#[arg(add = crate::cli::complete::session_ids())]`.
pub fn session_ids() -> ArgValueCandidates {
    ArgValueCandidates::new(folded_sessions)
}

/// The ids of the sessions folded in the store. Completion sees no `--store` typed on the same
/// line, so this is the store the environment names; a missing or unreadable store offers nothing
/// rather than an error in the middle of a prompt.
fn folded_sessions() -> Vec<CompletionCandidate> {
    let Ok(store) = (StoreArgs { store: None }).open() else {
        return Vec::new();
    };
    store
        .session_ids()
        .unwrap_or_default()
        .into_iter()
        .map(CompletionCandidate::new)
        .collect()
}
