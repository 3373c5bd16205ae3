//! `ctxfold status`: each session found, compared with what the store holds of it.

use std::path::PathBuf;

use serde::Serialize;

use crate::agents::Homes;
use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::error::{Error, Result, write_failed};
use crate::fold::compare::{State, compare};
use crate::fold::stamp::Stamp;
use crate::sources::{Found, discover};
use crate::store::Store;

/// Show each session found: new, up to date, grown since folded, or changed
///
/// Finds sessions as fold does (the Codex and Pi homes, or PATHS) and compares each with its
/// manifest in the store: `new` (not folded), `up-to-date` (same sha256 and size), `grown` (the
/// folded bytes are a prefix of the file: it was appended to since; `fold --apply --overwrite`
/// folds the rest, deduplicating what was folded before), or `changed` (changed other than by an
/// append). Reads every source that has a manifest; never writes.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-status", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct StatusArgs {
    /// Session files and folders [default: the Codex and Pi homes]
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
    /// One JSON object per session (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Serialize)]
struct Line<'a> {
    id: &'a str,
    state: State,
    path: String,
    /// Size of the file on disk.
    bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    folded_bytes: Option<u64>,
}

impl Command for StatusArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let discovery = discover(&Homes::from_env()?, &self.paths);
        let store = Store::at(self.store.path()?);
        let mut failed = !discovery.problems.is_empty();
        for problem in &discovery.problems {
            writeln!(io.err, "ctxfold status: {problem}").map_err(write_failed)?;
        }
        let results = crate::parallel::map(
            &discovery.sessions,
            || (),
            |(), found| state_of(&store, found),
            || (),
        );
        for (found, result) in discovery.sessions.iter().zip(results) {
            let (state, stamp, folded_bytes) = match result {
                Ok(r) => r,
                Err(e) => {
                    failed = true;
                    writeln!(io.err, "ctxfold status: {}: {e}", found.path.display())
                        .map_err(write_failed)?;
                    continue;
                }
            };
            let line = Line {
                id: &found.session.id,
                state,
                path: found.path.display().to_string(),
                bytes: stamp.size,
                folded_bytes,
            };
            if self.json {
                emit(
                    io.out,
                    serde_json::to_string(&line).expect("lines serialize"),
                )?;
            } else {
                let state = serde_json::to_value(state).expect("states serialize");
                let state = state.as_str().unwrap_or_default().replace('_', "-");
                emit(
                    io.out,
                    format_args!("{state:<11} {}  {}", line.id, line.path),
                )?;
            }
        }
        Ok(if failed {
            Status::Negative
        } else {
            Status::Success
        })
    }
}

fn state_of(store: &Store, found: &Found) -> Result<(State, Stamp, Option<u64>)> {
    let stamp = Stamp::of(&found.path)?;
    if !store.has_manifest(&found.session.id) {
        return Ok((State::New, stamp, None));
    }
    let manifest = store
        .load_manifest(&found.session.id)
        .map_err(|e| Error::failed(e.to_string()))?;
    Ok((
        compare(&found.path, &stamp, &manifest.source)?,
        stamp,
        Some(manifest.source.bytes),
    ))
}
