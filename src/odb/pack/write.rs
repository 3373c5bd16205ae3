//! Writing a pack: objects go into blocks in the order they are added (neighbours are related, so
//! they compress together), full blocks are compressed on worker threads while the caller keeps
//! adding, and frames are written in block order to a temp file. `finish` writes the index and puts
//! both files in place durably, index last.
//!
//! Memory stays bounded whatever is added: the block being filled, a few blocks in flight, and
//! one small record per object (the index must be sorted at the end). Not for choosing what goes
//! into a pack or for deduplicating against other packs: the caller asks the object database.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::format::{self, BlockRecord, IndexHeader, ObjectRecord};
use super::workers::{Done, Workers};
use super::{PackInfo, PackOptions, index_path, pack_path, writer_error};
use crate::digest::{Digest, HashingWriter};
use crate::error::{IoContext, Remembered, Result};
use crate::files::atomic::{Pending, sync_parent};

/// Raw bytes waiting for or under compression, at most (but always room for one block).
const MAX_IN_FLIGHT_BYTES: usize = 32 << 20;

pub struct PackWriter {
    block_bytes: usize,
    tmp_dir: PathBuf,
    pack: Option<HashingWriter<Pending>>,
    pack_temp: PathBuf,
    /// Every object added, in pack order.
    objects: Vec<ObjectRecord>,
    seen: HashSet<Digest>,
    /// Every sealed block; its place in the pack is filled in when its frame is written.
    blocks: Vec<BlockRecord>,
    /// The block being filled, and the pack-order position of its first object.
    current: Vec<u8>,
    current_first: u32,
    workers: Workers,
    /// Blocks whose frames are in the pack file, and finished ones waiting for an earlier one.
    written: u32,
    ready: BTreeMap<u32, Done>,
    in_flight_bytes: usize,
    max_in_flight_blocks: usize,
    spare: Vec<Vec<u8>>,
    /// The buffer of the last block larger than two blocks' worth (an object handed over whole by
    /// [`add_owned`](Self::add_owned), or one too large for a block), once compressed: for the
    /// caller's next object handed over (see [`take_spare`](Self::take_spare)). One at most.
    owned_spare: Option<Vec<u8>>,
    raw_bytes: u64,
    /// The first error: what was added can no longer become a consistent pack, and every later
    /// call says why.
    failed: Option<Remembered>,
}

impl PackWriter {
    /// A writer whose temp files go to `tmp_dir`, which must be on the filesystem of the pack
    /// folder that [`PackWriter::finish`] will be given.
    pub fn new(tmp_dir: &Path, options: PackOptions) -> Result<Self> {
        let threads = options.threads.max(1);
        let block_bytes = options.block_bytes.max(1);
        let workers = Workers::new(
            threads,
            options.level,
            options.dictionary.as_deref(),
            block_bytes,
        )?;
        let pending = Pending::new_in(tmp_dir, ".pack-")?;
        let pack_temp = pending.path().to_path_buf();
        let mut pack = HashingWriter::new(pending);
        pack.write_all(&format::pack_header())
            .with_path("write", &pack_temp)?;
        Ok(Self {
            block_bytes,
            tmp_dir: tmp_dir.to_path_buf(),
            pack: Some(pack),
            pack_temp,
            objects: Vec::new(),
            seen: HashSet::new(),
            blocks: Vec::new(),
            current: Vec::new(),
            current_first: 0,
            workers,
            written: 0,
            ready: BTreeMap::new(),
            in_flight_bytes: 0,
            // Twice the threads keeps every worker busy while the caller fills the next block.
            max_in_flight_blocks: (2 * threads).min(MAX_IN_FLIGHT_BYTES / block_bytes).max(1),
            spare: Vec::new(),
            owned_spare: None,
            raw_bytes: 0,
            failed: None,
        })
    }

    /// Add an object, `raw` being the bytes whose sha256 is `digest`. False when this pack already
    /// holds it (nothing is added twice).
    pub fn add(&mut self, digest: &Digest, raw: &[u8]) -> Result<bool> {
        debug_assert_eq!(Digest::of(raw), *digest, "an object is named by its sha256");
        self.guard(|writer| {
            writer.add_object(digest, raw.len(), |block| block.extend_from_slice(raw))
        })
    }

    /// [`add`](Self::add), handing `raw` over: an object too large for a block becomes a block of
    /// its own without a copy (a long session's seed batches add up to hundreds of megabytes).
    pub fn add_owned(&mut self, digest: &Digest, raw: Vec<u8>) -> Result<bool> {
        if raw.len() < self.block_bytes {
            return self.add(digest, &raw);
        }
        debug_assert_eq!(
            Digest::of(&raw),
            *digest,
            "an object is named by its sha256"
        );
        // Too large for the block being filled, it is sealed first: `raw` becomes the next one
        // whole. Appended all the same to a block that holds bytes, so that none is ever dropped.
        self.guard(|writer| {
            writer.add_object(digest, raw.len(), |block| match block.is_empty() {
                true => *block = raw,
                false => block.extend_from_slice(&raw),
            })
        })
    }

    /// An empty buffer to fill with the next object to hand over whole: one an earlier such object
    /// came in, once compressed, else a new one. A long session's seed batches are tens of
    /// megabytes each: a buffer used again has its pages, where a new one faults each in.
    pub fn take_spare(&mut self) -> Vec<u8> {
        self.owned_spare.take().unwrap_or_default()
    }

    pub fn contains(&self, digest: &Digest) -> bool {
        self.seen.contains(digest)
    }

    /// Objects added so far.
    pub fn object_count(&self) -> u32 {
        self.objects.len() as u32
    }

    /// Raw bytes added so far.
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// Write the index, then put the pack and the index into `pack_dir` (created if missing), each
    /// fsynced and the folder fsynced after each rename, so that an index is never seen without
    /// its pack. A writer given no objects leaves nothing and returns `None`.
    pub fn finish(mut self, pack_dir: &Path) -> Result<Option<PackInfo>> {
        self.guard(|writer| writer.drain())?;
        if self.objects.is_empty() {
            return Ok(None);
        }
        let (pack, name, pack_bytes) = self.pack.take().expect("finish runs once").finish();
        let (index, index_bytes) = self.write_index(&name, pack_bytes)?;
        if !pack_dir.is_dir() {
            crate::files::create_private_dir(pack_dir)?;
            sync_parent(pack_dir)?;
        }
        pack.commit(&pack_path(pack_dir, &name), false)?;
        index.commit(&index_path(pack_dir, &name), false)?;
        Ok(Some(PackInfo {
            name,
            objects: self.objects.len() as u32,
            blocks: self.blocks.len() as u32,
            raw_bytes: self.raw_bytes,
            pack_bytes,
            index_bytes,
        }))
    }

    fn guard<T>(&mut self, work: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if let Some(first) = &self.failed {
            return Err(first.again("write a pack"));
        }
        let result = work(self);
        if let Err(e) = &result {
            self.failed = Some(Remembered::of(e));
        }
        result
    }

    /// Add the object of `len` bytes that `append` puts at the end of the block being filled.
    fn add_object(
        &mut self,
        digest: &Digest,
        len: usize,
        append: impl FnOnce(&mut Vec<u8>),
    ) -> Result<bool> {
        if self.seen.contains(digest) {
            return Ok(false);
        }
        if self.objects.len() >= u32::MAX as usize {
            return Err(writer_error("a pack holds fewer than 2^32 objects"));
        }
        let has_objects = self.objects.len() as u32 > self.current_first;
        if has_objects && self.current.len() + len > self.block_bytes {
            self.seal()?;
        }
        self.objects.push(ObjectRecord {
            digest: *digest.as_bytes(),
            raw_bytes: len as u64,
            block: self.blocks.len() as u32,
            offset: self.current.len() as u64,
        });
        self.seen.insert(*digest);
        append(&mut self.current);
        self.raw_bytes += len as u64;
        if self.current.len() >= self.block_bytes {
            self.seal()?;
        }
        Ok(true)
    }

    /// Hand the current block to the workers, first waiting while too much is in flight.
    fn seal(&mut self) -> Result<()> {
        let next = self.spare.pop().unwrap_or_default();
        let raw = std::mem::replace(&mut self.current, next);
        while self.in_flight() > 0
            && (self.in_flight() >= self.max_in_flight_blocks
                || self.in_flight_bytes + raw.len() > MAX_IN_FLIGHT_BYTES)
        {
            let done = self.workers.recv()?;
            self.accept(done)?;
        }
        let number = self.blocks.len() as u32;
        self.blocks.push(BlockRecord {
            pack_offset: 0,
            stored_bytes: 0,
            raw_bytes: raw.len() as u64,
            first_object: self.current_first,
        });
        self.current_first = self.objects.len() as u32;
        self.in_flight_bytes += raw.len();
        self.workers.send(number, raw)?;
        while let Some(done) = self.workers.try_recv() {
            self.accept(done)?;
        }
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.blocks.len() - self.written as usize
    }

    /// Take a finished block and write every frame that is now next in order.
    fn accept(&mut self, done: Done) -> Result<()> {
        self.in_flight_bytes -= done.raw.len();
        self.ready.insert(done.block, done);
        while let Some(mut done) = self.ready.remove(&self.written) {
            let frame = done.frame?;
            let pack = self
                .pack
                .as_mut()
                .expect("blocks are written before finish");
            let block = &mut self.blocks[self.written as usize];
            block.pack_offset = pack.bytes();
            block.stored_bytes = frame.len() as u64;
            pack.write_all(&frame).with_path("write", &self.pack_temp)?;
            self.written += 1;
            done.raw.clear();
            if done.raw.capacity() > 2 * self.block_bytes {
                self.owned_spare = Some(done.raw);
            } else if self.spare.len() < self.max_in_flight_blocks {
                self.spare.push(done.raw);
            }
        }
        Ok(())
    }

    /// Seal the last block and wait for every frame to be written.
    fn drain(&mut self) -> Result<()> {
        if self.objects.len() as u32 > self.current_first {
            self.seal()?;
        }
        while self.in_flight() > 0 {
            let done = self.workers.recv()?;
            self.accept(done)?;
        }
        Ok(())
    }

    /// The index (see `format`) in a temp file, not yet fsynced, and its length.
    fn write_index(&self, pack: &Digest, pack_bytes: u64) -> Result<(Pending, u64)> {
        let pending = Pending::new_in(&self.tmp_dir, ".idx-")?;
        let path = pending.path().to_path_buf();
        let mut out = HashingWriter::new(BufWriter::new(pending));
        let header = IndexHeader {
            objects: self.objects.len() as u32,
            blocks: self.blocks.len() as u32,
            pack_bytes,
            pack: *pack,
        };
        // `sorted[i]` is the pack-order position of the i-th object by digest. Sorted with their
        // digests beside them: looked up in `objects` for every comparison, those of a long
        // session's pack (67,234) took 13 ms to sort, 5.5 so, on the one core its fold's end
        // waits on.
        let mut keyed: Vec<([u8; 32], u32)> = (self.objects.iter())
            .zip(0..header.objects)
            .map(|(object, nth)| (object.digest, nth))
            .collect();
        keyed.sort_unstable();
        let sorted: Vec<u32> = keyed.into_iter().map(|(_, nth)| nth).collect();
        let mut fanout = [0u32; 256];
        for object in &self.objects {
            fanout[usize::from(object.digest[0])] += 1;
        }
        let mut position_of = vec![0u32; sorted.len()];
        (|| {
            out.write_all(&header.encode())?;
            let mut total = 0;
            for count in fanout {
                total += count;
                out.write_all(&total.to_be_bytes())?;
            }
            for (position, &nth) in sorted.iter().enumerate() {
                out.write_all(&self.objects[nth as usize].encode())?;
                position_of[nth as usize] = position as u32;
            }
            for block in &self.blocks {
                out.write_all(&block.encode())?;
            }
            for position in &position_of {
                out.write_all(&position.to_be_bytes())?;
            }
            let (mut out, checksum, bytes) = out.finish();
            out.write_all(checksum.as_bytes())?;
            debug_assert_eq!(bytes + 32, header.index_len());
            let pending = out.into_inner().map_err(|e| e.into_error())?;
            Ok((pending, header.index_len()))
        })()
        .with_path("write", &path)
    }
}
