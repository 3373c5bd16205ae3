//! A pack's index, memory-mapped: checked once on open (header, length, checksum, fanout), then
//! read in place. Finding an object is a binary search over the fanout's range; nothing is loaded
//! into a map, so answering `has` costs the same memory for one pack as for a thousand.
//!
//! Not for checking each record against the pack (reads check what they use; `verify` checks
//! everything) and not for decoding anything.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use sha2::{Digest as _, Sha256};

use super::corrupt;
use super::format::{
    BLOCK_RECORD_LEN, BlockRecord, INDEX_HEADER_LEN, IndexHeader, OBJECT_RECORD_LEN,
    ORDER_RECORD_LEN, ObjectRecord, TRAILER_LEN, be_u32,
};
use crate::digest::Digest;
use crate::error::{IoContext, Result};

pub struct Index {
    map: Mmap,
    header: IndexHeader,
    path: PathBuf,
}

impl Index {
    /// Map and check the index at `path`, which must belong to the pack named `pack`.
    pub fn open(path: &Path, pack: &Digest) -> Result<Self> {
        let file = File::open(path).with_path("open pack index", path)?;
        let len = file.metadata().with_path("stat", path)?.len();
        if len < (INDEX_HEADER_LEN + super::format::FANOUT_LEN + TRAILER_LEN) as u64 {
            return Err(corrupt(path, format!("truncated: {len} bytes")));
        }
        // SAFETY: index files are immutable once renamed into place and are only ever replaced by
        // rename, never rewritten, so the mapped bytes do not change under us.
        let map = unsafe { Mmap::map(&file) }.with_path("map", path)?;
        let header = IndexHeader::decode(&map).map_err(|why| corrupt(path, why))?;
        if header.index_len() != len {
            return Err(corrupt(
                path,
                format!(
                    "{len} bytes, but its header's {} objects and {} blocks need {}",
                    header.objects,
                    header.blocks,
                    header.index_len()
                ),
            ));
        }
        let body = header.trailer_at();
        if Sha256::digest(&map[..body])[..] != map[body..] {
            return Err(corrupt(path, "checksum mismatch"));
        }
        if header.pack != *pack {
            return Err(corrupt(
                path,
                format!("it indexes pack {}, not {pack}", header.pack),
            ));
        }
        let index = Self {
            map,
            header,
            path: path.to_path_buf(),
        };
        index.check_fanout()?;
        Ok(index)
    }

    pub fn header(&self) -> &IndexHeader {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of objects whose digest's first byte is at most `byte`.
    pub fn fanout(&self, byte: u8) -> u32 {
        let at = INDEX_HEADER_LEN + 4 * usize::from(byte);
        be_u32(&self.map[at..at + 4])
    }

    /// The object at `position` of the sorted table (`position` < object count).
    pub fn object(&self, position: u32) -> ObjectRecord {
        let at = self.header.objects_at() + position as usize * OBJECT_RECORD_LEN;
        ObjectRecord::decode(&self.map[at..at + OBJECT_RECORD_LEN])
    }

    /// Block `number` (< block count).
    pub fn block(&self, number: u32) -> BlockRecord {
        let at = self.header.blocks_at() + number as usize * BLOCK_RECORD_LEN;
        BlockRecord::decode(&self.map[at..at + BLOCK_RECORD_LEN])
    }

    /// The sorted position of the object added `nth` (< object count); may be out of range in a
    /// corrupt index, which callers check.
    pub fn sorted_position(&self, nth: u32) -> u32 {
        let at = self.header.order_at() + nth as usize * ORDER_RECORD_LEN;
        be_u32(&self.map[at..at + ORDER_RECORD_LEN])
    }

    /// The sorted position of `digest`, by binary search within its fanout range.
    pub fn find(&self, digest: &Digest) -> Option<u32> {
        let first = digest.as_bytes()[0];
        let mut low = match first {
            0 => 0,
            _ => self.fanout(first - 1),
        };
        let mut high = self.fanout(first);
        while low < high {
            let middle = low + (high - low) / 2;
            let at = self.header.objects_at() + middle as usize * OBJECT_RECORD_LEN;
            match compare(&self.map[at..at + 32], digest.as_bytes()) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// The fanout must rise and end at the object count, or searches would read past the table.
    fn check_fanout(&self) -> Result<()> {
        let mut previous = 0;
        for byte in 0..=255u8 {
            let count = self.fanout(byte);
            if count < previous || count > self.header.objects {
                return Err(corrupt(
                    &self.path,
                    format!("fanout entry {byte} is out of order"),
                ));
            }
            previous = count;
        }
        if previous != self.header.objects {
            return Err(corrupt(
                &self.path,
                format!(
                    "its fanout counts {previous} objects, its header {}",
                    self.header.objects
                ),
            ));
        }
        Ok(())
    }
}

/// `a` against `b` (32 bytes each), as slices compare: by the first eight bytes as a number, which
/// settles almost every step of a search without calling `memcmp`.
fn compare(a: &[u8], b: &[u8; 32]) -> std::cmp::Ordering {
    let head = |bytes: &[u8]| u64::from_be_bytes(bytes[..8].try_into().expect("eight bytes"));
    head(a).cmp(&head(b)).then_with(|| a[8..32].cmp(&b[8..]))
}

#[cfg(test)]
mod tests {
    use super::compare;

    #[test]
    fn compare_orders_digests_as_slices_do() {
        let mut digests: Vec<[u8; 32]> = (0u8..=255)
            .map(|n| *crate::digest::Digest::of(&[n]).as_bytes())
            .collect();
        // Equal first eight bytes, so that the rest decides.
        let mut tail = digests[0];
        tail[31] ^= 1;
        digests.push(tail);
        digests.push([0; 32]);
        digests.push([255; 32]);
        for a in &digests {
            for b in &digests {
                assert_eq!(compare(a, b), a[..].cmp(&b[..]), "{a:?} against {b:?}");
            }
        }
    }
}
