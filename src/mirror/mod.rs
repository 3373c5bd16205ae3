//! The store mirrored into git: a bare repository (`<store>/mirror.git` by default) whose branch
//! `refs/heads/ctxfold` holds the store's files as they are, one commit per change, and the
//! sync that merges another machine's branch back into the store.
//!
//! gix writes the objects, commits and refs (`tree`: the store as a git tree, incrementally);
//! the real `git` binary talks to remotes (`git`), so credentials, ssh config and
//! `GIT_SSH_COMMAND` behave as users expect; `merge` brings a fetched tree into the store,
//! verifying every byte before anything changes; `sync` ties them together.
//! This module never reads session contents: that is the engine's job.

pub mod cut;
pub mod git;
pub mod lock;
pub mod manifests;
pub mod merge;
pub mod partial;
pub mod private;
pub mod seal;
pub mod sync;
pub mod tree;
pub mod verify;

use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::{FullName, Target};

use crate::error::{Error, IoContext, Result};
use crate::store::Store;
use crate::store::lock::Mode;

/// The branch the store lives on, here and on every remote.
pub const BRANCH: &str = "refs/heads/ctxfold";

/// Who mirror commits are by: a fixed identity, so commits say nothing about the machine or user.
const NAME: &str = "ctxfold";
const EMAIL: &str = "ctxfold@localhost";

/// The default mirror repository of a store.
pub fn default_dir(store: &Store) -> PathBuf {
    store.root().join("mirror.git")
}

/// An open mirror repository.
pub struct Mirror {
    repo: gix::Repository,
}

/// Turn any gix error into ours, on one line, saying what was being done.
pub(crate) trait GitContext<T> {
    fn git(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::error::Error> GitContext<T> for std::result::Result<T, E> {
    fn git(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| {
            // gix's message names the file; the system's reason (a full disk) is a source of it.
            let mut text = e.to_string().replace('\n', " ");
            let mut kind = std::io::ErrorKind::Other;
            let mut source = e.source();
            while let Some(cause) = source {
                if let Some(io) = cause.downcast_ref::<std::io::Error>() {
                    kind = io.kind();
                    let reason = crate::error::one_line(io);
                    if !text.contains(&reason) {
                        text = format!("{text}: {reason}");
                    }
                    break;
                }
                source = cause.source();
            }
            Error::system(what(), std::io::Error::new(kind, text))
        })
    }
}

/// A mirror being made is put in place within moments (a git init's few files): one begun this
/// long ago was abandoned.
const ABANDONED: std::time::Duration = std::time::Duration::from_secs(60);

/// Remove the folders in `parent` named `prefix…` that killed creations of a mirror left (begun
/// [`ABANDONED`] ago or more). Tidying only: one that will not go stays, without a word.
fn remove_abandoned(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let old = (entry.metadata().ok())
            .filter(|m| m.is_dir())
            .and_then(|m| m.modified().ok())
            .and_then(|at| at.elapsed().ok())
            .is_some_and(|age| age >= ABANDONED);
        if old && entry.file_name().to_string_lossy().starts_with(prefix) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether `dir`, a folder without a HEAD, holds only what a new bare repository is made of and
/// no object or ref in it: what a repository's creation that failed part-way leaves (its hooks,
/// its config), nothing anyone could lose. A folder holding anything else is not ours to clear.
fn holds_nothing(dir: &Path) -> Result<bool> {
    const LAYOUT: [&str; 8] = [
        "hooks",
        "info",
        "description",
        "config",
        "objects",
        "refs",
        "branches",
        "logs",
    ];
    for entry in std::fs::read_dir(dir).with_path("list", dir)? {
        let name = entry.with_path("list", dir)?.file_name();
        if !LAYOUT.iter().any(|known| name == *known) {
            return Ok(false);
        }
    }
    for kept in ["objects", "refs"] {
        let walk = ignore::WalkBuilder::new(dir.join(kept))
            .standard_filters(false)
            .build();
        for entry in walk {
            match entry {
                Ok(entry) if entry.file_type().is_some_and(|t| !t.is_dir()) => return Ok(false),
                Ok(_) => {}
                Err(e)
                    if e.io_error()
                        .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound) => {}
                Err(e) => {
                    return Err(Error::system(
                        format!("list {}", dir.display()),
                        std::io::Error::other(e.to_string()),
                    ));
                }
            }
        }
    }
    Ok(true)
}

impl Mirror {
    /// Open the mirror repository at `dir`, creating it (bare, HEAD on the ctxfold branch, private)
    /// when missing. One made before mirrors were private is made private.
    ///
    /// A new mirror is made whole in a folder beside `dir` and renamed into place: one that could
    /// not be finished (a full disk, a kill) is never found half-made at `dir`, and of two made at
    /// once the first in place is the one both use. What an earlier ctxfold's failed creation left
    /// there (a folder with no HEAD, no object and no ref) is cleared first; the folders beside it
    /// that killed creations left are removed by the next open once a minute old.
    pub fn open_or_init(dir: &Path) -> Result<Self> {
        let parent = crate::files::folder_of(dir);
        let name = dir
            .file_name()
            .map_or("mirror".into(), |n| n.to_string_lossy());
        let prefix = format!(".{name}-new-");
        remove_abandoned(parent, &prefix);
        if dir.join("HEAD").is_file() {
            let mirror = Self::open(dir)?;
            if private::is_private(&mirror.repo) {
                return Ok(mirror);
            }
            private::make_private(&mirror.repo)?;
            return Self::open(dir);
        }
        if dir.is_dir() && holds_nothing(dir)? {
            match std::fs::remove_dir_all(dir) {
                // Another ctxfold cleared it first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                cleared => cleared.with_path("remove the unfinished mirror", dir)?,
            }
        }
        crate::files::create_private_dir(parent)?;
        let building = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(parent)
            .with_path("create a folder in", parent)?;
        Self::init(building.path(), dir)?;
        match std::fs::rename(building.path(), dir) {
            Ok(()) => {
                // Renamed away: nothing is left for the guard to remove.
                let _ = building.keep();
                crate::files::atomic::fsync_dir(parent).with_path("fsync directory", parent)?;
            }
            // Another ctxfold put its own in place meanwhile: that one is opened, ours removed.
            Err(_) if dir.join("HEAD").is_file() => {}
            Err(e) => return Err(e).with_path("put in place the mirror", dir),
        }
        Self::open(dir)
    }

    /// Make a new mirror at `dir`, an empty folder, to be put in place at `at`.
    fn init(dir: &Path, at: &Path) -> Result<()> {
        let repo = gix::init_bare(dir).git(|| format!("create git repository {}", at.display()))?;
        private::make_private(&repo)?;
        // Reopened: the new setting applies to what this handle writes.
        let mirror = Self::open(dir)?;
        // HEAD names our branch, so a plain `git clone` of the mirror checks it out.
        let head = RefEdit {
            change: Change::Update {
                log: LogChange::default(),
                expected: PreviousValue::Any,
                new: Target::Symbolic(full_name(BRANCH)),
            },
            name: full_name("HEAD"),
            deref: false,
        };
        mirror
            .repo
            .edit_references_as(Some(head), None)
            .git(|| format!("set HEAD in {}", at.display()))?;
        Ok(())
    }

    /// Open an existing mirror repository.
    pub fn open(dir: &Path) -> Result<Self> {
        let repo = gix::open(dir).git(|| format!("open git repository {}", dir.display()))?;
        Ok(Self { repo })
    }

    pub fn git_dir(&self) -> &Path {
        self.repo.git_dir()
    }

    pub(crate) fn repo(&self) -> &gix::Repository {
        &self.repo
    }

    /// Where `name` (a full ref name) points, if it exists.
    pub fn resolve(&self, name: &str) -> Result<Option<ObjectId>> {
        let Some(mut reference) = self
            .repo
            .try_find_reference(name)
            .git(|| format!("read {name}"))?
        else {
            return Ok(None);
        };
        Ok(Some(
            reference
                .peel_to_id()
                .git(|| format!("resolve {name}"))?
                .detach(),
        ))
    }

    /// The commit the ctxfold branch points at.
    pub fn head(&self) -> Result<Option<ObjectId>> {
        self.resolve(BRANCH)
    }

    /// The tree of a commit.
    pub fn tree_of(&self, commit: ObjectId) -> Result<ObjectId> {
        let commit = self
            .repo
            .find_commit(commit)
            .git(|| format!("read commit {commit}"))?;
        Ok(commit
            .tree_id()
            .git(|| "read a commit's tree".into())?
            .detach())
    }

    /// Commit the store's current state on the branch unless the branch already holds it, and
    /// return the branch's commit (`None`: an empty store that was never mirrored).
    pub fn record(&self, store: &Store) -> Result<Option<ObjectId>> {
        // Shared, as writers take it: gc must not delete files while they are being read.
        let _lock = store.lock(Mode::Shared, || {})?;
        let head = self.head()?;
        let previous = head.map(|c| self.tree_of(c)).transpose()?;
        let tree = self.write_store_tree(store, previous)?;
        if previous == Some(tree) || (head.is_none() && tree == ObjectId::empty_tree(tree.kind())) {
            return Ok(head);
        }
        Ok(Some(self.commit(
            tree,
            head.as_slice(),
            "ctxfold mirror\n",
        )?))
    }

    /// Write a commit of `tree` with `parents` and move the branch to it, provided the branch
    /// still points at the first parent (or does not exist when there is none): a concurrent
    /// mirror makes this fail rather than lose a commit.
    pub fn commit(&self, tree: ObjectId, parents: &[ObjectId], message: &str) -> Result<ObjectId> {
        let time = format!("{} +0000", commit_time());
        let signature = gix::actor::SignatureRef {
            name: NAME.into(),
            email: EMAIL.into(),
            time: &time,
        };
        let id = self
            .repo
            .commit_as(
                signature,
                signature,
                BRANCH,
                message,
                tree,
                parents.iter().copied(),
            )
            .git(|| format!("commit to {BRANCH} in {}", self.git_dir().display()))?;
        Ok(id.detach())
    }

    /// Write a commit of `tree` with `parents` as [`Mirror::commit`] does, but move no ref: a commit
    /// whose place the caller keeps itself (an encrypted remote's, see `seal`).
    pub(crate) fn write_commit(
        &self,
        tree: ObjectId,
        parents: &[ObjectId],
        message: &str,
    ) -> Result<ObjectId> {
        let signature = gix::actor::Signature {
            name: NAME.into(),
            email: EMAIL.into(),
            time: gix::date::Time {
                seconds: commit_time() as i64,
                offset: 0,
            },
        };
        let commit = gix::objs::Commit {
            tree,
            parents: parents.iter().copied().collect(),
            author: signature.clone(),
            committer: signature,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        Ok(self
            .repo
            .write_object(&commit)
            .git(|| format!("write a commit in {}", self.git_dir().display()))?
            .detach())
    }

    /// Move the branch to `to` if it still points at `from` (compare and swap).
    pub fn fast_forward(&self, from: Option<ObjectId>, to: ObjectId) -> Result<()> {
        let expected = match from {
            Some(id) => PreviousValue::MustExistAndMatch(Target::Object(id)),
            None => PreviousValue::MustNotExist,
        };
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange::default(),
                expected,
                new: Target::Object(to),
            },
            name: full_name(BRANCH),
            deref: false,
        };
        self.repo
            .edit_references_as(Some(edit), None)
            .git(|| format!("move {BRANCH} to {to}"))?;
        Ok(())
    }

    /// Move the branch back from `from` to `to` (`None`: remove it) if it still points at `from`:
    /// a commit this process made and will not send is undone, so that what it held does not
    /// stay in the history every later push sends.
    pub fn rewind(&self, from: ObjectId, to: Option<ObjectId>) -> Result<()> {
        if let Some(to) = to {
            return self.fast_forward(Some(from), to);
        }
        let edit = RefEdit {
            change: Change::Delete {
                expected: PreviousValue::MustExistAndMatch(Target::Object(from)),
                log: RefLog::AndReference,
            },
            name: full_name(BRANCH),
            deref: false,
        };
        self.repo
            .edit_references_as(Some(edit), None)
            .git(|| format!("remove {BRANCH} at {from}"))?;
        Ok(())
    }

    /// Whether `ancestor` is `descendant` or one of its ancestors.
    pub fn is_ancestor(&self, ancestor: ObjectId, descendant: ObjectId) -> Result<bool> {
        let commit = self
            .repo
            .find_commit(descendant)
            .git(|| format!("read commit {descendant}"))?;
        for info in commit
            .ancestors()
            .all()
            .git(|| format!("walk the history of {descendant}"))?
        {
            if info.git(|| format!("walk the history of {descendant}"))?.id == ancestor {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Commit times are `$SOURCE_DATE_EPOCH` when set (reproducible commits, as build tools do),
/// else the current time, always in UTC. With the fixed identity, the same store state on the
/// same parents at the same time is the same commit on any machine.
fn commit_time() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
}

fn full_name(name: &str) -> FullName {
    name.try_into().expect("a valid ref name")
}
