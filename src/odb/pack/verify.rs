//! Checking a whole pack, as `fsck --full` does: the index sorted and consistent with the pack
//! (blocks tiling the file, objects tiling their blocks, the pack-order table a permutation), every
//! block's frame and zstd checksum, every object's sha256, and the pack's own sha256 against its
//! name. Every problem names the pack, the block and the objects it hits, so a caller can name the
//! sessions that lose something.
//!
//! Streams block by block: memory stays bounded whatever the pack's size. Not for repairing.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::format::PACK_HEADER_LEN;
use super::frame;
use super::read::{Block, Pack};
use crate::digest::{Digest, HashingWriter, hash_reader};
use crate::error::Error;
use crate::odb::dictionary::Dictionaries;

/// Something wrong with a pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub pack: Digest,
    /// The file at fault: the .pack or the .idx.
    pub file: PathBuf,
    pub block: Option<u32>,
    /// The objects it makes unreadable or untrustworthy.
    pub objects: Vec<Digest>,
    /// The whole message, naming the file (and the block).
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)?;
        match self.objects.as_slice() {
            [] => Ok(()),
            [one] => write!(f, " (object {one})"),
            many => write!(f, " ({} objects, first {})", many.len(), many[0]),
        }
    }
}

/// Every problem found in `pack`; none means every object reads back verified.
pub fn verify(pack: &Pack, dictionaries: &dyn Dictionaries) -> Vec<Problem> {
    let mut check = Check {
        pack,
        problems: Vec::new(),
    };
    check.sorted_table();
    check.pack_order_table();
    check.blocks(dictionaries);
    check.pack_digest();
    check.problems
}

struct Check<'a> {
    pack: &'a Pack,
    problems: Vec<Problem>,
}

impl Check<'_> {
    fn problem(&mut self, file: &Path, block: Option<u32>, objects: Vec<Digest>, why: String) {
        let what = match block {
            Some(block) => format!("{}: block {block}: {why}", file.display()),
            None => format!("{}: {why}", file.display()),
        };
        self.push(file, block, objects, what);
    }

    /// A problem a read reported, in the reader's words (which name the file and block).
    fn failed(&mut self, file: &Path, block: Option<u32>, objects: Vec<Digest>, error: Error) {
        self.push(file, block, objects, error.to_string());
    }

    fn push(&mut self, file: &Path, block: Option<u32>, objects: Vec<Digest>, what: String) {
        self.problems.push(Problem {
            pack: *self.pack.name(),
            file: file.to_path_buf(),
            block,
            objects,
            what,
        });
    }

    /// Digests strictly ascending, and the fanout counting them.
    fn sorted_table(&mut self) {
        let index = self.pack.index();
        let mut counts = [0u32; 256];
        let mut previous: Option<[u8; 32]> = None;
        for position in 0..self.pack.object_count() {
            let digest = index.object(position).digest;
            counts[usize::from(digest[0])] += 1;
            if let Some(previous) = previous.filter(|p| *p >= digest) {
                let objects = vec![Digest::from_bytes(previous), Digest::from_bytes(digest)];
                let what = format!("objects {} and {position} are out of order", position - 1);
                self.problem(index.path(), None, objects, what);
            }
            previous = Some(digest);
        }
        let mut total = 0;
        for (byte, count) in counts.into_iter().enumerate() {
            total += count;
            if index.fanout(byte as u8) != total {
                let what = format!("fanout entry {byte} does not count the table");
                self.problem(index.path(), None, Vec::new(), what);
                break;
            }
        }
    }

    /// Every object appears exactly once in pack order.
    fn pack_order_table(&mut self) {
        let index = self.pack.index();
        let count = self.pack.object_count();
        let mut seen = vec![false; count as usize];
        for nth in 0..count {
            let position = index.sorted_position(nth);
            match seen.get_mut(position as usize) {
                Some(seen @ false) => *seen = true,
                _ => {
                    let what = format!(
                        "pack-order entry {nth} names object {position} twice or out of range"
                    );
                    self.problem(index.path(), None, Vec::new(), what);
                }
            }
        }
    }

    /// Blocks tile the pack after its header; each block's objects tile it and read back.
    fn blocks(&mut self, dictionaries: &dyn Dictionaries) {
        let index_path = self.pack.index_path().to_path_buf();
        if self.pack.block_count() == 0 {
            self.problem(&index_path, None, Vec::new(), "it lists no blocks".into());
            return;
        }
        let mut expected_offset = PACK_HEADER_LEN;
        let mut expected_first = 0;
        for number in 0..self.pack.block_count() {
            let block = match self.pack.block(number) {
                Ok(block) => block,
                Err(e) => {
                    self.failed(&index_path, Some(number), Vec::new(), e);
                    continue;
                }
            };
            if block.pack_offset != expected_offset {
                let what = format!(
                    "it starts at {}, where the previous block ends at {expected_offset}",
                    block.pack_offset
                );
                self.problem(&index_path, Some(number), Vec::new(), what);
            }
            if block.objects.start != expected_first || block.objects.is_empty() {
                let what = format!(
                    "it holds pack-order objects {:?}, the previous block ends at {expected_first}",
                    block.objects
                );
                self.problem(&index_path, Some(number), Vec::new(), what);
            }
            expected_offset = block.pack_offset + block.stored_bytes;
            expected_first = block.objects.end;
            self.block(&block, dictionaries);
        }
        if expected_offset != self.pack.pack_bytes() {
            let what = format!(
                "its blocks end at {expected_offset} of {} bytes",
                self.pack.pack_bytes()
            );
            self.problem(self.pack.path(), None, Vec::new(), what);
        }
    }

    /// One block: its objects' places, then its frame decoded and each object hashed.
    fn block(&mut self, block: &Block, dictionaries: &dyn Dictionaries) {
        let index_path = self.pack.index_path().to_path_buf();
        let mut objects = Vec::new();
        let mut tiled = true;
        let mut offset = 0u64;
        for nth in block.objects.clone() {
            match self.pack.object_in_pack_order(nth) {
                Ok(at) if at.block == block.number && at.offset == offset => {
                    offset += at.raw_bytes;
                    objects.push(at);
                }
                Ok(at) => {
                    tiled = false;
                    let what = format!(
                        "pack-order object {nth} is at {}+{} of block {}, expected at {offset} of this one",
                        at.offset, at.raw_bytes, at.block
                    );
                    self.problem(&index_path, Some(block.number), vec![at.digest], what);
                    // Carry on from where this one says it ends, so that one misplaced object
                    // does not blame every object after it.
                    if at.block == block.number {
                        offset = at.offset.saturating_add(at.raw_bytes);
                    }
                }
                Err(e) => {
                    tiled = false;
                    self.failed(&index_path, Some(block.number), Vec::new(), e);
                }
            }
        }
        if tiled && offset != block.raw_bytes {
            tiled = false;
            let what = format!(
                "its objects hold {offset} bytes, the block {}",
                block.raw_bytes
            );
            let digests = objects.iter().map(|o| o.digest).collect();
            self.problem(&index_path, Some(block.number), digests, what);
        }
        let mut mismatched = Vec::new();
        let decoded = frame::stream_block(
            self.pack.file(),
            self.pack.path(),
            block.number,
            &block.record(),
            dictionaries,
            |stream| {
                if tiled {
                    for at in &objects {
                        let mut sink = HashingWriter::new(std::io::sink());
                        stream.copy(at.raw_bytes, &mut sink)?;
                        if sink.finish().1 != at.digest {
                            mismatched.push(at.digest);
                        }
                    }
                } else {
                    stream.copy(block.raw_bytes, &mut std::io::sink())?;
                }
                stream.finish()
            },
        );
        let path = self.pack.path().to_path_buf();
        if let Err(e) = decoded {
            let digests = objects.iter().map(|o| o.digest).collect();
            self.failed(&path, Some(block.number), digests, e);
        } else if !mismatched.is_empty() {
            let what = "objects' bytes do not match their sha256".to_string();
            self.problem(&path, Some(block.number), mismatched, what);
        }
    }

    /// The pack's bytes hash to its name.
    fn pack_digest(&mut self) {
        let path = self.pack.path().to_path_buf();
        let actual = File::open(&path).and_then(hash_reader);
        match actual {
            Ok((digest, _)) if digest == *self.pack.name() => {}
            Ok((digest, _)) => {
                let what = format!("its bytes hash to {digest}, not to its name");
                self.problem(&path, None, Vec::new(), what);
            }
            Err(e) => self.problem(&path, None, Vec::new(), format!("read: {e}")),
        }
    }
}
