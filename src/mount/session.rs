//! A folded session read by offset, as a mount serves it: the parts that cover a range found by a
//! binary search over where each starts, each decoded once into a bounded cache shared by every
//! open file, and checked before a byte of it is served (a packed object by its block's frame
//! checksum, a loose one by its name: [`Check::Frame`]). A file read from its first byte to its
//! last in order is hashed as it goes and checked whole against its manifest's sha256.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use sha2::Digest as _;

use crate::digest::Digest;
use crate::error::{Cause, Error, Result};
use crate::odb::Check;
use crate::store::Store;
use crate::store::manifest::Manifest;

/// An open session: its manifest, where each part starts, and how far an in-order read got.
pub struct Opened {
    manifest: Manifest,
    /// `starts[i]` is the offset of part `i`'s first byte; one more, the session's size.
    starts: Vec<u64>,
    in_order: Mutex<InOrder>,
}

/// A read from the first byte on, in order, hashed as it goes (`None` once a read skipped).
struct InOrder {
    next: u64,
    hasher: Option<sha2::Sha256>,
}

impl Opened {
    /// The session of the manifest at `path`, its parts' sizes adding up to its source's.
    pub fn open(store: &Store, path: &Path) -> Result<Self> {
        let manifest = listed_manifest(store, path)?;
        store.odb().check_dictionary(&manifest.settings)?;
        let mut starts = Vec::with_capacity(manifest.parts.len() + 1);
        let mut at = 0u64;
        for part in &manifest.parts {
            starts.push(at);
            at += part.object.raw_bytes;
        }
        starts.push(at);
        if at != manifest.source.bytes {
            return Err(Error::manifest_invalid(
                path.display(),
                format!(
                    "its parts hold {at} bytes, its source {}",
                    manifest.source.bytes
                ),
            ));
        }
        Ok(Self {
            manifest,
            starts,
            in_order: Mutex::new(InOrder {
                next: 0,
                hasher: Some(sha2::Sha256::new()),
            }),
        })
    }

    pub fn id(&self) -> &str {
        &self.manifest.session.id
    }

    /// The sha256 of the session's bytes.
    pub fn sha256(&self) -> Digest {
        self.manifest.source.sha256
    }

    pub fn size(&self) -> u64 {
        self.manifest.source.bytes
    }

    /// Up to `len` bytes from `offset` (fewer at the end, none past it), every byte checked.
    pub fn read_at(&self, store: &Store, cache: &Cache, offset: u64, len: u32) -> Result<Vec<u8>> {
        let end = offset.saturating_add(u64::from(len)).min(self.size());
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut at = offset;
        // The part holding `offset`: the last that starts at or before it.
        let mut nth = self
            .starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        while at < end {
            let part = &self.manifest.parts[nth];
            let bytes = cache.get(store, &part.object.sha256, part.object.raw_bytes)?;
            let from = (at - self.starts[nth]) as usize;
            let to = ((end - self.starts[nth]) as usize).min(bytes.len());
            out.extend_from_slice(&bytes[from..to]);
            at = self.starts[nth] + to as u64;
            nth += 1;
        }
        self.hashed(offset, &out)?;
        Ok(out)
    }

    /// Feed an in-order read to the whole-session hash; at the end, check it. A read from the
    /// first byte starts a new pass; one that skips or goes back ends it unchecked.
    fn hashed(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        let mut in_order = self.in_order.lock().unwrap_or_else(|e| e.into_inner());
        if offset == 0 {
            *in_order = InOrder {
                next: 0,
                hasher: Some(sha2::Sha256::new()),
            };
        }
        if offset != in_order.next {
            in_order.hasher = None;
            return Ok(());
        }
        in_order.next += bytes.len() as u64;
        let Some(hasher) = in_order.hasher.as_mut() else {
            return Ok(());
        };
        hasher.update(bytes);
        if in_order.next < self.size() {
            return Ok(());
        }
        let whole: [u8; 32] = in_order.hasher.take().expect("hashing").finalize().into();
        let digest = Digest::from_bytes(whole);
        match digest == self.manifest.source.sha256 {
            true => Ok(()),
            false => Err(Error::corrupt(format!(
                "session {}: read whole, it has sha256 {digest}, its manifest says {}",
                self.id(),
                self.manifest.source.sha256
            ))),
        }
    }
}

/// Decoded parts, shared by every open file, at most `budget` bytes of them: the least recently
/// used go first.
pub struct Cache {
    budget: usize,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    parts: HashMap<Digest, (Arc<[u8]>, u64)>,
    bytes: usize,
    tick: u64,
}

impl Cache {
    pub fn new(budget: usize) -> Self {
        Self {
            budget,
            state: Mutex::default(),
        }
    }

    /// The bytes of object `digest` (of `raw_bytes`), checked, decoded once while cached.
    fn get(&self, store: &Store, digest: &Digest, raw_bytes: u64) -> Result<Arc<[u8]>> {
        {
            let mut state = self.lock();
            state.tick += 1;
            let tick = state.tick;
            if let Some((bytes, used)) = state.parts.get_mut(digest) {
                *used = tick;
                return Ok(bytes.clone());
            }
        }
        let mut bytes = Vec::new();
        store
            .odb()
            .read_checked(digest, Some(raw_bytes), &mut bytes, Check::Frame)?;
        if bytes.len() as u64 != raw_bytes {
            return Err(Error::object_corrupt(
                *digest,
                format!(
                    "it holds {} bytes, its manifest says {raw_bytes}",
                    bytes.len()
                ),
            ));
        }
        let bytes: Arc<[u8]> = bytes.into();
        let mut state = self.lock();
        while state.bytes + bytes.len() > self.budget && !state.parts.is_empty() {
            let oldest = state
                .parts
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(d, _)| *d)
                .expect("not empty");
            let (gone, _) = state.parts.remove(&oldest).expect("listed");
            state.bytes -= gone.len();
        }
        if bytes.len() <= self.budget {
            state.bytes += bytes.len();
            let tick = state.tick;
            state.parts.insert(*digest, (bytes.clone(), tick));
        }
        Ok(bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The manifest at `path`, which the mount listed: a `NotFound` error when it is gone since (an
/// `rm`), which [`open_errno`] tells the kernel as `ENOENT`.
pub fn listed_manifest(store: &Store, path: &Path) -> Result<Manifest> {
    store.manifest_at(path)?.ok_or_else(|| {
        Error::not_found(format!(
            "{}: removed from the store since it was listed",
            path.display()
        ))
    })
}

/// What the kernel is told of a session [`Opened::open`] (or a copy-up) could not open: `ENOENT` when the store
/// no longer holds it (an `rm` since the mount listed it), `EIO` otherwise (a damaged object, a
/// manifest that does not read).
pub fn open_errno(e: &Error) -> fuser::Errno {
    match e.cause() {
        Cause::NotFound(_) => fuser::Errno::ENOENT,
        _ => fuser::Errno::EIO,
    }
}
