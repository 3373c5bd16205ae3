//! The segmenter's sink that turns parts into manifest entries: each part hashed and, depending
//! on the mode, added to a pack, or measured against the store without writing (a dry run), or only
//! hashed. It also hashes the parts as it receives them, so that a manifest can be checked against
//! its source from the bytes actually written, without reading them back: the sha256 of the whole
//! is taken here, once, and the reader of the source only fingerprints what it read.

use std::collections::HashSet;
use std::sync::Mutex;

use super::manifest::{ObjectRef, Part, PartKind as ManifestKind};
use crate::digest::{Digest, Fingerprint, Hasher, Midstate, SoFar};
use crate::error::Result;
use crate::odb::pack::PackWriter;
use crate::odb::{Encoder, Odb};
use crate::segment::{PartKind, PartSink, Summary};

pub enum Mode<'a> {
    /// Name the parts; touch no store.
    HashOnly,
    /// Count what writing would add to the store, compressing new parts to measure them; write
    /// nothing. The set holds the objects already counted as new in this dry run, shared by every
    /// session it measures, so that what they would dedupe against each other is counted as such.
    DryRun(&'a Odb, &'a mut Encoder, &'a Mutex<HashSet<Digest>>),
    /// Add every part the store does not hold to the pack being written. `pending` holds what the
    /// run's packs hold, committed or not (only the run writes packs through the store's handle):
    /// one copy each, and the run commits every pack before any manifest.
    Pack(&'a Odb, &'a mut PackWriter, &'a Mutex<HashSet<Digest>>),
}

/// What a run added and what it found already stored.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WriteStats {
    pub parts: u64,
    /// Raw bytes of parts that were (or would be) new objects.
    pub new_raw_bytes: u64,
    /// Their compressed size: their share of the pack blocks they were written in (a dry run
    /// estimates it by compressing them together in blocks of the same size).
    pub new_stored_bytes: u64,
    pub new_objects: u64,
    /// Raw bytes of parts whose object was already stored (or seen earlier in this run).
    pub dedup_raw_bytes: u64,
}

impl std::ops::AddAssign for WriteStats {
    fn add_assign(&mut self, o: Self) {
        self.parts += o.parts;
        self.new_raw_bytes += o.new_raw_bytes;
        self.new_stored_bytes += o.new_stored_bytes;
        self.new_objects += o.new_objects;
        self.dedup_raw_bytes += o.dedup_raw_bytes;
    }
}

/// What a [`PartWriter`] did.
pub struct Written {
    pub parts: Summary,
    /// The parts' fingerprint, for the reader's to be checked against.
    pub fingerprint: Fingerprint,
    /// The sha256 of the first bytes [`PartWriter::after`] was to note, when there were that many.
    pub at_mark: Option<Digest>,
    /// What hashed the bytes before the last part, for a fold of the source grown to go on from.
    pub before_last: Option<Midstate>,
    pub stats: WriteStats,
    pub created: Vec<Digest>,
}

pub struct PartWriter<'a, F: FnMut(Part) -> Result<()>> {
    mode: Mode<'a>,
    record: F,
    written: SoFar,
    /// `written` as the last part began.
    before_last: Option<Hasher>,
    /// A dry run's new objects waiting to be compressed together, as a pack's block would be.
    block: Vec<u8>,
    /// The objects this writer added (or, in a dry run, would add), each once.
    created: Vec<Digest>,
    stats: WriteStats,
}

impl<'a, F: FnMut(Part) -> Result<()>> PartWriter<'a, F> {
    /// `record` receives each part's manifest entry, in order.
    pub fn new(mode: Mode<'a>, record: F) -> Self {
        Self {
            mode,
            record,
            written: SoFar::of(Hasher::default(), None),
            before_last: None,
            block: Vec::new(),
            created: Vec::new(),
            stats: WriteStats::default(),
        }
    }

    /// The parts follow bytes hashed already (a grown session's folded prefix, as read from its
    /// source): the size and sha256 of what was written go on from `prefix`'s, noting what it
    /// was to note.
    pub fn after(mut self, prefix: SoFar) -> Self {
        self.written = prefix;
        self
    }

    /// What was written: the size and sha256 of the parts as they were received, the counts (a
    /// dry run's last estimate made), and the objects added.
    pub fn finish(mut self) -> Result<Written> {
        self.estimate()?;
        let written = self.written.hasher();
        Ok(Written {
            parts: Summary {
                bytes: written.bytes(),
                sha256: written.sha256(),
            },
            fingerprint: written.fingerprint(),
            at_mark: self.written.at_mark(),
            before_last: self.before_last.map(|hasher| hasher.midstate()),
            stats: self.stats,
            created: self.created,
        })
    }

    /// A dry run: compress the new objects gathered so far together, as a pack's block would be.
    fn estimate(&mut self) -> Result<()> {
        if let Mode::DryRun(_, encoder, _) = &mut self.mode
            && !self.block.is_empty()
        {
            self.stats.new_stored_bytes += encoder.compressed_len(&self.block)?;
            self.block.clear();
        }
        Ok(())
    }
}

impl<F: FnMut(Part) -> Result<()>> PartSink for PartWriter<'_, F> {
    fn part(&mut self, kind: PartKind<'_>, bytes: &[u8]) -> Result<()> {
        self.before_last = Some(self.written.hasher().clone());
        self.written.add(bytes);
        let sha256 = Digest::of(bytes);
        let raw_bytes = bytes.len() as u64;
        let (stored_bytes, created) = match &mut self.mode {
            Mode::HashOnly => (0, false),
            Mode::Pack(odb, writer, pending) => {
                // What the run packed is named without a look in its packs (its share is
                // recorded once they are committed); only the rest of the store is searched.
                if writer.contains(&sha256)
                    || pending.lock().expect("never poisoned").contains(&sha256)
                {
                    (0, false)
                } else if let Some(found) = odb.reuse_unwritten(&sha256)? {
                    (found.stored_bytes, false)
                } else if !pending.lock().expect("never poisoned").insert(sha256) {
                    (0, false)
                } else {
                    writer.add(&sha256, bytes)?;
                    (0, true)
                }
            }
            Mode::DryRun(odb, _, counted) => match odb.stored_bytes(&sha256)? {
                Some(n) => (n, false),
                None if !counted.lock().expect("never poisoned").insert(sha256) => (0, false),
                None => {
                    self.block.extend_from_slice(bytes);
                    (0, true)
                }
            },
        };
        self.stats.parts += 1;
        if created {
            self.created.push(sha256);
            self.stats.new_objects += 1;
            self.stats.new_raw_bytes += raw_bytes;
        } else if !matches!(self.mode, Mode::HashOnly) {
            self.stats.dedup_raw_bytes += raw_bytes;
        }
        if self.block.len() >= crate::odb::pack::DEFAULT_BLOCK_BYTES {
            self.estimate()?;
        }
        let (kind, json_path) = match kind {
            PartKind::Residual => (ManifestKind::Residual, None),
            PartKind::Field { json_path } => (ManifestKind::Field, json_path.map(str::to_string)),
        };
        (self.record)(Part {
            kind,
            json_path,
            object: ObjectRef {
                sha256,
                raw_bytes,
                stored_bytes,
            },
        })
    }
}
