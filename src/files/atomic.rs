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
    temp: Temp,
    writeback: Writeback,
}

enum Temp {
    Named(NamedTempFile),
    /// A file with no name until it is put in place (`O_TMPFILE`): a process killed before then
    /// leaves nothing behind. `prefix` names it for the moment between its link and its rename.
    Unnamed {
        file: File,
        dir: PathBuf,
        prefix: String,
    },
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
        Ok(Self::of(Temp::Named(file)))
    }

    /// A new temp file in `dir` that has no name while it is written, where the filesystem has
    /// such files (and `/proc` is there to link one by); else as [`Pending::new_in`]. Linked as
    /// `<dir>/<prefix>XXXXXX.tmp` only for the moment before a rename over an existing target.
    pub fn unnamed_in(dir: &Path, prefix: &str) -> Result<Self> {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
        let opened = Path::new(PROC_FDS)
            .is_dir()
            .then(|| rustix::fs::open(dir, flags, Mode::from_raw_mode(0o600)));
        match opened {
            Some(Ok(fd)) => Ok(Self::of(Temp::Unnamed {
                file: File::from(fd),
                dir: dir.to_path_buf(),
                prefix: prefix.to_string(),
            })),
            // No unnamed files here (an older kernel, a filesystem without them).
            _ => Self::new_in(dir, prefix),
        }
    }

    fn of(temp: Temp) -> Self {
        Self {
            temp,
            writeback: Writeback::default(),
        }
    }

    /// The temp file's path (an unnamed one's folder), for messages.
    pub fn path(&self) -> &Path {
        match &self.temp {
            Temp::Named(file) => file.path(),
            Temp::Unnamed { dir, .. } => dir,
        }
    }

    pub fn file(&mut self) -> &mut File {
        match &mut self.temp {
            Temp::Named(file) => file.as_file_mut(),
            Temp::Unnamed { file, .. } => file,
        }
    }

    /// The file, to read back.
    pub fn as_file(&self) -> &File {
        match &self.temp {
            Temp::Named(file) => file.as_file(),
            Temp::Unnamed { file, .. } => file,
        }
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
        let placed = match self.temp {
            Temp::Named(file) => file
                .persist_noclobber(target)
                .map(|_| ())
                .map_err(|e| e.error),
            // A link never replaces what is there.
            Temp::Unnamed { file, .. } => link(&file, target),
        };
        match placed {
            Ok(()) => Ok(Committed::Written),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Committed::AlreadyThere),
            Err(e) => Err(Error::io("rename into", target, e)),
        }
    }

    /// Rename to `target`, replacing whatever is there, without any fsync: for a group of files
    /// made durable together before their renames, the folder fsynced after.
    pub fn replace_unsynced(self, target: &Path) -> Result<()> {
        let named = match self.temp {
            Temp::Named(file) => file.into_temp_path(),
            // Linked under a temp name, then renamed: a link cannot replace a file.
            Temp::Unnamed { file, dir, prefix } => tempfile::Builder::new()
                .prefix(&prefix)
                .suffix(".tmp")
                .make_in(&dir, |path| link(&file, path))
                .with_path("link a temp file in", &dir)?
                .into_temp_path(),
        };
        named
            .persist(target)
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
        self.as_file().sync_all().with_path("fsync", self.path())?;
        let outcome = self.place_unsynced(target, overwrite)?;
        if outcome == Committed::Written {
            sync_parent(target)?;
        }
        Ok(outcome)
    }
}

impl Write for Pending {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file().write(buf)?;
        self.writeback.wrote(self.as_file(), n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
    }
}

/// Where a process's open files are, as links: how an unnamed file is given a name without
/// privileges (`linkat` with `AT_EMPTY_PATH` needs `CAP_DAC_READ_SEARCH`).
const PROC_FDS: &str = "/proc/self/fd";

/// Give the open `file` the name `path` (failing if it is taken).
pub fn link(file: &File, path: &Path) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let by = format!("{PROC_FDS}/{}", file.as_raw_fd());
    let cwd = rustix::fs::CWD;
    rustix::fs::linkat(
        cwd,
        by.as_str(),
        cwd,
        path,
        rustix::fs::AtFlags::SYMLINK_FOLLOW,
    )
    .map_err(std::io::Error::from)
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
    fn an_unnamed_file_is_named_only_in_place_and_keeps_an_existing_target_unless_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let mut pending = Pending::unnamed_in(dir.path(), ".t-").unwrap();
        assert!(
            matches!(pending.temp, Temp::Unnamed { .. }),
            "tmpfs and ext4 have them"
        );
        pending.write_all(b"one").unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        assert_eq!(pending.commit(&target, false).unwrap(), Committed::Written);
        assert_eq!(fs::read(&target).unwrap(), b"one");
        assert_eq!(
            fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let mut again = Pending::unnamed_in(dir.path(), ".t-").unwrap();
        again.write_all(b"two").unwrap();
        assert_eq!(
            again.commit(&target, false).unwrap(),
            Committed::AlreadyThere
        );
        assert_eq!(fs::read(&target).unwrap(), b"one");
        let mut third = Pending::unnamed_in(dir.path(), ".t-").unwrap();
        third.write_all(b"three").unwrap();
        assert_eq!(third.commit(&target, true).unwrap(), Committed::Written);
        assert_eq!(fs::read(&target).unwrap(), b"three");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(Pending::unnamed_in(dir.path(), ".t-").unwrap());
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
