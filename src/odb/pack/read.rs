//! Reading a pack: open it (checking that its index belongs to it), find objects, stream an
//! object's bytes out verified, and list its objects and blocks in pack order.
//!
//! Every read checks the index entries it uses against the pack before trusting them, decodes
//! the object's block (from the shared [`BlockCache`] when it is there) and checks the object's
//! size and sha256. Not for checking a whole pack at once: that is [`super::verify`].

use std::fs::File;
use std::io::Write;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cache::{BlockCache, Decoded};
use super::format::{self, BlockRecord, PACK_HEADER_LEN};
use super::index::Index;
use super::{corrupt, corrupt_block, corrupt_object, frame};
use crate::digest::{Digest, HashingWriter};
use crate::error::{IoContext, Result};
use crate::odb::Check;
use crate::odb::dictionary::Dictionaries;

/// Blocks up to this size are decoded whole (and cached); larger ones, which hold one large
/// object or were written with a very large block target, are streamed.
const MAX_WHOLE_BLOCK: u64 = 8 << 20;

/// Where an object lives in a pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub digest: Digest,
    pub raw_bytes: u64,
    pub block: u32,
    /// Offset of the object's first byte in its block's raw bytes.
    pub offset: u64,
}

/// A block as the index describes it, checked to lie inside the pack file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub number: u32,
    pub pack_offset: u64,
    pub stored_bytes: u64,
    pub raw_bytes: u64,
    /// Its objects, as positions in pack order (see [`Pack::object_in_pack_order`]).
    pub objects: Range<u32>,
}

impl Block {
    /// The index record this was read from.
    pub(super) fn record(&self) -> BlockRecord {
        BlockRecord {
            pack_offset: self.pack_offset,
            stored_bytes: self.stored_bytes,
            raw_bytes: self.raw_bytes,
            first_object: self.objects.start,
        }
    }
}

pub struct Pack {
    name: Digest,
    path: PathBuf,
    file: File,
    index: Index,
    cache: Option<Arc<BlockCache>>,
}

impl Pack {
    /// Open pack `name` in `dir`: its header, and its index's header, length, checksum and fanout,
    /// and that the index was written for this pack (its name and length). Records are checked
    /// as they are used.
    pub fn open(dir: &Path, name: &Digest) -> Result<Self> {
        let path = super::pack_path(dir, name);
        let index = Index::open(&super::index_path(dir, name), name)?;
        let file = File::open(&path).with_path("open pack", &path)?;
        let len = file.metadata().with_path("stat", &path)?.len();
        if len != index.header().pack_bytes {
            return Err(corrupt(
                &path,
                format!(
                    "{len} bytes, its index records {}",
                    index.header().pack_bytes
                ),
            ));
        }
        let mut header = [0u8; PACK_HEADER_LEN as usize];
        file.read_exact_at(&mut header, 0)
            .with_path("read", &path)?;
        format::check_pack_header(&header).map_err(|why| corrupt(&path, why))?;
        Ok(Self {
            name: *name,
            path,
            file,
            index,
            cache: None,
        })
    }

    /// Share `cache` for decoded blocks (one cache for all the packs of a store).
    pub fn with_cache(mut self, cache: Arc<BlockCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    pub fn name(&self) -> &Digest {
        &self.name
    }

    /// The .pack file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The .idx file.
    pub fn index_path(&self) -> &Path {
        self.index.path()
    }

    pub fn object_count(&self) -> u32 {
        self.index.header().objects
    }

    pub fn block_count(&self) -> u32 {
        self.index.header().blocks
    }

    /// The size of the .idx file.
    pub fn index_bytes(&self) -> u64 {
        self.index.header().index_len()
    }

    /// The size of the .pack file.
    pub fn pack_bytes(&self) -> u64 {
        self.index.header().pack_bytes
    }

    pub fn contains(&self, digest: &Digest) -> bool {
        self.index.find(digest).is_some()
    }

    pub fn find(&self, digest: &Digest) -> Option<Location> {
        let record = self.index.object(self.index.find(digest)?);
        Some(Location {
            digest: *digest,
            raw_bytes: record.raw_bytes,
            block: record.block,
            offset: record.offset,
        })
    }

    /// Stream the object at `at` into `out` and check it: its size against the index and, when
    /// given, against `expected` (before decoding anything), and as `check` says, its bytes
    /// against its sha256. Returns the raw size. Frames written with a dictionary are decoded
    /// with the one `dictionaries` gives for the id in their header.
    ///
    /// Bytes reach `out` before the final check: callers that must not expose unverified bytes
    /// write into a temp file or buffer and act on the result.
    pub fn read(
        &self,
        at: &Location,
        expected: Option<u64>,
        out: &mut dyn Write,
        dictionaries: &dyn Dictionaries,
        check: Check,
    ) -> Result<u64> {
        if let Some(expected) = expected.filter(|&e| e != at.raw_bytes) {
            return Err(corrupt_object(
                &self.path,
                &at.digest,
                format!(
                    "the index records {} bytes, {expected} were expected",
                    at.raw_bytes
                ),
            ));
        }
        let block = self.block(at.block)?;
        let range = self.range_in(at, &block)?;
        let mut hashing = None;
        let sink: &mut dyn Write = match check {
            Check::Object => hashing.insert(HashingWriter::new(out)),
            Check::Whole | Check::Frame => out,
        };
        if block.raw_bytes <= MAX_WHOLE_BLOCK {
            let raw = self.decoded(&block, dictionaries)?;
            sink.write_all(&raw[range])
                .map_err(crate::error::sink_failed)?;
        } else {
            frame::stream_block(
                &self.file,
                &self.path,
                block.number,
                &block.record(),
                dictionaries,
                |stream| {
                    stream.copy(at.offset, &mut std::io::sink())?;
                    stream.copy(at.raw_bytes, sink)?;
                    if at.offset + at.raw_bytes == block.raw_bytes {
                        stream.finish()?;
                    }
                    Ok(())
                },
            )?;
        }
        if let Some(hashing) = hashing {
            let (_, actual, _) = hashing.finish();
            if actual != at.digest {
                return Err(corrupt_object(
                    &self.path,
                    &at.digest,
                    format!("its bytes in block {} hash to {actual}", at.block),
                ));
            }
        }
        Ok(at.raw_bytes)
    }

    /// Block `number`, checked to lie inside the pack and to own a valid range of objects.
    pub fn block(&self, number: u32) -> Result<Block> {
        if number >= self.block_count() {
            return Err(corrupt(
                self.index.path(),
                format!("an object names block {number} of {}", self.block_count()),
            ));
        }
        let record = self.index.block(number);
        let objects_end = match number + 1 {
            next if next == self.block_count() => self.object_count(),
            next => self.index.block(next).first_object,
        };
        let bad = |why: String| corrupt_block(&self.path, number, why);
        let end = record.pack_offset.checked_add(record.stored_bytes);
        if record.pack_offset < PACK_HEADER_LEN || end.is_none_or(|end| end > self.pack_bytes()) {
            return Err(bad(format!(
                "the index places it at {}+{}, outside the pack's {} bytes",
                record.pack_offset,
                record.stored_bytes,
                self.pack_bytes()
            )));
        }
        if record.stored_bytes > frame::max_stored_bytes(record.raw_bytes) {
            return Err(bad(format!(
                "{} stored bytes cannot hold {} raw bytes",
                record.stored_bytes, record.raw_bytes
            )));
        }
        if record.first_object > objects_end {
            return Err(bad(format!(
                "its objects start at {} but the next block's at {objects_end}",
                record.first_object
            )));
        }
        Ok(Block {
            number,
            pack_offset: record.pack_offset,
            stored_bytes: record.stored_bytes,
            raw_bytes: record.raw_bytes,
            objects: record.first_object..objects_end,
        })
    }

    /// Every block, in pack order.
    pub fn blocks(&self) -> impl Iterator<Item = Result<Block>> + '_ {
        (0..self.block_count()).map(|number| self.block(number))
    }

    /// Every object, in pack order (the order they were added).
    pub fn objects(&self) -> impl Iterator<Item = Result<Location>> + '_ {
        (0..self.object_count()).map(|nth| self.object_in_pack_order(nth))
    }

    /// The object added `nth` (< object count).
    pub fn object_in_pack_order(&self, nth: u32) -> Result<Location> {
        let position = self.index.sorted_position(nth);
        if position >= self.object_count() {
            return Err(corrupt(
                self.index.path(),
                format!(
                    "pack-order entry {nth} names object {position} of {}",
                    self.object_count()
                ),
            ));
        }
        let record = self.index.object(position);
        Ok(Location {
            digest: Digest::from_bytes(record.digest),
            raw_bytes: record.raw_bytes,
            block: record.block,
            offset: record.offset,
        })
    }

    /// The mapped index, for checking its tables.
    pub(super) fn index(&self) -> &Index {
        &self.index
    }

    /// The open .pack file, for streaming its blocks.
    pub(super) fn file(&self) -> &File {
        &self.file
    }

    /// Where in `block`'s raw bytes the object at `at` lies, as the index says: an error when
    /// that is outside the block (a damaged index).
    pub fn range_in(&self, at: &Location, block: &Block) -> Result<Range<usize>> {
        match at.offset.checked_add(at.raw_bytes) {
            Some(end) if end <= block.raw_bytes => Ok(at.offset as usize..end as usize),
            _ => Err(corrupt_object(
                &self.path,
                &at.digest,
                format!(
                    "the index places it at {}+{} of block {}, which holds {} bytes",
                    at.offset, at.raw_bytes, at.block, block.raw_bytes
                ),
            )),
        }
    }

    /// A block's raw bytes whole, for taking many of its objects out at once: `None` when it is
    /// too large to hold in memory (its objects are read one by one, streaming). Not checked
    /// against the objects' names: the caller checks what it makes of them.
    pub fn whole_block(
        &self,
        block: &Block,
        dictionaries: &dyn Dictionaries,
    ) -> Result<Option<Decoded>> {
        if block.raw_bytes > MAX_WHOLE_BLOCK {
            return Ok(None);
        }
        self.decoded(block, dictionaries).map(Some)
    }

    /// A block's raw bytes, from the cache or decoded (and then cached).
    fn decoded(&self, block: &Block, dictionaries: &dyn Dictionaries) -> Result<Decoded> {
        if let Some(raw) = self
            .cache
            .as_ref()
            .and_then(|c| c.get(&self.name, block.number))
        {
            return Ok(raw);
        }
        let mut stored = vec![0u8; block.stored_bytes as usize];
        self.file
            .read_exact_at(&mut stored, block.pack_offset)
            .with_path("read", &self.path)?;
        let raw = Arc::new(frame::decode_block(
            &self.path,
            block.number,
            &block.record(),
            &stored,
            dictionaries,
        )?);
        if let Some(cache) = &self.cache {
            cache.insert(&self.name, block.number, raw.clone());
        }
        Ok(raw)
    }
}
