//! The segmenter's sink that turns parts into manifest entries: each part hashed and, depending
//! on the mode, stored, or measured against the store without writing (a dry run), or only hashed.

use std::collections::HashSet;
use std::sync::Mutex;

use super::Store;
use super::manifest::{ObjectRef, Part, PartKind as ManifestKind};
use crate::digest::Digest;
use crate::error::Result;
use crate::odb::Encoder;
use crate::segment::{PartKind, PartSink};

pub enum Mode<'a> {
    /// Name the parts; touch no store.
    HashOnly,
    /// Count what writing would add to `store`, compressing new parts to measure them; write nothing.
    /// The set holds the objects already counted as new in this dry run, shared by every session
    /// it measures, so that what they would dedupe against each other is counted as such.
    DryRun(&'a Store, Encoder, &'a Mutex<HashSet<Digest>>),
    /// Store every part that is not there yet.
    Write(&'a Store, Encoder),
}

/// What a run added and what it found already stored.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WriteStats {
    pub parts: u64,
    /// Raw bytes of parts that were (or would be) new objects.
    pub new_raw_bytes: u64,
    /// Their compressed size.
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

pub struct PartWriter<'a, F: FnMut(Part) -> Result<()>> {
    mode: Mode<'a>,
    record: F,
    pub stats: WriteStats,
}

impl<'a, F: FnMut(Part) -> Result<()>> PartWriter<'a, F> {
    /// `record` receives each part's manifest entry, in order.
    pub fn new(mode: Mode<'a>, record: F) -> Self {
        Self {
            mode,
            record,
            stats: WriteStats::default(),
        }
    }

    /// The mode back, with its encoder, for the next file.
    pub fn into_mode(self) -> Mode<'a> {
        self.mode
    }
}

impl<F: FnMut(Part) -> Result<()>> PartSink for PartWriter<'_, F> {
    fn part(&mut self, kind: PartKind<'_>, bytes: &[u8]) -> Result<()> {
        let sha256 = Digest::of(bytes);
        let raw_bytes = bytes.len() as u64;
        let (stored_bytes, created) = match &mut self.mode {
            Mode::HashOnly => (0, false),
            Mode::Write(store, encoder) => {
                let stored = store.odb().put(&sha256, bytes, encoder)?;
                (stored.stored_bytes, stored.created)
            }
            Mode::DryRun(store, encoder, counted) => match store.odb().stored_bytes(&sha256)? {
                Some(n) => (n, false),
                None if !counted.lock().expect("never poisoned").insert(sha256) => (0, false),
                None => (encoder.compressed_len(bytes)?, true),
            },
        };
        self.stats.parts += 1;
        if created {
            self.stats.new_objects += 1;
            self.stats.new_raw_bytes += raw_bytes;
            self.stats.new_stored_bytes += stored_bytes;
        } else if !matches!(self.mode, Mode::HashOnly) {
            self.stats.dedup_raw_bytes += raw_bytes;
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
