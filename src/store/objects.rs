//! Objects: immutable zstd files named by the sha256 of their raw bytes.
//!
//! Writes go through `<store>/tmp` and are renamed into place without replacing anything, so an
//! object, once present, is never rewritten. Every read decodes as a stream (frames from the
//! reference implementation carry no content size), never produces more than the expected size, and
//! checks the bytes against the name before the caller may trust them.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use super::Store;
use super::atomic::{Committed, Pending};
use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, IoContext, Result};

pub const DEFAULT_LEVEL: i32 = 3;

/// A reusable zstd compressor (its context is the expensive part to build), with or without a
/// dictionary (see `dictionary.rs`).
pub struct Encoder {
    compressor: zstd::bulk::Compressor<'static>,
    buffer: Vec<u8>,
    level: i32,
    dictionary: Option<Arc<[u8]>>,
}

impl Encoder {
    pub fn new(level: i32) -> Result<Self> {
        Self::build(level, None)
    }

    /// Frames written with a dictionary carry its zstd id, which is how readers find it again.
    pub fn with_dictionary(level: i32, dictionary: Arc<[u8]>) -> Result<Self> {
        Self::build(level, Some(dictionary))
    }

    /// An encoder with the given registered dictionary, or none.
    pub fn for_dictionary(
        level: i32,
        dictionary: Option<&super::dictionary::Named>,
    ) -> Result<Self> {
        Self::build(level, dictionary.map(|(_, bytes)| bytes.clone()))
    }

    /// Another encoder like this one, for another thread.
    pub fn fresh(&self) -> Result<Self> {
        Self::build(self.level, self.dictionary.clone())
    }

    fn build(level: i32, dictionary: Option<Arc<[u8]>>) -> Result<Self> {
        let range = zstd::compression_level_range();
        if !range.contains(&level) {
            return Err(Error::usage(format!(
                "zstd level {level} is out of range {}..={}",
                range.start(),
                range.end()
            )));
        }
        let mut compressor = match &dictionary {
            None => zstd::bulk::Compressor::new(level),
            Some(dictionary) => zstd::bulk::Compressor::with_dictionary(level, dictionary),
        }
        .context(|| "create zstd compressor".into())?;
        compressor
            .include_checksum(true)
            .context(|| "configure zstd".into())?;
        Ok(Self {
            compressor,
            buffer: Vec::new(),
            level,
            dictionary,
        })
    }

    /// The size `raw` would take as an object, for dry runs.
    pub fn compressed_len(&mut self, raw: &[u8]) -> Result<u64> {
        Ok(self.compress(raw)?.len() as u64)
    }

    fn compress(&mut self, raw: &[u8]) -> Result<&[u8]> {
        self.buffer.clear();
        self.buffer
            .reserve(zstd::zstd_safe::compress_bound(raw.len()));
        self.compressor
            .compress_to_buffer(raw, &mut self.buffer)
            .context(|| "zstd compression".into())?;
        Ok(&self.buffer)
    }
}

/// What storing an object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Size of the object file on disk (compressed).
    pub stored_bytes: u64,
    /// True when this call wrote it; false when it was already in the store.
    pub created: bool,
}

impl Store {
    pub fn object_path(&self, digest: &Digest) -> PathBuf {
        let hex = digest.to_hex();
        self.objects_dir()
            .join(&hex[..2])
            .join(format!("{hex}.zst"))
    }

    /// The compressed size of a present object, or `None` when it is missing.
    pub fn object_stored_bytes(&self, digest: &Digest) -> Result<Option<u64>> {
        let path = self.object_path(digest);
        match fs::metadata(&path) {
            Ok(meta) => Ok(Some(meta.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_path("stat", &path),
        }
    }

    /// Store `raw`, already hashed to `digest`. An object that is present is not compressed again;
    /// its mtime is refreshed instead, so gc's grace period counts from this use.
    ///
    /// The new file is renamed into place but not fsynced one by one: call [`Store::sync`] before
    /// committing anything that names it.
    pub fn put_object(&self, digest: &Digest, raw: &[u8], encoder: &mut Encoder) -> Result<Stored> {
        let path = self.object_path(digest);
        if let Some(stored_bytes) = self.touch_object(&path)? {
            return Ok(Stored {
                stored_bytes,
                created: false,
            });
        }
        let compressed = encoder.compress(raw)?;
        let stored_bytes = compressed.len() as u64;
        self.create_fan_out_dir(digest)?;
        let mut pending = Pending::new_in(&self.tmp_dir(), ".object-")?;
        pending
            .write_all(compressed)
            .with_path("write", pending.path())?;
        let created = pending.commit_unsynced(&path)? == Committed::Written;
        Ok(Stored {
            stored_bytes,
            created,
        })
    }

    /// Store everything `input` yields as one object, streaming: memory stays constant however
    /// large the input. Returns its name, raw size and what storing did.
    pub fn put_object_streaming(
        &self,
        input: &mut dyn Read,
        what: &str,
        level: i32,
    ) -> Result<(Digest, u64, Stored)> {
        let mut pending = Pending::new_in(&self.tmp_dir(), ".object-")?;
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
        let path = self.object_path(&digest);
        if let Some(stored_bytes) = self.touch_object(&path)? {
            return Ok((
                digest,
                raw_bytes,
                Stored {
                    stored_bytes,
                    created: false,
                },
            ));
        }
        let stored_bytes = pending.file().metadata().with_path("stat", &temp)?.len();
        self.create_fan_out_dir(&digest)?;
        let created = pending.commit_unsynced(&path)? == Committed::Written;
        Ok((
            digest,
            raw_bytes,
            Stored {
                stored_bytes,
                created,
            },
        ))
    }

    /// `objects/<2 hex>/`, created once per store handle rather than checked once per object.
    fn create_fan_out_dir(&self, digest: &Digest) -> Result<()> {
        let fan = &self.fans_created[usize::from(digest.as_bytes()[0])];
        if !fan.load(std::sync::atomic::Ordering::Relaxed) {
            super::create_private_dir(
                self.object_path(digest)
                    .parent()
                    .expect("object paths have a parent"),
            )?;
            fan.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    fn touch_object(&self, path: &std::path::Path) -> Result<Option<u64>> {
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

    /// Make every object written so far durable (one `syncfs` rather than an fsync per object).
    pub fn sync(&self) -> Result<()> {
        let dir = File::open(self.objects_dir()).with_path("open", &self.objects_dir())?;
        rustix::fs::syncfs(&dir)
            .map_err(|e| Error::io("sync the filesystem of", self.root(), e.into()))
    }

    /// Stream an object's raw bytes into `out`, checking them against its name and, when given,
    /// against `expected` bytes (decoding stops one byte past it). Returns the raw size. A frame
    /// written with a dictionary is decoded with the registered dictionary its header names.
    ///
    /// Bytes reach `out` before the final check: callers that must not expose unverified bytes
    /// write into a temp file or buffer and act on the result.
    pub fn read_object(
        &self,
        digest: &Digest,
        expected: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<u64> {
        let path = self.object_path(digest);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::object_missing(*digest));
            }
            Err(e) => return Err(e).with_path("open object", &path),
        };
        // The frame header (at most 18 bytes) names the dictionary, if any.
        let mut header = Vec::with_capacity(18);
        (&file)
            .take(18)
            .read_to_end(&mut header)
            .with_path("read object", &path)?;
        let dictionary = match zstd::zstd_safe::get_dict_id_from_frame(&header) {
            Some(id) => Some(
                self.decoder_dictionary(id)
                    .map_err(|e| e.context(format_args!("object {digest}")))?,
            ),
            None => None,
        };
        let input = io::BufReader::new(io::Cursor::new(header).chain(file));
        let limit = expected.map_or(u64::MAX, |n| n.saturating_add(1));
        let mut sink = HashingWriter::new(out);
        // One decoding context per thread, reused: building one per object (and faulting in its
        // window) costs more than decoding a small object.
        DCTX.with(|contexts| -> Result<()> {
            let mut contexts = contexts.borrow_mut();
            let key = dictionary.as_ref().map(|(name, _)| *name);
            let context = match contexts.entry(key) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let mut context = zstd::zstd_safe::DCtx::create();
                    if let Some((_, bytes)) = &dictionary {
                        context.load_dictionary(bytes).map_err(|code| {
                            Error::object_corrupt(
                                *digest,
                                format!(
                                    "zstd dictionary: {}",
                                    zstd::zstd_safe::get_error_name(code)
                                ),
                            )
                        })?;
                    }
                    e.insert(context)
                }
            };
            let decoder = zstd::stream::read::Decoder::with_context(input, context);
            copy_object(decoder.take(limit), &mut sink, digest)
        })?;
        let (_, actual, bytes) = sink.finish();
        if let Some(expected) = expected {
            if bytes > expected {
                return Err(Error::object_corrupt(
                    *digest,
                    format!("it inflates past its recorded size of {expected} bytes"),
                ));
            }
            if bytes != expected {
                return Err(Error::object_corrupt(
                    *digest,
                    format!("it holds {bytes} bytes, {expected} were recorded"),
                ));
            }
        }
        if actual != *digest {
            return Err(Error::object_corrupt(
                *digest,
                format!("its bytes hash to {actual}"),
            ));
        }
        Ok(bytes)
    }

    /// An object's raw bytes in memory, verified. Memory grows with what the object really holds,
    /// never with what a manifest claims.
    pub fn read_object_to_vec(&self, digest: &Digest, expected: Option<u64>) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.read_object(digest, expected, &mut bytes)?;
        Ok(bytes)
    }

    /// Every object name in the store, one fan-out directory at a time. Files that are not named
    /// `<64 hex>.zst` inside their right fan-out directory are reported as `Err` entries by name.
    pub fn list_objects(
        &self,
    ) -> Result<impl Iterator<Item = std::result::Result<Digest, PathBuf>>> {
        let objects = self.objects_dir();
        let mut fans: Vec<PathBuf> = match fs::read_dir(&objects) {
            Ok(entries) => entries
                .map(|e| e.map(|e| e.path()))
                .collect::<io::Result<_>>()
                .with_path("list", &objects)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_path("list", &objects),
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

    /// Delete an object file (gc only).
    pub fn remove_object(&self, digest: &Digest) -> Result<()> {
        super::remove_if_present(&self.object_path(digest))
    }
}

/// The digest an object file's path names, if it is a well-formed object path.
fn object_name(path: &std::path::Path) -> Option<Digest> {
    let name = path.file_name()?.to_str()?.strip_suffix(".zst")?;
    let fan = path.parent()?.file_name()?.to_str()?;
    let digest = Digest::parse(name)?;
    (name[..2] == *fan).then_some(digest)
}

thread_local! {
    /// Decoding contexts by the dictionary they hold (loaded once per thread).
    static DCTX: std::cell::RefCell<std::collections::HashMap<Option<Digest>, zstd::zstd_safe::DCtx<'static>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

fn copy_object(
    mut from: impl Read,
    to: &mut HashingWriter<&mut dyn Write>,
    digest: &Digest,
) -> Result<()> {
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::object_corrupt(*digest, e.to_string())),
        };
        to.write_all(&buf[..n]).map_err(crate::error::sink_failed)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path().join("s")).unwrap();
        (dir, store)
    }

    #[test]
    fn put_then_read_round_trips_and_dedupes() {
        let (_dir, store) = store();
        let mut enc = Encoder::new(3).unwrap();
        let raw = b"hello hello hello hello".repeat(100);
        let d = Digest::of(&raw);
        let first = store.put_object(&d, &raw, &mut enc).unwrap();
        assert!(first.created);
        assert!(first.stored_bytes < raw.len() as u64);
        let again = store.put_object(&d, &raw, &mut enc).unwrap();
        assert_eq!(
            again,
            Stored {
                stored_bytes: first.stored_bytes,
                created: false
            }
        );
        assert_eq!(
            store
                .read_object_to_vec(&d, Some(raw.len() as u64))
                .unwrap(),
            raw
        );
        let listed: Vec<_> = store.list_objects().unwrap().collect();
        assert_eq!(listed, vec![Ok(d)]);
        assert_eq!(fs::read_dir(store.tmp_dir()).unwrap().count(), 0);
    }

    #[test]
    fn reads_refuse_wrong_sizes_and_wrong_bytes() {
        let (_dir, store) = store();
        let mut enc = Encoder::new(3).unwrap();
        let raw = vec![7u8; 10_000];
        let d = Digest::of(&raw);
        store.put_object(&d, &raw, &mut enc).unwrap();
        let err = store.read_object_to_vec(&d, Some(100)).unwrap_err();
        assert!(err.to_string().contains("inflates past"), "{err}");
        let err = store.read_object_to_vec(&d, Some(20_000)).unwrap_err();
        assert!(err.to_string().contains("holds 10000 bytes"), "{err}");
        // Another object's bytes under this name.
        let other = zstd::encode_all(&b"other"[..], 3).unwrap();
        fs::write(store.object_path(&d), other).unwrap();
        let err = store.read_object_to_vec(&d, None).unwrap_err();
        assert!(err.to_string().contains("hash to"), "{err}");
        let missing = Digest::of(b"nope");
        let err = store.read_object_to_vec(&missing, None).unwrap_err();
        assert_eq!(err.to_string(), format!("object {missing} is missing"));
    }

    #[test]
    fn out_of_range_levels_are_usage_errors() {
        assert!(Encoder::new(99).is_err());
    }
}
