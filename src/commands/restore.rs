//! `ctxfold restore` (alias `materialize`): folded sessions back on disk, verified.

use std::path::PathBuf;

use serde::Serialize;

use crate::cli::human::{count, path};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::{Cause, Error, Result, STDOUT};
use crate::restore::{Outcome, Request, To, manifest_of, restore_all};
use crate::store::Store;
use crate::store::reconstruct::{Restored, write_session};

/// Restore folded sessions to disk, byte for byte and verified (alias: materialize)
///
/// SESSION is a session's id, or any unique prefix of it (as git takes a commit's: a prefix that
/// several ids share is refused, with the ids it matches, status 2), or the path of a session file
/// (anything with a `/`): the session is the one that file holds, its id read as fold reads it, or,
/// when the file is gone, the id in its name. ID@N (or --generation N) restores an earlier version
/// of the session: one that a later fold replaced and kept as a generation (ID@1 is the newest,
/// ID@0 the current version). Several SESSIONs, or --all (every folded session; one removed by a
/// `ctxfold rm` at the same moment is not one), are restored at once, on every core; each is
/// reported on its own, a failure does not stop the others, and the exit status is the worst of
/// them.
///
/// Each session is written to a temp file beside the target, its sha256 and size are checked
/// against the manifest, it is made durable (fsynced; several are written and made durable
/// together, up to 256 at a time, each block of the store they need decoded once, and one sync of
/// their filesystem) and only then renamed into place; on any mismatch
/// the target is untouched and the temp file is removed. A target that already holds the session,
/// byte for byte, is left as it is: the session is in place, which is a success. A target that
/// holds anything else is refused (status 3) unless --overwrite. `materialize` is a verified restore, not
/// transparent access to a folded session.
///
/// Without --to, each session goes back where its agent looks for it on this machine. That place is
/// computed, never taken from the manifest (which may come from another machine, or from a git
/// remote): the manifest's rollout_path must end exactly as the agent places a session, with the
/// session's own id in the file name and no `.`, `..` or empty component anywhere, and only that
/// ending is kept, under this machine's home of the agent ($CODEX_HOME, default ~/.codex:
/// sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, the folders the date of the name, or
/// archived_sessions/rollout-<time>-<id>.jsonl; $PI_CODING_AGENT_DIR, default ~/.pi/agent:
/// sessions/--<cwd>--/<time>_<id>.jsonl; $CLAUDE_CONFIG_DIR, default ~/.claude:
/// projects/<project>/<id>.jsonl, or a subagent's
/// projects/<project>/<session id>/subagents/agent-<id>.jsonl). The home must exist (run the agent once, or set its
/// variable); folders are created only inside its session tree. Any other session (a file folded
/// by path, a rollout_path of another shape) is refused: name the target with --to.
///
/// --to FILE writes the one session named to FILE. --to DIR/ (ending with `/`, or a folder that
/// exists) puts each session inside DIR (created private when missing) under its own file name: its
/// rollout_path's, when that holds the session's id, else <id>.jsonl. --to - writes the one session
/// named to stdout; its bytes are verified as they stream, so a failed check (status 4) comes after
/// some bytes were written: trust them only when the exit status is 0.
///
/// Prints the path of each session restored or found in place, one per line (full paths: this is
/// data for scripts); with several sessions, a summary on stderr. Failures are reported on stderr
/// as `ctxfold restore: error: restore SESSION: WHY`.
///
/// --json prints JSON Lines instead, one per SESSION, then a summary:
/// `{"type":"session","name":NAME,"session":ID|null,"path":PATH|null,"outcome":"restored"|"in_place"|"failed","bytes":N,"error":TEXT|null}`
/// (`name` as given on the command line; `bytes` the session's size) and
/// `{"type":"summary","sessions":N,"restored":N,"in_place":N,"failed":N,"not_started":N,"restored_bytes":N}`.
///
/// A full disk stops the run: the sessions being written when it filled are written again one at
/// a time, as many as there is room for; the first session it failed is reported as any failure,
/// the others are counted, no later session is started, and a last line says how many when there
/// are more (status 5); what was restored stands.
///
/// Each session is written into a file with no name beside its target, named
/// (.<name>.restore-XXXXXX.tmp) only in the instant before it is renamed over the target: a restore
/// that is killed leaves nothing, or, killed in that instant, the whole session in that temp file.
/// The next restore of the same target removes it (only one that no running restore holds: each
/// locks its own) and says so, and ctxfold fsck lists those under the agents' session folders.
#[derive(Debug, clap::Parser)]
// The alias is hidden, as `remote rm` is, and named in the summary: completion offers one word per
// command, and a visible alias would be offered in the command's place.
#[command(name = "ctxfold-restore", version, alias = "materialize", after_long_help = crate::cli::EXIT_STATUS)]
pub struct RestoreArgs {
    /// Folded sessions: ids, unique prefixes of ids, ID@N, or session files' paths
    #[arg(
        value_name = "SESSION",
        required_unless_present = "all",
        add = crate::cli::complete::session_ids()
    )]
    pub sessions: Vec<String>,
    /// Restore every folded session
    #[arg(long, conflicts_with = "sessions")]
    pub all: bool,
    /// Restore generation N of the session, a version a later fold replaced (1 is the newest;
    /// `ctxfold ls --generations` lists them)
    #[arg(long, value_name = "N")]
    pub generation: Option<usize>,
    /// Where to write: a FILE, a folder DIR/ (each session under its own name), or - (stdout)
    /// [default: each session's place under this machine's agent home]
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub to: Option<PathBuf>,
    /// Replace an existing file that holds other bytes at the target
    #[arg(long)]
    pub overwrite: bool,
    /// JSON Lines: one object per session, then a summary
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A session's record under --json.
#[derive(Serialize)]
struct Record<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    session: Option<&'a str>,
    path: Option<String>,
    outcome: &'static str,
    bytes: u64,
    error: Option<String>,
}

/// The summary: under --json a record, else a note.
#[derive(Default, Serialize)]
struct Summary {
    #[serde(rename = "type")]
    kind: &'static str,
    sessions: u64,
    restored: u64,
    in_place: u64,
    failed: u64,
    /// Not started: the disk was full.
    not_started: u64,
    restored_bytes: u64,
    /// Failed for want of space on the disk.
    #[serde(skip)]
    out_of_space: u64,
}

impl Command for RestoreArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let requests: Vec<Request> = match self.all {
            true => store
                .session_ids()?
                .into_iter()
                .map(|name| Request {
                    name,
                    generation: None,
                })
                .collect(),
            false => self
                .sessions
                .iter()
                .map(|name| Request {
                    name: name.clone(),
                    generation: self.generation,
                })
                .collect(),
        };
        let one = !self.all && requests.len() == 1;
        if self.generation.is_some() && !one {
            return Err(Error::usage(
                "--generation takes one SESSION (name each of several as ID@N)",
            ));
        }
        if self.to.as_deref() == Some("-".as_ref()) {
            if !one || self.json {
                return Err(Error::usage(
                    "--to - writes one SESSION to stdout, without --json",
                ));
            }
            return to_stdout(&store, &requests[0], io);
        }
        let to = To::of(self.to.as_deref());
        if matches!(to, To::File(_)) && !one {
            return Err(Error::usage(
                "--to FILE takes one SESSION: for several, name a folder (--to DIR/)",
            ));
        }
        let progress = io.progress(
            requests.len() as u64,
            "{bar:30} {pos}/{len} sessions {elapsed}",
        );
        let done = || progress.inc(1);
        let outcomes = restore_all(&store, &requests, &to, self.overwrite, &done)?;
        progress.finish_and_clear();
        let mut status = Status::Success;
        let mut summary = Summary {
            kind: "summary",
            ..Summary::default()
        };
        for outcome in &outcomes {
            status = status.worst(self.report(io, outcome, &mut summary)?);
        }
        summary.not_started = (requests.len() - outcomes.len()) as u64;
        if self.json {
            emit(io.out, serde_json::to_string(&summary).expect("serializes"))?;
        } else if !one {
            let mut text = format!("restored {}", count(summary.restored, "session"));
            if summary.in_place > 0 {
                text.push_str(&format!(", {} already in place", summary.in_place));
            }
            if summary.failed > 0 {
                text.push_str(&format!(", {} failed", summary.failed));
            }
            io.note(text);
        }
        // Said when the one error said does not tell it all.
        if summary.out_of_space > 1 || (summary.out_of_space > 0 && summary.not_started > 0) {
            io.error(format_args!(
                "the disk is full: {} failed for want of space, {} not started; what was \
                 restored stands (make room, then restore again)",
                count(summary.out_of_space, "session"),
                count(summary.not_started, "session")
            ));
        }
        Ok(status)
    }
}

impl RestoreArgs {
    /// Report one session's outcome; returns the status it gives the run.
    fn report(&self, io: &mut Io<'_>, outcome: &Outcome, summary: &mut Summary) -> Result<Status> {
        for leftover in &outcome.swept {
            io.note(format_args!(
                "removed {}, left by an interrupted restore",
                path(leftover)
            ));
        }
        // Removed since --all listed the store (an `rm` at the same moment): none to restore.
        if self.all && matches!(&outcome.result, Err(e) if matches!(e.cause(), Cause::NotFound(_)))
        {
            return Ok(Status::Success);
        }
        summary.sessions += 1;
        let (word, status) = match &outcome.result {
            Ok(Restored::Written) => {
                summary.restored += 1;
                summary.restored_bytes += outcome.bytes;
                ("restored", Status::Success)
            }
            Ok(Restored::InPlace) => {
                summary.in_place += 1;
                ("in_place", Status::Success)
            }
            Err(e) => {
                summary.failed += 1;
                // A full disk is said once (the sessions it failed after the first are counted).
                if !(e.is_out_of_space() && summary.out_of_space > 0) {
                    io.error(format_args!("restore {}: {e}", outcome.name));
                }
                summary.out_of_space += u64::from(e.is_out_of_space());
                ("failed", e.status())
            }
        };
        let target = outcome.target.as_ref().filter(|_| outcome.result.is_ok());
        if self.json {
            let record = Record {
                kind: "session",
                name: &outcome.name,
                session: outcome.session.as_deref(),
                path: outcome.target.as_ref().map(|t| t.display().to_string()),
                outcome: word,
                bytes: outcome.bytes,
                error: outcome.result.as_ref().err().map(|e| e.to_string()),
            };
            emit(io.out, serde_json::to_string(&record).expect("serializes"))?;
        } else if let Some(target) = target {
            if outcome
                .result
                .as_ref()
                .is_ok_and(|r| *r == Restored::InPlace)
            {
                io.detail(format_args!("{}: already in place", outcome.name));
            }
            emit(io.out, target.display())?;
        }
        Ok(status)
    }
}

/// `--to -`: the one session named, streamed to stdout as it is verified.
fn to_stdout(store: &Store, request: &Request, io: &mut Io<'_>) -> Result<Status> {
    let restore = |io: &mut Io<'_>| {
        let manifest = manifest_of(store, request)?;
        write_session(store, &manifest, io.out).map_err(|e| e.on_target(STDOUT))
    };
    restore(io).map_err(|e| e.context(format_args!("restore {}", request.name)))?;
    Ok(Status::Success)
}
