//! The store lock: `<store>/locks/objects.lock`, an flock shared with the reference implementation.
//!
//! Writers (fold, split --write, write-manifest, sync) hold it shared, so any number of them work
//! at once; gc holds it exclusive, so it never deletes while a writer is between writing an object
//! and committing the manifest that names it. The reference implementation takes it exclusive and
//! non-blocking for its folds, so the two never interleave on one store.
//!
//! Files that several writers change take a lock of their own beside it ([`Store::lock_file`]),
//! held only for the change: the seed catalog for an append, a session's manifest from reading
//! the one a commit replaces to the rename (`locks/manifests.lock`).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use rustix::fs::{FlockOperation, flock};

use super::Store;
use crate::error::{Error, IoContext, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Shared,
    Exclusive,
}

/// Held until dropped (closing the file releases the flock).
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl Store {
    /// Take the store lock, waiting for it. `on_wait` is called once if someone else holds it.
    pub fn lock(&self, mode: Mode, on_wait: impl FnOnce()) -> Result<StoreLock> {
        if let Some(lock) = self.try_lock(mode)? {
            return Ok(lock);
        }
        on_wait();
        let (file, path) = self.open_lock_file()?;
        let op = match mode {
            Mode::Shared => FlockOperation::LockShared,
            Mode::Exclusive => FlockOperation::LockExclusive,
        };
        flock(&file, op).map_err(|e| Error::io("lock", &path, e.into()))?;
        Ok(StoreLock { _file: file })
    }

    /// Take the store lock only if it is free right now.
    pub fn try_lock(&self, mode: Mode) -> Result<Option<StoreLock>> {
        let (file, path) = self.open_lock_file()?;
        let op = match mode {
            Mode::Shared => FlockOperation::NonBlockingLockShared,
            Mode::Exclusive => FlockOperation::NonBlockingLockExclusive,
        };
        match flock(&file, op) {
            Ok(()) => Ok(Some(StoreLock { _file: file })),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(Error::io("lock", &path, e.into())),
        }
    }

    /// Take `<store>/locks/<name>.lock` exclusive, waiting for it: the lock of files that several
    /// writers change (the seed catalog, manifests replaced).
    pub fn lock_file(&self, name: &str) -> Result<StoreLock> {
        let (file, path) = self.open_lock(name)?;
        flock(&file, FlockOperation::LockExclusive)
            .map_err(|e| Error::io("lock", &path, e.into()))?;
        Ok(StoreLock { _file: file })
    }

    fn open_lock_file(&self) -> Result<(File, PathBuf)> {
        self.open_lock("objects")
    }

    fn open_lock(&self, name: &str) -> Result<(File, PathBuf)> {
        let path = self.locks_dir().join(format!("{name}.lock"));
        crate::files::create_private_dir(&self.locks_dir())?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .with_path("open lock", &path)?;
        Ok((file, path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_locks_coexist_and_exclude_an_exclusive_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path()).unwrap();
        let a = store
            .lock(Mode::Shared, || panic!("free lock waited"))
            .unwrap();
        let b = store.try_lock(Mode::Shared).unwrap();
        assert!(b.is_some());
        assert!(store.try_lock(Mode::Exclusive).unwrap().is_none());
        drop((a, b));
        assert!(store.try_lock(Mode::Exclusive).unwrap().is_some());
    }
}
