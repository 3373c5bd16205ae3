//! `ctxfold ls`: the folded sessions.

use std::collections::HashMap;

use serde::Serialize;

use crate::agents::Agent;
use crate::agents::place::{named_by, started};
use crate::cli::human::{MINUTE, bytes, minute, path as path_for_people};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::AgentArgs;
use crate::error::Result;
use crate::store::Store;
use crate::store::generations::{self, Generation, Reason};
use crate::store::heads::Heads;

/// List the folded sessions: id, start, agent, state, source and stored bytes, cwd, title
///
/// One line per manifest in manifests/, then the conflicts sync kept in manifests/conflicts/
/// (a remote manifest that disagreed with the local one), marked as such, under a header line. A
/// session's start is the time its agent named its file after, to the minute: Pi's in UTC
/// (`2026-11-30 23:21Z`, as ctxfold shows every time), Codex's in the local time of the machine it
/// ran on, whose zone no file records (`2026-05-11 18:39 local`; --json gives it with no zone);
/// where the name says none (Claude Code, a file folded by path), the timestamp of its first line
/// that has one, in UTC; `-` when not known. Its agent is codex, pi or claude when its file is
/// named as that agent names its files, else file (a file folded by path); its state is active,
/// archived or conflict; its cwd is where the agent ran, `~` for $HOME and cut to its last 24
/// characters (--json gives it whole, and omits what is not known). Stored bytes are the
/// compressed size of the session's distinct objects, however many other sessions share them. A
/// session with earlier versions kept (generations: see ctxfold fold) says how many; --generations
/// lists each under its session, as `ID@N` (1 is the newest) with when and why it was kept, which
/// `ctxfold restore ID@N` brings back. --agent lists only the sessions of an agent: those whose
/// rollout_path is where that agent keeps them (see ctxfold restore).
///
/// Its title is the one recorded when it was folded, as its agent shows it. A Claude Code
/// session's is what Claude Code's resume picker shows, the first rule that gives one winning:
/// its latest `agent-name`, else its latest `custom-title` (`/rename`), else its latest
/// `ai-title`, else a `summary` line in the file's last 64 KiB, else its latest prompt
/// (`last-prompt`); else, as Claude Code 1.0.x titled it, a `summary` line in another transcript
/// of the same project whose `leafUuid` names one of its messages (the one naming its latest);
/// else its first prompt a person typed, else the slash command of its first command.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-ls", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct LsArgs {
    /// One JSON object per session (JSON Lines)
    #[arg(long)]
    pub json: bool,
    /// List each session's generations too
    #[arg(short, long)]
    pub generations: bool,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Serialize)]
struct Entry<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    /// `2026-11-30T23:21:14Z` (UTC), or `2026-05-11T11:26:55` (its agent's local time, zone
    /// unknown), from the agent's file name, else from its first dated line (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    started: Option<String>,
    /// `codex`, `pi`, `claude`, or `file` (folded by path).
    agent: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    archived: bool,
    source_bytes: u64,
    stored_bytes: u64,
    conflict: bool,
    generations: usize,
    rollout_path: &'a str,
}

/// A generation, under `--generations`.
#[derive(Serialize)]
struct Kept<'a> {
    id: &'a str,
    generation: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    kept_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Reason>,
    source_bytes: u64,
    path: String,
}

impl Command for LsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let conflicts = store.manifests_dir().join("conflicts");
        let mut bad = 0;
        if !self.json {
            emit(
                io.out,
                format_args!(
                    "{:<36}  {:<MINUTE$}  {:<AGENT$}  {:<8}  {:>10}  {:>10}  {:<CWD$}  TITLE",
                    "ID", "STARTED", "AGENT", "STATE", "SOURCE", "STORED", "CWD"
                ),
            )?;
        }
        let heads = Heads::load(&store);
        let mut kept_by_id: HashMap<String, Vec<Generation>> =
            generations::all(&store)?.into_iter().collect();
        for path in store.manifest_files()? {
            let conflict = path.parent() == Some(conflicts.as_path());
            if !conflict && path.parent() != Some(store.manifests_dir().as_path()) {
                continue; // generations/ belong to the reference implementation's filesystem layer
            }
            let head = match heads.at(&path) {
                Ok(Some(head)) => head,
                // Removed since the manifests were listed (an `rm` at the same moment).
                Ok(None) => continue,
                Err(e) => {
                    bad += 1;
                    io.error(e);
                    continue;
                }
            };
            if !self.agent.keeps(&head.session) {
                continue;
            }
            let kept = match conflict {
                true => Vec::new(),
                false => kept_by_id.remove(&head.session.id).unwrap_or_default(),
            };
            // A name that says no time (Claude Code's, a file folded by path): the lines do.
            let started = match started(&head.session) {
                Some(started) => Some(started),
                None => match store.manifest_at(&path).and_then(|manifest| {
                    let start = |manifest| crate::history::ends::folded_start(&store, manifest);
                    manifest.as_ref().map(start).transpose()
                }) {
                    Ok(Some(at)) => at.map(|at| format!("{}Z", &at.rfc3339()[..19])),
                    // Removed since its head was read.
                    Ok(None) => continue,
                    Err(e) => {
                        bad += 1;
                        io.error(format_args!("session {}: {e}", head.session.id));
                        None
                    }
                },
            };
            let entry = Entry {
                id: &head.session.id,
                title: head.session.title.as_deref(),
                started,
                agent: named_by(&head.session).map_or("file", Agent::id),
                cwd: head.session.cwd.as_deref(),
                archived: head.session.archived,
                source_bytes: head.source.bytes,
                stored_bytes: head.stored_bytes,
                conflict,
                generations: kept.len(),
                rollout_path: &head.session.rollout_path,
            };
            if self.json {
                emit(
                    io.out,
                    serde_json::to_string(&entry).expect("entries serialize"),
                )?;
            } else {
                let state = if conflict {
                    "conflict"
                } else if entry.archived {
                    "archived"
                } else {
                    "active"
                };
                let marker = crate::cli::human::generations(kept.len());
                let started = minute(entry.started.as_deref());
                let cwd = entry
                    .cwd
                    .map_or("-".into(), |cwd| tail(&path_for_people(cwd.as_ref())));
                emit(
                    io.out,
                    format_args!(
                        "{:<36}  {started:<MINUTE$}  {:<AGENT$}  {state:<8}  {:>10}  {:>10}  {cwd:<CWD$}  {}{marker}",
                        entry.id,
                        entry.agent,
                        bytes(entry.source_bytes),
                        bytes(entry.stored_bytes),
                        entry.title.unwrap_or("")
                    ),
                )?;
            }
            if self.generations {
                for generation in &kept {
                    bad += list_generation(io, &store, entry.id, generation, self.json)?;
                }
            }
        }
        // A cache: a store this user cannot write to is listed all the same, only not faster.
        let _ = heads.save();
        crate::commands::mount::note_mounts(io, &store);
        Ok(if bad == 0 {
            Status::Success
        } else {
            Status::Corrupt
        })
    }
}

/// The width of the cwd column.
const CWD: usize = 24;

/// The width of the agent column: its longest name (`claude`; `file` for a file folded by path).
const AGENT: usize = "claude".len();

/// `text` cut to its last [`CWD`] characters, `…` marking the cut: a project's folder is its last
/// components.
fn tail(text: &str) -> String {
    let n = text.chars().count();
    match n > CWD {
        true => std::iter::once('…')
            .chain(text.chars().skip(n - CWD + 1))
            .collect(),
        false => text.to_string(),
    }
}

/// One line for a generation; returns 1 if its manifest cannot be read (said), else 0.
fn list_generation(
    io: &mut Io<'_>,
    store: &Store,
    id: &str,
    generation: &Generation,
    json: bool,
) -> Result<u32> {
    let manifest = match store.load_manifest_at(&generation.path) {
        Ok(manifest) => manifest,
        Err(e) => {
            io.error(e);
            return Ok(1);
        }
    };
    let kept = Kept {
        id,
        generation: generation.number,
        kept_at: generation.kept.as_ref().map(|(at, _)| at.as_str()),
        reason: generation.kept.as_ref().map(|(_, reason)| *reason),
        source_bytes: manifest.source.bytes,
        path: generation
            .path
            .strip_prefix(store.root())
            .unwrap_or(&generation.path)
            .display()
            .to_string(),
    };
    if json {
        emit(
            io.out,
            serde_json::to_string(&kept).expect("entries serialize"),
        )?;
    } else {
        emit(
            io.out,
            format_args!(
                "  {}@{:<4} {:>10}  {}",
                id,
                kept.generation,
                bytes(kept.source_bytes),
                generation.describe(),
            ),
        )?;
    }
    Ok(0)
}
