//! `ctxfold-mirror`: the store's current state committed into a git repository.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::error::Result;
use crate::mirror::lock::MirrorLock;
use crate::mirror::{self, Mirror};
use crate::store::Store;

/// Commit the store's current state to the ctxfold branch of a git repository, and print the commit id
///
/// The repository (`<store>/mirror.git` by default, bare, created when missing) gets a commit on
/// `refs/heads/ctxfold` whose tree holds the store's `manifests/` (subfolders included),
/// `objects/<2 hex>/`, the packs (`packs-ctxfold/`), the seed catalog (`seeds/catalog.jsonl`),
/// `context-fold/` and the zstd dictionary registrations `dictionaries/<sha256>`
/// (the dictionaries themselves are objects), each file a blob of its bytes as they are (objects
/// stay zstd). `dictionaries/CURRENT`, the dictionary this machine writes new objects with, is not
/// mirrored. Mirroring is incremental: an object file already in the previous commit's tree is not
/// read again (objects are immutable and named by their content); manifests and the seed catalog
/// are re-hashed and written only when they changed. When nothing changed no commit is made and the
/// current one is printed; an empty store that was never mirrored prints nothing.
///
/// A file larger than the repository's git config `ctxfold.maxFileSize` (bytes, or with a k, m or g
/// suffix; 50 MiB by default, as git hosts refuse large files: GitHub any over 100 MB) is committed
/// cut into parts: a folder of the file's own name holding `part-000000`, `part-000001`, … of at
/// most that size each, which sync and clone join back (one pack of a whole store, after
/// `gc --aggressive`, is such a file). Set it before the first sync: what was pushed stays in the
/// remote's history as it was.
///
/// Commits are by `ctxfold <ctxfold@localhost>` whoever runs the command, at the current time in UTC,
/// or at $SOURCE_DATE_EPOCH when it is set (reproducible commits). The branch moves only if it
/// still points where it did when the mirror began, so two concurrent mirrors never lose a commit;
/// mirror waits for a sync (or another mirror) that holds the repository, as sync does.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-mirror", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct MirrorArgs {
    #[command(flatten)]
    pub git: GitArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `--git DIR`: the mirror repository, shared by mirror, remote, sync and clone.
#[derive(Debug, Clone, clap::Args)]
pub struct GitArgs {
    /// The mirror repository [default: <store>/mirror.git]
    #[arg(long = "git", global = true, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
}

impl GitArgs {
    /// The mirror repository, a relative --git taken from the current folder once, as the store's
    /// path is (see `Store::at`).
    pub fn dir(&self, store: &Store) -> PathBuf {
        match &self.dir {
            Some(dir) => crate::files::absolute(dir).into_owned(),
            None => mirror::default_dir(store),
        }
    }
}

impl Command for MirrorArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let dir = self.git.dir(&store);
        let mirror = Mirror::open_or_init(&dir)?;
        // Held as a sync holds it: one at a time, and what a killed one left (a ref's lock file,
        // which fails every commit after it) is cleared first.
        let _held = MirrorLock::take(&dir, || io.note(mirror::lock::WAITING))?;
        if let Some(commit) = mirror.record(&store)? {
            emit(io.out, commit)?;
        }
        Ok(Status::Success)
    }
}
