//! Writing several folded sessions at once, block by block. Sessions share objects (a fork holds
//! its parent's history, any two the same file read) and a pack's block holds many objects:
//! written one session after another, a restore decodes the same blocks again each time they have
//! left the cache (on the generated 1.3 GB corpus, 2.9 GB decoded for 0.64 GB of distinct
//! objects). Here each block the sessions need is decoded once for all of them, each of its
//! objects written where each session has it, then each session is read back whole and checked
//! against its manifest's size and sha256, as a session streamed alone is.
//!
//! Not for: one session streamed to a writer (`reconstruct`), or putting files in place. Sessions
//! are written into files (restore) or into memory (`grep`'s filters, a few megabytes at a time).

use std::collections::HashMap;
use std::io::{self, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::Store;
use super::manifest::Manifest;
use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, IoContext, Result, sink_failed};
use crate::files::atomic::Pending;
use crate::odb::pack::Location;
use crate::odb::{Check, Member};

/// One session to write: its manifest, the empty file (or buffer) to write it into, and the target
/// it is for (errors name it).
pub struct Session<'a> {
    pub manifest: &'a Manifest,
    pub file: &'a dyn WriteAt,
    pub target: &'a Path,
}

/// Where a session's bytes go, written at offsets by several threads at once, then read back.
pub trait WriteAt: Sync {
    fn write_all_at(&self, bytes: &[u8], at: u64) -> io::Result<()>;
    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize>;
}

impl WriteAt for Pending {
    fn write_all_at(&self, bytes: &[u8], at: u64) -> io::Result<()> {
        Pending::write_all_at(self, bytes, at)
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        self.as_file().read_at(buf, at)
    }
}

/// A session's bytes in memory, its size known before.
pub struct Buffer(Mutex<Vec<u8>>);

impl Buffer {
    pub fn new(len: usize) -> Self {
        Self(Mutex::new(vec![0; len]))
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn bytes(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl WriteAt for Buffer {
    fn write_all_at(&self, bytes: &[u8], at: u64) -> io::Result<()> {
        let mut held = self.bytes();
        let range = usize::try_from(at)
            .ok()
            .and_then(|at| Some(at..at.checked_add(bytes.len())?))
            .filter(|range| range.end <= held.len())
            .ok_or_else(|| io::Error::other("a write past the session's size"))?;
        held[range].copy_from_slice(bytes);
        Ok(())
    }

    fn read_at(&self, buf: &mut [u8], at: u64) -> io::Result<usize> {
        let held = self.bytes();
        let from = usize::try_from(at).unwrap_or(usize::MAX).min(held.len());
        let n = buf.len().min(held.len() - from);
        buf[..n].copy_from_slice(&held[from..from + n]);
        Ok(n)
    }
}

/// One object of one session: where it is in its pack, and where it goes in the session's file.
struct ObjectCopy {
    session: usize,
    place: Location,
    to: u64,
}

/// The objects to copy out of each block the sessions need, by pack and block number.
type ByBlock = HashMap<(Digest, u32), (Arc<Member>, Vec<ObjectCopy>)>;

/// Each session written into its file and verified: one result for each, in order; a session
/// that fails fails alone.
pub fn write_sessions(store: &Store, sessions: &[Session<'_>]) -> Vec<Result<()>> {
    let failed: Vec<Mutex<Option<Error>>> = sessions.iter().map(|_| Mutex::new(None)).collect();
    let fail = |at: usize, e: Error| {
        let mut slot = failed[at].lock().expect("never poisoned");
        slot.get_or_insert_with(|| e.on_target(sessions[at].target.display()));
    };
    let ok = |at: usize| failed[at].lock().expect("never poisoned").is_none();

    let mut blocks = ByBlock::new();
    let mut one_by_one = Vec::new();
    for (at, session) in sessions.iter().enumerate() {
        if let Err(e) = plan(store, at, session.manifest, &mut blocks, &mut one_by_one) {
            fail(at, e);
        }
    }
    let blocks: Vec<_> = blocks.into_values().collect();
    blocks.par_iter().for_each(|(member, copies)| {
        let copies: Vec<&ObjectCopy> = copies.iter().filter(|c| ok(c.session)).collect();
        copy_block(store, member, &copies, sessions, &fail);
    });
    one_by_one.par_iter().for_each(|copy| {
        if ok(copy.session) {
            read_alone(store, copy, sessions, &fail);
        }
    });
    sessions.par_iter().enumerate().for_each(|(at, session)| {
        if ok(at)
            && let Err(e) = verify(store, session)
        {
            fail(at, e);
        }
    });
    failed
        .into_iter()
        .map(|slot| match slot.into_inner().expect("never poisoned") {
            Some(e) => Err(e),
            None => Ok(()),
        })
        .collect()
}

/// Where each of the session's objects goes: into `blocks` when a pack this handle lists holds
/// it, else (loose, the reference's, a pack added since) into `one_by_one`.
fn plan(
    store: &Store,
    session: usize,
    manifest: &Manifest,
    blocks: &mut ByBlock,
    one_by_one: &mut Vec<ObjectCopy>,
) -> Result<()> {
    store.odb().check_dictionary(&manifest.settings)?;
    let mut to = 0;
    for part in &manifest.parts {
        let object = &part.object;
        match store.odb().packed(&object.sha256)? {
            // An index that records another size is read alone, to be reported as such.
            Some((member, place)) if place.raw_bytes == object.raw_bytes => {
                let key = (*member.pack.name(), place.block);
                let (_, copies) = blocks.entry(key).or_insert_with(|| (member, Vec::new()));
                copies.push(ObjectCopy { session, place, to });
            }
            _ => one_by_one.push(ObjectCopy {
                session,
                place: Location {
                    digest: object.sha256,
                    raw_bytes: object.raw_bytes,
                    block: 0,
                    offset: 0,
                },
                to,
            }),
        }
        to += object.raw_bytes;
    }
    Ok(())
}

/// Write `copies`, all of one block of `member`'s pack: the block decoded once, each object's
/// bytes written where its session has them (runs of objects that follow one another in both, in
/// one write). A block too large to hold is read object by object. What fails, fails its session.
fn copy_block(
    store: &Store,
    member: &Member,
    copies: &[&ObjectCopy],
    sessions: &[Session<'_>],
    fail: &(dyn Fn(usize, Error) + Sync),
) {
    let Some(first) = copies.first() else {
        return;
    };
    let pack = &member.pack;
    let decoded = pack
        .block(first.place.block)
        .and_then(|block| Ok((pack.whole_block(&block, store.odb())?, block)));
    let (raw, block) = match decoded {
        Ok((Some(raw), block)) => (raw, block),
        Ok((None, _)) => {
            for copy in copies {
                read_alone(store, copy, sessions, fail);
            }
            return;
        }
        // A damaged block: each session that needed it is told which object of its was there.
        Err(e) => {
            for copy in copies {
                fail(
                    copy.session,
                    Error::object_corrupt(copy.place.digest, e.to_string()),
                );
            }
            return;
        }
    };
    let mut copies = copies.to_vec();
    copies.sort_by_key(|c| (c.session, c.to));
    let mut run: Option<(usize, Range<usize>, u64)> = None;
    for copy in copies {
        let range = match pack.range_in(&copy.place, &block) {
            Ok(range) => range,
            Err(e) => {
                fail(copy.session, e);
                continue;
            }
        };
        run = match run {
            Some((session, held, to))
                if session == copy.session
                    && held.end == range.start
                    && to + held.len() as u64 == copy.to =>
            {
                Some((session, held.start..range.end, to))
            }
            done => {
                write_run(&raw, done, sessions, fail);
                Some((copy.session, range, copy.to))
            }
        };
    }
    write_run(&raw, run, sessions, fail);
}

fn write_run(
    raw: &[u8],
    run: Option<(usize, Range<usize>, u64)>,
    sessions: &[Session<'_>],
    fail: &(dyn Fn(usize, Error) + Sync),
) {
    if let Some((session, range, to)) = run
        && let Err(e) = sessions[session].file.write_all_at(&raw[range], to)
    {
        fail(session, sink_failed(e));
    }
}

/// Read one object from wherever the store has it into its place in its session's file.
fn read_alone(
    store: &Store,
    copy: &ObjectCopy,
    sessions: &[Session<'_>],
    fail: &(dyn Fn(usize, Error) + Sync),
) {
    let mut out = Writer {
        file: sessions[copy.session].file,
        at: copy.to,
    };
    let place = &copy.place;
    let read =
        store
            .odb()
            .read_checked(&place.digest, Some(place.raw_bytes), &mut out, Check::Whole);
    if let Err(e) = read {
        fail(copy.session, e);
    }
}

/// Read the session's file back whole: its size and sha256 must be the manifest's source's.
fn verify(store: &Store, session: &Session<'_>) -> Result<()> {
    let mut hashing = HashingWriter::new(io::sink());
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0;
    loop {
        let n = session
            .file
            .read_at(&mut buf, at)
            .with_path("read back", session.target)?;
        if n == 0 {
            break;
        }
        hashing.write_all(&buf[..n]).expect("a sink takes all");
        at += n as u64;
    }
    let (_, sha256, bytes) = hashing.finish();
    let source = &session.manifest.source;
    if bytes == source.bytes && sha256 == source.sha256 {
        return Ok(());
    }
    Err(
        super::reconstruct::fault(store, session.manifest).unwrap_or_else(|| {
            Error::corrupt(format!(
                "reconstruction gives {bytes} bytes with sha256 {sha256}, the source had {} bytes with sha256 {}",
                source.bytes, source.sha256
            ))
        }),
    )
}

/// A `Write` at an offset of a file, going on from there.
struct Writer<'a> {
    file: &'a dyn WriteAt,
    at: u64,
}

impl Write for Writer<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.file.write_all_at(bytes, self.at)?;
        self.at += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
