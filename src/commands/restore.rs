//! `ctxfold restore` (alias `materialize`): a folded session back on disk, verified.

use std::path::PathBuf;

use crate::agents::Homes;
use crate::agents::place::default_target;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::reconstruct::restore_file;
use crate::store::{generations, restore_temp};

/// Restore a folded session to disk, byte for byte and verified (alias: materialize)
///
/// The session is written to a temp file beside the target, its sha256 and size are checked
/// against the manifest, it is fsynced and only then renamed into place; on any mismatch the
/// target is untouched, the temp file is removed and the exit status is 1. `materialize` is a
/// verified restore, not transparent access to a folded session.
///
/// Without --to, the session goes back where its agent looks for it on this machine. That place is
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
/// A restore that is killed leaves its temp file (.<name>.restore-XXXXXX.tmp beside the target);
/// the next restore of the same target removes it (only one that no running restore holds: each
/// locks its own) and says so, and ctxfold fsck lists those under the agents' session folders.
///
/// ID@N (or --generation N) restores an earlier version of the session: one that a later fold
/// replaced and kept as a generation (ID@1 is the newest, ID@0 the current version).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-restore", version, visible_alias = "materialize", after_long_help = crate::cli::EXIT_STATUS)]
pub struct RestoreArgs {
    /// The folded session's id; ID@N restores its generation N (as --generation N)
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub session: String,
    /// Restore generation N of the session, a version a later fold replaced (1 is the newest;
    /// `ctxfold ls --generations` lists them)
    #[arg(long, value_name = "N")]
    pub generation: Option<usize>,
    /// Where to write it [default: the session's place under this machine's agent home]
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath)]
    pub to: Option<PathBuf>,
    /// Replace an existing file at the target
    #[arg(long)]
    pub overwrite: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for RestoreArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let manifest = generations::resolve(&store, &self.session, self.generation)?;
        let restore = |io: &mut Io<'_>| {
            let target = match self.to {
                Some(to) => to,
                None => default_target(&manifest.session, &Homes::from_env()?)?,
            };
            for leftover in restore_temp::sweep(&target)? {
                io.note(format_args!(
                    "removed {}, left by an interrupted restore",
                    leftover.display()
                ));
            }
            restore_file(&store, &manifest, &target, self.overwrite).map(|()| target)
        };
        let target =
            restore(io).map_err(|e| e.context(format_args!("restore {}", self.session)))?;
        emit(io.out, target.display())?;
        Ok(Status::Success)
    }
}
