//! Writing a file so that it is either wholly there or not at all: a private temp file in the
//! target's filesystem, fsynced, renamed into place, and the directory fsynced.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use super::writeback::Writeback;
use crate::error::{Error, IoContext, Result};

/// A temp file that disappears unless [`Pending::commit`] puts it in place. What is written to
/// it through [`Write`] or [`Pending::write_all_at`] starts on its way to the disk as it comes
/// (see `writeback`), for the barrier that makes it durable.
pub struct Pending {
    file: NamedTempFile,
    writeback: Writeback,
}

/// Whether a commit replaced what was at the target or found it taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Committed {
    Written,
    /// `overwrite` was false and the target already existed: the temp file was dropped.
    AlreadyThere,
}

impl Pending {
    /// A new temp file `<dir>/<prefix>XXXXXX.tmp`, mode 0600.
    pub fn new_in(dir: &Path, prefix: &str) -> Result<Self> {
        let file = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(".tmp")
            .tempfile_in(dir)
            .with_path("create a temp file in", dir)?;
        Ok(Self {
            file,
            writeback: Writeback::default(),
        })
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn file(&mut self) -> &mut File {
        self.file.as_file_mut()
    }

    /// The file, to read back.
    pub fn as_file(&self) -> &File {
        self.file.as_file()
    }

    /// Write `bytes` at `offset`, through a shared reference: several threads write one restore's
    /// file, each its own ranges.
    pub fn write_all_at(&self, bytes: &[u8], offset: u64) -> std::io::Result<()> {
        self.as_file().write_all_at(bytes, offset)?;
        self.writeback.wrote(self.as_file(), bytes.len() as u64);
        Ok(())
    }

    /// Rename to `target` unless something is there already, without any fsync: for objects,
    /// which are made durable together by one `syncfs` before anything names them.
    pub fn commit_unsynced(self, target: &Path) -> Result<Committed> {
        match self.file.persist_noclobber(target) {
            Ok(_) => Ok(Committed::Written),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Ok(Committed::AlreadyThere)
            }
            Err(e) => Err(Error::io("rename into", target, e.error)),
        }
    }

    /// Rename to `target`, replacing whatever is there, without any fsync: for a group of files
    /// made durable together before their renames, the folder fsynced after.
    pub fn replace_unsynced(self, target: &Path) -> Result<()> {
        self.file
            .persist(target)
            .map(|_| ())
            .map_err(|e| Error::io("rename into", target, e.error))
    }

    /// Rename to `target` (never replacing an existing file unless `overwrite`) without any
    /// fsync: for a file made durable already, its folder fsynced after.
    pub fn place_unsynced(self, target: &Path, overwrite: bool) -> Result<Committed> {
        match overwrite {
            true => self.replace_unsynced(target).map(|()| Committed::Written),
            false => self.commit_unsynced(target),
        }
    }

    /// fsync, then rename to `target` (never replacing an existing file unless `overwrite`),
    /// then fsync the target's directory so the rename itself is durable.
    pub fn commit(self, target: &Path, overwrite: bool) -> Result<Committed> {
        self.file
            .as_file()
            .sync_all()
            .with_path("fsync", self.file.path())?;
        let outcome = self.place_unsynced(target, overwrite)?;
        if outcome == Committed::Written {
            sync_parent(target)?;
        }
        Ok(outcome)
    }
}

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.writeback.wrote(self.file.as_file(), n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// fsync the directory holding `path`, making a rename or unlink in it durable.
pub fn sync_parent(path: &Path) -> Result<()> {
    sync_dir(&parent_dir(path))
}

/// fsync a directory, making the renames and unlinks in it durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    fsync_dir(dir).with_path("fsync directory", dir)
}

/// [`sync_dir`] with the I/O error as it came, for a caller that reports it more than once.
pub fn fsync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Write `bytes` to `target` atomically.
pub fn write_file(
    tmp_dir: &Path,
    prefix: &str,
    target: &Path,
    bytes: &[u8],
    overwrite: bool,
) -> Result<Committed> {
    let mut pending = Pending::new_in(tmp_dir, prefix)?;
    pending
        .write_all(bytes)
        .with_path("write", pending.path())?;
    pending.commit(target, overwrite)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn commit_places_a_private_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let outcome = write_file(dir.path(), ".t-", &target, b"one", false).unwrap();
        assert_eq!(outcome, Committed::Written);
        assert_eq!(fs::read(&target).unwrap(), b"one");
        assert_eq!(
            fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_written_past_its_writeback_steps_is_committed_whole() {
        // Tens of megabytes, streamed and then from two threads at offsets, each write starting
        // writeback every 8 MiB: what lands is every byte, each in its place.
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let piece: Vec<u8> = (0..=250u8).cycle().take(3 << 20).collect();
        let mut pending = Pending::new_in(dir.path(), ".t-").unwrap();
        for _ in 0..4 {
            pending.write_all(&piece).unwrap();
        }
        let streamed = 4 * piece.len() as u64;
        std::thread::scope(|scope| {
            for half in 0..2u64 {
                let (pending, piece) = (&pending, &piece);
                scope.spawn(move || {
                    for n in (half..6).step_by(2) {
                        let at = streamed + n * piece.len() as u64;
                        pending.write_all_at(piece, at).unwrap();
                    }
                });
            }
        });
        pending.commit(&target, false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), piece.repeat(10));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_existing_target_is_kept_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        fs::write(&target, b"old").unwrap();
        let outcome = write_file(dir.path(), ".t-", &target, b"new", false).unwrap();
        assert_eq!(outcome, Committed::AlreadyThere);
        assert_eq!(fs::read(&target).unwrap(), b"old");
        write_file(dir.path(), ".t-", &target, b"new", true).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_dropped_pending_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut pending = Pending::new_in(dir.path(), ".t-").unwrap();
        pending.write_all(b"half").unwrap();
        drop(pending);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
