//! Loose objects, the Fold V1 layout: `objects/<2 hex>/<sha256>.zst`, one zstd file per object,
//! named by the sha256 of its raw bytes.
//!
//! Writes go through the store's `tmp/` and are renamed into place without replacing anything, so
//! an object, once present, is never rewritten. Reads decode as a stream (frames from the reference
//! implementation carry no content size), never produce more than the expected size, and check the
//! bytes against the name. Only the object database uses this module.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::SystemTime;

use super::Stored;
use super::codec::{self, Encoder};
use super::dictionaries::Named;
use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::{Committed, Pending};

#[derive(Debug, Clone)]
pub(super) struct Loose {
    dir: PathBuf,
    tmp: PathBuf,
    /// Which `objects/<2 hex>/` directories this handle (and its clones) has made sure exist.
    fans_created: Arc<[AtomicBool; 256]>,
    /// Whether the store may hold loose objects (see [`Loose::may_hold_any`]).
    held: Arc<AtomicU8>,
}

/// [`Loose::held`]'s states.
const HELD_UNKNOWN: u8 = 0;
const HELD_NONE: u8 = 1;
const HELD_SOME: u8 = 2;

/// A loose object file's size and mtime (gc's grace period counts from the mtime).
pub(super) struct Stat {
    pub stored_bytes: u64,
    pub modified: SystemTime,
}

impl Loose {
    pub fn new(dir: PathBuf, tmp: PathBuf) -> Self {
        Self {
            dir,
            tmp,
            fans_created: Arc::new(std::array::from_fn(|_| AtomicBool::new(false))),
            held: Arc::new(AtomicU8::new(HELD_UNKNOWN)),
        }
    }

    /// Whether there may be loose objects: the store held some at the first look, or this handle
    /// (or a clone) has written one since. A writer that only dedupes asks this before looking
    /// for each new object's file: a store whose objects are all packed has none to find.
    /// Another process's loose object written after the first look is not seen.
    pub fn may_hold_any(&self) -> Result<bool> {
        let held = match self.held.load(Ordering::Relaxed) {
            HELD_UNKNOWN => {
                let held = match self.list()?.next() {
                    Some(_) => HELD_SOME,
                    None => HELD_NONE,
                };
                // A write since the look has said SOME: it stays.
                let _ = (self.held).compare_exchange(
                    HELD_UNKNOWN,
                    held,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                self.held.load(Ordering::Relaxed)
            }
            held => held,
        };
        Ok(held != HELD_NONE)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.to_hex();
        self.dir.join(&hex[..2]).join(format!("{hex}.zst"))
    }

    pub fn stat(&self, digest: &Digest) -> Result<Option<Stat>> {
        let path = self.path(digest);
        match fs::metadata(&path) {
            Ok(meta) => Ok(Some(Stat {
                stored_bytes: meta.len(),
                modified: meta.modified().with_path("stat", &path)?,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_path("stat", &path),
        }
    }

    /// Store `raw`, already hashed to `digest`; see [`super::Odb::put`].
    pub fn put(&self, digest: &Digest, raw: &[u8], encoder: &mut Encoder) -> Result<Stored> {
        let path = self.path(digest);
        if let Some(stored_bytes) = touch(&path)? {
            return Ok(Stored {
                stored_bytes,
                created: false,
            });
        }
        let compressed = encoder.compress(raw)?;
        let stored_bytes = compressed.len() as u64;
        self.create_fan_out_dir(digest)?;
        let mut pending = Pending::new_in(&self.tmp, ".object-")?;
        pending
            .write_all(compressed)
            .with_path("write", pending.path())?;
        let created = pending.commit_unsynced(&path)? == Committed::Written;
        Ok(Stored {
            stored_bytes,
            created,
        })
    }

    /// Write `raw` as this object's file whatever is there: the same bytes in another encoding (an
    /// object written with a dictionary, rewritten without). Not durable until the caller syncs.
    pub fn replace(&self, digest: &Digest, raw: &[u8], encoder: &mut Encoder) -> Result<()> {
        self.create_fan_out_dir(digest)?;
        let mut pending = Pending::new_in(&self.tmp, ".object-")?;
        pending
            .write_all(encoder.compress(raw)?)
            .with_path("write", pending.path())?;
        pending.replace_unsynced(&self.path(digest))
    }

    /// Store everything `input` yields as one object, streaming; see [`super::Odb::put_streaming`].
    pub fn put_streaming(
        &self,
        input: &mut dyn Read,
        what: &str,
        level: i32,
    ) -> Result<(Digest, u64, Stored)> {
        let mut pending = Pending::new_in(&self.tmp, ".object-")?;
        let temp = pending.path().to_path_buf();
        let mut encoder = zstd::stream::write::Encoder::new(&mut pending, level)
            .context(|| "create zstd compressor".into())?;
        encoder
            .include_checksum(true)
            .context(|| "configure zstd".into())?;
        let mut hashing = HashingWriter::new(encoder);
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::system(format!("read {what}"), e)),
            };
            hashing.write_all(&buf[..n]).with_path("write", &temp)?;
        }
        let (encoder, digest, raw_bytes) = hashing.finish();
        encoder.finish().with_path("compress into", &temp)?;
        let path = self.path(&digest);
        if let Some(stored_bytes) = touch(&path)? {
            let stored = Stored {
                stored_bytes,
                created: false,
            };
            return Ok((digest, raw_bytes, stored));
        }
        let stored_bytes = pending.file().metadata().with_path("stat", &temp)?.len();
        self.create_fan_out_dir(&digest)?;
        let created = pending.commit_unsynced(&path)? == Committed::Written;
        let stored = Stored {
            stored_bytes,
            created,
        };
        Ok((digest, raw_bytes, stored))
    }

    /// `objects/<2 hex>/`, created once per handle rather than checked once per object. Every
    /// write comes here first: the store holds loose objects from then on.
    fn create_fan_out_dir(&self, digest: &Digest) -> Result<()> {
        self.held.store(HELD_SOME, Ordering::Relaxed);
        let fan = &self.fans_created[usize::from(digest.as_bytes()[0])];
        if !fan.load(Ordering::Relaxed) {
            let path = self.path(digest);
            crate::files::create_private_dir(path.parent().expect("object paths have a parent"))?;
            fan.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Refresh a present object's mtime (see [`touch`]).
    pub fn touch(&self, digest: &Digest) -> Result<()> {
        touch(&self.path(digest)).map(|_| ())
    }

    /// Open an object, or `None` when it is not here.
    pub fn open(&self, digest: &Digest) -> Result<Option<File>> {
        let path = self.path(digest);
        match File::open(&path) {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_path("open object", &path),
        }
    }

    /// The zstd dictionary id an object's frame names, if any (its header is at most 18 bytes).
    pub fn frame_dictionary(&self, file: &File) -> Result<(Vec<u8>, Option<std::num::NonZeroU32>)> {
        let mut header = Vec::with_capacity(18);
        file.take(18)
            .read_to_end(&mut header)
            .context(|| "read an object's header".into())?;
        let id = codec::frame_dictionary_id(&header);
        Ok((header, id))
    }

    /// Decode an opened object (its header already read) into `out`, verified.
    pub fn read(
        &self,
        digest: &Digest,
        header: Vec<u8>,
        file: File,
        dictionary: Option<&Named>,
        expected: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<u64> {
        let input = io::BufReader::new(io::Cursor::new(header).chain(file));
        codec::decode_verified(input, dictionary, digest, expected, out)
    }

    /// Every object name, one fan-out directory at a time. Files that are not named
    /// `<64 hex>.zst` inside their right fan-out directory come back as `Err` entries by path.
    pub fn list(&self) -> Result<impl Iterator<Item = std::result::Result<Digest, PathBuf>>> {
        let mut fans: Vec<PathBuf> = match fs::read_dir(&self.dir) {
            Ok(entries) => entries
                .map(|e| e.map(|e| e.path()))
                .collect::<io::Result<_>>()
                .with_path("list", &self.dir)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_path("list", &self.dir),
        };
        fans.sort();
        Ok(fans.into_iter().flat_map(|fan| {
            let mut names: Vec<PathBuf> = match fs::read_dir(&fan) {
                Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
                Err(_) => vec![fan.clone()],
            };
            names.sort();
            names.into_iter().map(|path| object_name(&path).ok_or(path))
        }))
    }

    pub fn remove(&self, digest: &Digest) -> Result<()> {
        crate::files::remove_if_present(&self.path(digest))
    }
}

/// Refresh a present object's mtime (so gc's grace period counts from this use) and return its
/// size; `None` when it is missing.
fn touch(path: &Path) -> Result<Option<u64>> {
    match File::open(path) {
        Ok(file) => {
            // Best effort: an object we cannot touch is still a valid object.
            let _ = file.set_modified(SystemTime::now());
            Ok(Some(file.metadata().with_path("stat", path)?.len()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_path("open", path),
    }
}

/// The digest an object file's path names, if it is a well-formed object path.
fn object_name(path: &Path) -> Option<Digest> {
    let name = path.file_name()?.to_str()?.strip_suffix(".zst")?;
    let fan = path.parent()?.file_name()?.to_str()?;
    let digest = Digest::parse(name)?;
    (name[..2] == *fan).then_some(digest)
}
