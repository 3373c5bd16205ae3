//! A least-recently-used cache of decoded blocks, bounded in bytes and shared across threads and
//! packs, so that restoring a session whose many small objects share a block decodes it once.
//!
//! Not a cache of objects or of compressed bytes (the page cache keeps those), and not part of
//! the format: dropping it changes speed, never results.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::digest::Digest;

/// Enough for a restore's working set of blocks at every block size we write.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// Enough for a few blocks at every block size we write (the cache keeps a block of at most a
/// quarter of its budget), for readers that come back only to neighbouring blocks: the batches of
/// a seed index, which neighbouring sessions share, and what a fold reads of what it folded
/// before (a full cache added its 64 MiB to a re-fold's peak).
pub const FEW_BLOCKS_BYTES: usize = 4 * super::AGGRESSIVE_BLOCK_BYTES;

/// A block of a pack: the pack's name and the block's number.
type Key = (Digest, u32);

/// A block's raw bytes, as decoded: shared as the `Vec` they were decoded into, since making
/// them an `Arc<[u8]>` would copy every block once more.
pub type Decoded = Arc<Vec<u8>>;

pub struct BlockCache {
    budget: AtomicUsize,
    inner: Mutex<Lru>,
}

#[derive(Default)]
struct Lru {
    entries: HashMap<Key, (Decoded, u64)>,
    /// Entries by last use, oldest first.
    by_use: BTreeMap<u64, Key>,
    clock: u64,
    bytes: usize,
}

impl BlockCache {
    /// A cache holding at most `budget` bytes of decoded blocks.
    pub fn new(budget: usize) -> Self {
        Self {
            budget: AtomicUsize::new(budget),
            inner: Mutex::new(Lru::default()),
        }
    }

    /// Hold at most `budget` bytes from now on (evicting down to it).
    pub fn set_budget(&self, budget: usize) {
        self.budget.store(budget, Ordering::Relaxed);
        self.lock().evict_to(budget);
    }

    /// Whether a block of `len` bytes would be kept at all: one larger than a quarter of the
    /// budget would push out the working set it is meant to serve.
    pub fn admits(&self, len: u64) -> bool {
        len <= (self.budget.load(Ordering::Relaxed) / 4) as u64
    }

    pub fn get(&self, pack: &Digest, block: u32) -> Option<Decoded> {
        let mut lru = self.lock();
        let lru = &mut *lru;
        let (bytes, used) = lru.entries.get_mut(&(*pack, block))?;
        lru.by_use.remove(used);
        lru.clock += 1;
        *used = lru.clock;
        lru.by_use.insert(lru.clock, (*pack, block));
        Some(bytes.clone())
    }

    pub fn insert(&self, pack: &Digest, block: u32, bytes: Decoded) {
        if !self.admits(bytes.len() as u64) {
            return;
        }
        let mut lru = self.lock();
        let lru = &mut *lru;
        lru.clock += 1;
        lru.bytes += bytes.len();
        if let Some((old, used)) = lru.entries.insert((*pack, block), (bytes, lru.clock)) {
            lru.by_use.remove(&used);
            lru.bytes -= old.len();
        }
        lru.by_use.insert(lru.clock, (*pack, block));
        lru.evict_to(self.budget.load(Ordering::Relaxed));
    }

    /// Bytes currently held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        // A panic elsewhere cannot leave the map half-updated in a way that matters: worst case a
        // block is decoded again.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Lru {
    fn evict_to(&mut self, budget: usize) {
        while self.bytes > budget {
            let (_, key) = self.by_use.pop_first().expect("bytes are held by entries");
            let (evicted, _) = self.entries.remove(&key).expect("entries and uses agree");
            self.bytes -= evicted.len();
        }
    }
}

impl Default for BlockCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_blocks_room_keeps_blocks_of_every_size_packs_are_written_with() {
        let cache = BlockCache::new(FEW_BLOCKS_BYTES);
        assert!(cache.admits(super::super::AGGRESSIVE_BLOCK_BYTES as u64));
        assert!(cache.admits(super::super::DEFAULT_BLOCK_BYTES as u64));
    }

    #[test]
    fn evicts_the_least_recently_used_within_its_budget() {
        let cache = BlockCache::new(400);
        let pack = Digest::of(b"p");
        let block = |n: u8| Arc::new(vec![n; 100]);
        for n in 0..4 {
            cache.insert(&pack, u32::from(n), block(n));
        }
        assert_eq!(cache.bytes(), 400);
        assert!(cache.get(&pack, 0).is_some(), "0 is now the most recent");
        cache.insert(&pack, 4, block(4));
        assert_eq!(cache.bytes(), 400);
        assert!(cache.get(&pack, 1).is_none(), "1 was the least recent");
        assert_eq!(cache.get(&pack, 0).unwrap()[0], 0);
        assert!(cache.get(&Digest::of(b"other"), 0).is_none());
        cache.insert(&pack, 9, Arc::new(vec![0u8; 101]));
        assert!(cache.get(&pack, 9).is_none(), "too large to admit");
        cache.insert(&pack, 4, block(44));
        assert_eq!(cache.get(&pack, 4).unwrap()[0], 44);
        assert_eq!(cache.bytes(), 400);
        cache.set_budget(200);
        assert_eq!(cache.bytes(), 200);
        assert!(cache.get(&pack, 4).is_some(), "the most recent stays");
        cache.insert(&pack, 5, Arc::from(vec![0u8; 51]));
        assert!(
            cache.get(&pack, 5).is_none(),
            "a quarter of the new budget at most"
        );
    }
}
