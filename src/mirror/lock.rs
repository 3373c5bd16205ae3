//! One sync at a time in a mirror repository, and none while a git that an earlier one started
//! still runs.
//!
//! A sync (and a clone) holds an flock on the mirror's folder for its whole run, and hands it on
//! to every git it starts: the lock's file stays open, without close-on-exec, in each child, and
//! an flock lasts until the last process holding its file closes it. A sync killed while its
//! `git fetch` or `git push` runs leaves that git running on its own, updating the mirror's refs
//! under git's own lock files (`refs/remotes/<remote>/ctxfold.lock`); the next sync waits for it
//! to end instead of racing it ("cannot lock ref … is at X but expected Y").
//!
//! A git that was itself killed leaves its lock files behind, which would fail every later git
//! in the mirror. Once the lock is held no git of ours runs there, so the next sync removes them.
//! The mirror is ctxfold's: a git run by hand in it while a sync starts is not provided for.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use crate::error::{Error, IoContext, Result};

/// Held until dropped, and by every git started meanwhile until it exits.
pub struct MirrorLock {
    _folder: File,
    /// The same open folder without close-on-exec: what children inherit.
    _inherited: OwnedFd,
}

/// What a command says while it waits for the mirror.
pub const WAITING: &str = "waiting for another sync (or a git it started) to finish…";

impl MirrorLock {
    /// Lock the mirror repository at `git_dir` (which must exist), waiting for the sync or the git
    /// that holds it; `on_wait` is called once if one does. Then remove what killed gits left.
    pub fn take(git_dir: &Path, on_wait: impl FnOnce()) -> Result<Self> {
        let folder = File::open(git_dir).with_path("open", git_dir)?;
        let lock = |op| flock(&folder, op).map_err(|e| Error::io("lock", git_dir, e.into()));
        match flock(&folder, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                on_wait();
                lock(FlockOperation::LockExclusive)?;
            }
            Err(e) => return Err(Error::io("lock", git_dir, e.into())),
        }
        // dup(2) clears close-on-exec on the copy.
        let inherited =
            rustix::io::dup(&folder).map_err(|e| Error::io("lock", git_dir, e.into()))?;
        for stale in stale_git_locks(git_dir) {
            crate::files::remove_if_present(&stale)?;
        }
        Ok(Self {
            _folder: folder,
            _inherited: inherited,
        })
    }
}

/// The lock files git takes in a repository: on refs (loose, packed, HEAD), its config, its
/// shallow file and its index.
fn stale_git_locks(git_dir: &Path) -> Vec<PathBuf> {
    let top = ["HEAD", "packed-refs", "config", "shallow", "index"]
        .iter()
        .map(|name| git_dir.join(format!("{name}.lock")));
    let refs = ignore::WalkBuilder::new(git_dir.join("refs"))
        .standard_filters(false)
        .build()
        .flatten()
        .map(|entry| entry.into_path())
        .filter(|path| path.extension().is_some_and(|e| e == "lock"));
    let mut found: Vec<PathBuf> = top.chain(refs).filter(|path| path.is_file()).collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::process::Command;

    #[test]
    fn a_child_keeps_the_lock_after_its_parent_lets_go_and_stale_git_locks_go() {
        let dir = tempfile::tempdir().unwrap();
        let git_dir = dir.path();
        fs::create_dir_all(git_dir.join("refs/remotes/origin")).unwrap();
        let stale = git_dir.join("refs/remotes/origin/ctxfold.lock");
        fs::write(&stale, b"").unwrap();
        fs::write(git_dir.join("packed-refs.lock"), b"").unwrap();
        fs::write(git_dir.join("refs/remotes/origin/ctxfold"), b"x").unwrap();

        let held = MirrorLock::take(git_dir, || panic!("nobody holds it")).unwrap();
        assert!(!stale.exists() && !git_dir.join("packed-refs.lock").exists());
        assert!(git_dir.join("refs/remotes/origin/ctxfold").exists());
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        drop(held);
        // The child holds the folder's open file, and with it the lock.
        let folder = File::open(git_dir).unwrap();
        assert_eq!(
            flock(&folder, FlockOperation::NonBlockingLockExclusive),
            Err(rustix::io::Errno::WOULDBLOCK)
        );
        child.kill().unwrap();
        child.wait().unwrap();
        let mut waited = false;
        let again = MirrorLock::take(git_dir, || waited = true).unwrap();
        assert!(!waited);
        drop(again);
    }
}
