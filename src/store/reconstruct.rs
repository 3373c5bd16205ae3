//! Reconstruction: a manifest's parts streamed back out of the store as the original bytes,
//! each object checked against its size and, where its bytes may be read before the end, its
//! name or (read to be searched) its block's frame checksum; the whole against the source's
//! sha256 and size.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::Store;
use super::manifest::Manifest;
use crate::digest::HashingWriter;
use crate::error::{Cause, Error, IoContext, Result};
use crate::files::atomic::{Committed, Pending};
use crate::odb::Check;

/// Write the session's bytes to `out`, verifying as they stream. On error, `out` may hold a
/// prefix: callers that must not expose it write to a temp file.
pub fn write_session(store: &Store, manifest: &Manifest, out: &mut dyn Write) -> Result<()> {
    stream(store, manifest, out, Check::Object)
}

/// [`write_session`] into an `out` that nothing reads unless this succeeds (a temp file, a sink):
/// packed objects are not hashed one by one, since the session is hashed whole; only when the
/// whole is wrong are they, to name the one at fault.
fn write_session_unread(store: &Store, manifest: &Manifest, out: &mut dyn Write) -> Result<()> {
    stream(store, manifest, out, Check::Whole).map_err(|e| match e.cause() {
        Cause::Corrupt(_) | Cause::ObjectCorrupt { .. } => fault(store, manifest).unwrap_or(e),
        _ => e,
    })
}

/// The first object of `manifest` that fails its own check, if one does.
pub(super) fn fault(store: &Store, manifest: &Manifest) -> Option<Error> {
    manifest.parts.iter().find_map(|part| {
        store
            .odb()
            .read(
                &part.object.sha256,
                Some(part.object.raw_bytes),
                &mut io::sink(),
            )
            .err()
    })
}

fn stream(store: &Store, manifest: &Manifest, out: &mut dyn Write, check: Check) -> Result<()> {
    store.odb().check_dictionary(&manifest.settings)?;
    let mut sink = HashingWriter::new(out);
    for part in &manifest.parts {
        store.odb().read_checked(
            &part.object.sha256,
            Some(part.object.raw_bytes),
            &mut sink,
            check,
        )?;
    }
    let (_, digest, bytes) = sink.finish();
    let source = &manifest.source;
    if bytes != source.bytes || digest != source.sha256 {
        return Err(Error::corrupt(format!(
            "reconstruction gives {bytes} bytes with sha256 {digest}, the source had {} bytes with sha256 {}",
            source.bytes, source.sha256
        )));
    }
    Ok(())
}

/// A folded session as a `Read`, for ledger passes (seeds extracted, spans looked for): each object
/// is decoded whole and checked by its block's frame checksum ([`Check::Frame`]; a loose one
/// against its name) before any of its bytes are served (memory: the largest part), and the end of
/// the stream checks the source's sha256 and size, before which a pass acts on nothing (what
/// recall pulls back is verified against its span's own sha256). A failed check is a read error
/// carrying the store's error ([`Error::into_io`]).
pub struct SessionReader<'a> {
    store: &'a Store,
    manifest: &'a Manifest,
    next_part: usize,
    buffer: Vec<u8>,
    at: usize,
    hasher: HashingWriter<io::Sink>,
    done: bool,
}

impl<'a> SessionReader<'a> {
    pub fn new(store: &'a Store, manifest: &'a Manifest) -> Self {
        Self {
            store,
            manifest,
            next_part: 0,
            buffer: Vec::new(),
            at: 0,
            hasher: HashingWriter::new(io::sink()),
            done: false,
        }
    }

    fn refill(&mut self) -> Result<bool> {
        let Some(part) = self.manifest.parts.get(self.next_part) else {
            if !self.done {
                self.done = true;
                let hasher = std::mem::replace(&mut self.hasher, HashingWriter::new(io::sink()));
                let (_, digest, bytes) = hasher.finish();
                let source = &self.manifest.source;
                if bytes != source.bytes || digest != source.sha256 {
                    return Err(Error::corrupt(format!(
                        "session {:?}: reconstruction gives sha256 {digest}, the source had {}",
                        self.manifest.session.id, source.sha256
                    )));
                }
            }
            return Ok(false);
        };
        if self.next_part == 0 {
            self.store.odb().check_dictionary(&self.manifest.settings)?;
        }
        self.next_part += 1;
        self.buffer.clear();
        self.at = 0;
        self.store.odb().read_checked(
            &part.object.sha256,
            Some(part.object.raw_bytes),
            &mut self.buffer,
            Check::Frame,
        )?;
        self.hasher
            .write_all(&self.buffer)
            .expect("hashing into a sink cannot fail");
        Ok(true)
    }
}

impl io::Read for SessionReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.buffer.len() {
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => return Err(e.into_io()),
            }
        }
        let n = out.len().min(self.buffer.len() - self.at);
        out[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Reconstruct without keeping the bytes: the check made before a manifest is committed and
/// before a source is removed.
pub fn verify(store: &Store, manifest: &Manifest) -> Result<()> {
    write_session_unread(store, manifest, &mut io::sink())
}

/// What [`restore_file`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Restored {
    /// The session was written to the target.
    Written,
    /// The target already holds the session, byte for byte: nothing was written.
    InPlace,
}

/// The first half of restoring a folded session to `target`: an empty temp file beside it, for
/// [`super::by_block`] to write and verify (`None`: the target holds the session's bytes already,
/// its size and sha256, and is left as it is). [`Beside::commit`] or [`Beside::place_synced`] puts
/// it in place, never over an existing file unless `overwrite`. On any failure the target is
/// untouched and the temp file is gone once dropped (or, if the process is killed, left for the
/// next restore of the target to remove: see `restore_temp`). Missing parent directories are
/// created private.
pub fn begin_beside(manifest: &Manifest, target: &Path, overwrite: bool) -> Result<Option<Beside>> {
    if target.symlink_metadata().is_ok() {
        if holds(target, manifest)? {
            return Ok(None);
        }
        if !overwrite {
            return Err(Error::refused(format!(
                "{} exists and holds other bytes (use --overwrite to replace it)",
                crate::cli::human::path(target)
            )));
        }
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    crate::files::create_private_dir(&dir)?;
    let pending = super::restore_temp::create(&dir, target)?;
    Ok(Some(Beside {
        pending,
        target: target.to_path_buf(),
        dir,
        overwrite,
    }))
}

/// A restored session beside its target ([`begin_beside`]), written and verified.
pub struct Beside {
    pending: Pending,
    target: PathBuf,
    /// The target's folder.
    dir: PathBuf,
    overwrite: bool,
}

impl Beside {
    /// The folder it goes into.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temp file, to be written.
    pub fn file(&self) -> &Pending {
        &self.pending
    }

    /// Put it in place on its own: fsynced, renamed, its folder fsynced.
    pub fn commit(self, manifest: &Manifest) -> Result<Restored> {
        let committed = self.pending.commit(&self.target, self.overwrite)?;
        settle(committed, &self.target, manifest)
    }

    /// Put it in place once a barrier over its filesystem made it durable: renamed only, its
    /// folder to be fsynced by the caller.
    pub fn place_synced(self, manifest: &Manifest) -> Result<Restored> {
        let committed = self.pending.place_unsynced(&self.target, self.overwrite)?;
        settle(committed, &self.target, manifest)
    }

    /// Give the written file the mtime its source had when it was folded (when the manifest keeps
    /// one), before it is made durable: agents sort sessions by it and take a recent one for live.
    pub fn keep_mtime(&self, manifest: &Manifest) -> Result<()> {
        let Some(at) = manifest.session.modified() else {
            return Ok(());
        };
        let path = self.pending.path();
        self.pending
            .as_file()
            .set_modified(at)
            .with_path("set the mtime of", path)
    }
}

/// What a rename that found its target taken (without `overwrite`) means: the session is in
/// place if what appeared holds it.
fn settle(committed: Committed, target: &Path, manifest: &Manifest) -> Result<Restored> {
    match committed {
        Committed::Written => Ok(Restored::Written),
        Committed::AlreadyThere if holds(target, manifest)? => Ok(Restored::InPlace),
        Committed::AlreadyThere => Err(Error::refused(format!(
            "{} appeared while restoring; left as it is",
            crate::cli::human::path(target)
        ))),
    }
}

/// Whether `target` is a regular file holding exactly the session's bytes (its size, then its
/// sha256: a file of another size is not read).
fn holds(target: &Path, manifest: &Manifest) -> Result<bool> {
    let meta = target.symlink_metadata().with_path("stat", target)?;
    if !meta.is_file() || meta.len() != manifest.source.bytes {
        return Ok(false);
    }
    let file = std::fs::File::open(target).with_path("open", target)?;
    let (sha256, bytes) = crate::digest::hash_reader(file).with_path("read", target)?;
    Ok(bytes == manifest.source.bytes && sha256 == manifest.source.sha256)
}
