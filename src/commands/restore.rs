//! `ctxfold restore` (alias `materialize`): a folded session back on disk, verified.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::reconstruct::restore_file;
use crate::store::{generations, restore_temp};

/// Restore a folded session to disk, byte for byte and verified (alias: materialize)
///
/// The session is written to a temp file beside the target (.<name>.restore-XXXXXX.tmp), its
/// sha256 and size are checked against the manifest, it is fsynced and only then renamed into
/// place; on any mismatch the target is untouched, the temp file is removed and the exit status is
/// 4. A restore that is killed leaves its temp file; the next restore of the same target removes
/// it (only one that no running restore holds: each locks its own) and says so, and ctxfold fsck
/// lists those under the agents' session folders. The default target is
/// the manifest's rollout_path, so a removed rollout comes back where its agent looks for it.
/// `materialize` is a verified restore, not transparent access to a folded session.
///
/// ID@N (or --generation N) restores an earlier version of the session: one that a later fold
/// replaced and kept as a generation (ID@1 is the newest, ID@0 the current version).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-restore", version, visible_alias = "materialize", after_long_help = crate::cli::EXIT_STATUS)]
pub struct RestoreArgs {
    /// The folded session's id; ID@N restores its generation N (as --generation N)
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Restore generation N of the session, a version a later fold replaced (1 is the newest;
    /// `ctxfold ls --generations` lists them)
    #[arg(long, value_name = "N")]
    pub generation: Option<usize>,
    /// Where to write it [default: the manifest's rollout_path]
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
        let target = self
            .to
            .unwrap_or_else(|| PathBuf::from(&manifest.session.rollout_path));
        for leftover in restore_temp::sweep(&target)? {
            io.note(format_args!(
                "removed {}, left by an interrupted restore",
                leftover.display()
            ));
        }
        restore_file(&store, &manifest, &target, self.overwrite)
            .map_err(|e| e.context(format_args!("restore {}", self.session)))?;
        emit(io.out, target.display())?;
        Ok(Status::Success)
    }
}
