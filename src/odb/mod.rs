//! The object database: the one owner of where and how objects live. Nothing else builds an object
//! path.
//!
//! An object is immutable bytes named by their sha256. It lives as a loose file (the Fold V1 layout,
//! [`loose`]); every read is decoded as a stream, capped at the size its reference records, and
//! checked against its name. Writers make new objects durable with [`Odb::sync`] before anything
//! names them. Which dictionaries frames may be written with, and how readers find them, is
//! [`dictionaries`]' job; zstd itself is [`codec`]'s.

pub mod codec;
pub mod codexfold;
pub mod dictionaries;
pub mod dictionary;
mod extent;
mod loose;
pub mod pack;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::digest::Digest;
use crate::error::{Error, Result};

pub use codec::{DEFAULT_LEVEL, Encoder};

/// What storing an object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Its size on disk (compressed).
    pub stored_bytes: u64,
    /// True when this call wrote it; false when it was already in the store.
    pub created: bool,
}

/// A handle on a store's objects. Cheap to clone; clones share their caches.
#[derive(Debug, Clone)]
pub struct Odb {
    root: PathBuf,
    loose: loose::Loose,
    dictionaries: dictionaries::Cache,
}

impl Odb {
    /// The objects of the store at `root` (which may not exist yet; nothing is touched).
    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            loose: loose::Loose::new(root.join("objects"), root.join("tmp")),
            dictionaries: dictionaries::Cache::default(),
        }
    }

    /// The folder loose objects live in (for the store's skeleton and the git mirror).
    pub fn loose_dir(&self) -> &Path {
        self.loose.dir()
    }

    /// The compressed size of a present object, or `None` when it is missing.
    pub fn stored_bytes(&self, digest: &Digest) -> Result<Option<u64>> {
        Ok(self.loose.stat(digest)?.map(|s| s.stored_bytes))
    }

    pub fn contains(&self, digest: &Digest) -> Result<bool> {
        Ok(self.stored_bytes(digest)?.is_some())
    }

    /// When an unreferenced object was last written or reused, and its size: what gc decides by.
    pub fn modified(&self, digest: &Digest) -> Result<Option<(SystemTime, u64)>> {
        Ok(self
            .loose
            .stat(digest)?
            .map(|s| (s.modified, s.stored_bytes)))
    }

    /// Store `raw`, already hashed to `digest`. An object that is present is not compressed again;
    /// it is touched instead, so gc's grace period counts from this use. Not durable until
    /// [`Odb::sync`].
    pub fn put(&self, digest: &Digest, raw: &[u8], encoder: &mut Encoder) -> Result<Stored> {
        self.loose.put(digest, raw, encoder)
    }

    /// Store everything `input` yields as one object, streaming: memory stays constant however
    /// large the input. Returns its name, raw size and what storing did.
    pub fn put_streaming(
        &self,
        input: &mut dyn Read,
        what: &str,
        level: i32,
    ) -> Result<(Digest, u64, Stored)> {
        self.loose.put_streaming(input, what, level)
    }

    /// Make every object written so far durable (one `syncfs` rather than an fsync per object).
    pub fn sync(&self) -> Result<()> {
        let dir = File::open(&self.root).map_err(|e| Error::io("open", &self.root, e))?;
        rustix::fs::syncfs(&dir)
            .map_err(|e| Error::io("sync the filesystem of", &self.root, e.into()))
    }

    /// Stream an object's raw bytes into `out`, checking them against its name and, when given,
    /// against `expected` bytes (decoding stops one byte past it). Returns the raw size.
    ///
    /// Bytes reach `out` before the final check: callers that must not expose unverified bytes
    /// write into a temp file or buffer and act on the result. Write failures name no target:
    /// callers name it with [`Error::on_target`].
    pub fn read(&self, digest: &Digest, expected: Option<u64>, out: &mut dyn Write) -> Result<u64> {
        let Some(file) = self.loose.open(digest)? else {
            return Err(Error::object_missing(*digest));
        };
        let (header, id) = self.loose.frame_dictionary(&file)?;
        let dictionary = match id {
            Some(id) => Some(
                self.decoder_dictionary(id)
                    .map_err(|e| e.context(format_args!("object {digest}")))?,
            ),
            None => None,
        };
        self.loose
            .read(digest, header, file, dictionary.as_ref(), expected, out)
    }

    /// An object's raw bytes in memory, verified. Memory grows with what the object really holds,
    /// never with what a manifest claims.
    pub fn read_to_vec(&self, digest: &Digest, expected: Option<u64>) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.read(digest, expected, &mut bytes)?;
        Ok(bytes)
    }

    /// Every object name. Files under the objects folder that are not objects come back as `Err`
    /// entries by path (fsck reports them; temp files among them are gc's).
    pub fn list(&self) -> Result<impl Iterator<Item = std::result::Result<Digest, PathBuf>>> {
        self.loose.list()
    }

    /// Delete an object (gc only).
    pub fn remove(&self, digest: &Digest) -> Result<()> {
        self.loose.remove(digest)
    }

    /// Where a loose object's file is (for what reports on the loose layout itself: the git
    /// mirror, which carries the files as they are, and benchmarks).
    pub fn loose_path(&self, digest: &Digest) -> PathBuf {
        self.loose.path(digest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn odb() -> (tempfile::TempDir, Odb) {
        let dir = tempfile::tempdir().unwrap();
        crate::store::Store::init(dir.path().join("s")).unwrap();
        let odb = Odb::at(&dir.path().join("s"));
        (dir, odb)
    }

    #[test]
    fn put_then_read_round_trips_and_dedupes() {
        let (_dir, odb) = odb();
        let mut enc = Encoder::new(3).unwrap();
        let raw = b"hello hello hello hello".repeat(100);
        let d = Digest::of(&raw);
        let first = odb.put(&d, &raw, &mut enc).unwrap();
        assert!(first.created);
        assert!(first.stored_bytes < raw.len() as u64);
        let again = odb.put(&d, &raw, &mut enc).unwrap();
        assert_eq!(
            again,
            Stored {
                stored_bytes: first.stored_bytes,
                created: false
            }
        );
        assert_eq!(odb.read_to_vec(&d, Some(raw.len() as u64)).unwrap(), raw);
        let listed: Vec<_> = odb.list().unwrap().collect();
        assert_eq!(listed, vec![Ok(d)]);
        assert_eq!(fs::read_dir(odb.root.join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn reads_refuse_wrong_bytes_and_name_missing_objects() {
        let (_dir, odb) = odb();
        let raw = vec![7u8; 10_000];
        let d = Digest::of(&raw);
        odb.put(&d, &raw, &mut Encoder::new(3).unwrap()).unwrap();
        // Another object's bytes under this name.
        let other = zstd::encode_all(&b"other"[..], 3).unwrap();
        fs::write(odb.loose_path(&d), other).unwrap();
        let err = odb.read_to_vec(&d, None).unwrap_err();
        assert!(err.to_string().contains("hash to"), "{err}");
        let missing = Digest::of(b"nope");
        let err = odb.read_to_vec(&missing, None).unwrap_err();
        assert_eq!(err.to_string(), format!("object {missing} is missing"));
    }
}
