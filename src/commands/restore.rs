//! `ctxfold restore` (alias `materialize`): a folded session back on disk, verified.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::reconstruct::restore_file;

/// Restore a folded session to disk, byte for byte and verified (alias: materialize)
///
/// The session is written to a temp file beside the target, its sha256 and size are checked
/// against the manifest, it is fsynced and only then renamed into place; on any mismatch the
/// target is untouched, the temp file is removed and the exit status is 1. The default target is
/// the manifest's rollout_path, so a removed rollout comes back where its agent looks for it.
/// `materialize` is a verified restore, not transparent access to a folded session.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-restore", version, visible_alias = "materialize", after_long_help = crate::cli::EXIT_STATUS)]
pub struct RestoreArgs {
    /// The folded session's id
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub session: String,
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
        let manifest = store.load_manifest(&self.session)?;
        let target = self
            .to
            .unwrap_or_else(|| PathBuf::from(&manifest.session.rollout_path));
        restore_file(&store, &manifest, &target, self.overwrite)
            .map_err(|e| e.context(format_args!("restore {}", self.session)))?;
        emit(io.out, target.display())?;
        Ok(Status::Success)
    }
}
