//! What says a file did not change while it was read: size, mtime and ctime to the nanosecond,
//! inode and device, taken before the read and compared after it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{IoContext, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    pub size: u64,
    // i64, not i128: serde's flattening (the stamp cache's lines) cannot read an i128 back.
    mtime_ns: i64,
    ctime_ns: i64,
    inode: u64,
    device: u64,
}

impl Stamp {
    pub fn of(path: &Path) -> Result<Self> {
        let meta = std::fs::metadata(path).with_path("stat", path)?;
        Ok(Self::from_metadata(&meta))
    }

    /// The stamp, or `None` when the file is gone (another fold may have removed it).
    pub fn of_present(path: &Path) -> Result<Option<Self>> {
        match std::fs::metadata(path) {
            Ok(meta) => Ok(Some(Self::from_metadata(&meta))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_path("stat", path),
        }
    }

    fn from_metadata(meta: &std::fs::Metadata) -> Self {
        let ns = |secs: i64, nanos: i64| secs.saturating_mul(1_000_000_000).saturating_add(nanos);
        Self {
            size: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            inode: meta.ino(),
            device: meta.dev(),
        }
    }

    /// The file's mtime.
    pub fn modified(&self) -> std::time::SystemTime {
        let at = std::time::Duration::from_nanos(self.mtime_ns.unsigned_abs());
        match self.mtime_ns < 0 {
            true => std::time::UNIX_EPOCH - at,
            false => std::time::UNIX_EPOCH + at,
        }
    }

    /// Whether the file's content has not changed (its mtime) for `age` or longer: an agent that
    /// still writes a session would have touched it since.
    pub fn unchanged_for(&self, age: std::time::Duration) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        now - i128::from(self.mtime_ns) >= age.as_nanos() as i128
    }

    /// What differs between `self` (before) and `now` (after), or `None`.
    pub fn change(&self, now: &Self) -> Option<&'static str> {
        if self.inode != now.inode || self.device != now.device {
            Some("it was replaced")
        } else if self.size != now.size {
            Some("its size changed")
        } else if self.mtime_ns != now.mtime_ns {
            Some("its mtime changed")
        } else if self.ctime_ns != now.ctime_ns {
            Some("its ctime changed")
        } else {
            None
        }
    }
}
