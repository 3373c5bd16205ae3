//! `ctxfold status`: each session found, compared with what the store holds of it.

use rayon::prelude::*;
use std::path::PathBuf;

use serde::Serialize;

use crate::agents::{Homes, Titles};
use crate::cli::human::count;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, Verbosity, emit};
use crate::commands::{AgentArgs, report_discovery};
use crate::error::Result;
use crate::fold::compare::{State, compare};
use crate::fold::stamp::Stamp;
use crate::fold::stamps::Stamps;
use crate::history::unchanged::Unchanged;
use crate::sources::{Found, discover_known};
use crate::store::Store;
use crate::store::generations;
use crate::store::heads::Heads;

/// Show each session found: new, up to date, grown since folded, or changed
///
/// Finds sessions as fold does (the Codex, Pi and Claude Code homes, or PATHS) and compares each with its
/// manifest in the store, in the words fold uses: `new` (not folded), `up to date` (same sha256
/// and size), `grown` (the folded bytes are a prefix of the file: it was appended to since;
/// `fold --apply` folds the rest, deduplicating what was folded before, and keeps the folded
/// version as a generation), or `changed` (changed other than by an append: fold refuses it
/// unless --overwrite, which keeps the folded version as a generation). `ctxfold diff ID` shows
/// how a grown or changed session differs from its folded version. A session with
/// generations kept says how many (`ctxfold ls --generations` lists them). Sessions up to date are
/// counted in one line, and listed with -v (--json lists every session). Reads every source that
/// has a manifest; never writes.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-status", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct StatusArgs {
    /// Session files and folders [default: the agents' homes]
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub agent: AgentArgs,
    /// One JSON object per session (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
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
    /// Earlier versions kept in the store.
    generations: usize,
}

impl Command for StatusArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        // No titles: status shows none, and a title can take reading a whole file. A file
        // unchanged since it was folded is not read at all (a cache: without it, read).
        let store = Store::at(self.store.path()?);
        let stamps = Stamps::load(&store);
        let heads = Heads::load(&store);
        let unchanged = Unchanged::new(&stamps, &heads);
        let discovery = discover_known(
            &Homes::from_env()?,
            &self.paths,
            &self.agent.agents,
            Titles::Later,
            &|path| unchanged.session(path),
        );
        let mut status = report_discovery(io, &discovery);
        let mut changed = Vec::new();
        // Without -v, up to date sessions are counted, not listed: they are most of a store.
        let list_all = self.json || io.verbosity() == Verbosity::Verbose;
        let mut up_to_date = 0u64;
        let generations = generations::all(&store)?;
        let kept = |id: &str| {
            (generations.binary_search_by(|(with, _)| with.as_str().cmp(id)))
                .map_or(0, |at| generations[at].1.len())
        };
        let results: Vec<_> = discovery
            .sessions
            .par_iter()
            .map(|found| state_of(&heads, &stamps, found, kept(&found.session.id)))
            .collect();
        // A cache: a store this user cannot write to is read all the same, only not faster.
        let _ = heads.save();
        for (found, result) in discovery.sessions.iter().zip(results) {
            let (state, stamp, folded_bytes, generations) = match result {
                Ok(r) => r,
                Err(e) => {
                    status = status.worst(e.status());
                    io.error(format_args!(
                        "{}: {e}",
                        crate::cli::human::path(&found.path)
                    ));
                    continue;
                }
            };
            if state == State::Changed {
                changed.push(found.session.id.clone());
            }
            if state == State::UpToDate && !list_all {
                up_to_date += 1;
                continue;
            }
            let line = Line {
                id: &found.session.id,
                state,
                path: found.path.display().to_string(),
                bytes: stamp.size,
                folded_bytes,
                generations,
            };
            if self.json {
                emit(
                    io.out,
                    serde_json::to_string(&line).expect("lines serialize"),
                )?;
            } else {
                let state = serde_json::to_value(state).expect("states serialize");
                let state = state.as_str().unwrap_or_default().replace('_', " ");
                let generations = crate::cli::human::generations(line.generations);
                emit(
                    io.out,
                    format_args!(
                        "{state:<11} {}  {}{generations}",
                        line.id,
                        crate::cli::human::path(&found.path)
                    ),
                )?;
            }
        }
        if up_to_date > 0 && io.verbosity() != Verbosity::Quiet {
            let sessions = count(up_to_date, "session");
            emit(
                io.out,
                format_args!("{sessions} up to date (-v lists them)"),
            )?;
        }
        if let [first, ..] = changed.as_slice() {
            io.note(format_args!(
                "{} changed other than by an append since folded: 'ctxfold diff ID' shows how \
                 (ctxfold diff {first})",
                count(changed.len() as u64, "session")
            ));
        }
        crate::commands::mount::note_mounts(io, &store);
        Ok(status)
    }
}

/// What `found` is to the store; a source whose stamp fold recorded with the bytes its manifest
/// names is up to date unread, as fold finds it.
fn state_of(
    heads: &Heads<'_>,
    stamps: &Stamps,
    found: &Found,
    generations: usize,
) -> Result<(State, Stamp, Option<u64>, usize)> {
    let stamp = Stamp::of(&found.path)?;
    let Some(head) = heads.of(&found.session.id)? else {
        return Ok((State::New, stamp, None, generations));
    };
    let state = match stamps.knows(&found.path, &stamp, &head.source) {
        true => State::UpToDate,
        false => compare(&found.path, &stamp, &head.source)?,
    };
    Ok((state, stamp, Some(head.source.bytes), generations))
}
