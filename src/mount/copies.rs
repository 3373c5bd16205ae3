//! Decoded copies of folded sessions a mount served whole, so that the kernel passes later reads
//! of them through to a file on disk, at the disk's own speed: a file the daemon serves is read
//! from the kernel's cache a page at a time (FUSE's cache keeps small pages), at well under half
//! the speed of the same bytes in a disk filesystem's cache.
//!
//! A copy is made of what the reads of a session serve, as they serve it (nothing is decoded
//! twice): each range is written at its place in an unnamed file (`O_TMPFILE`) in the folder it is
//! given (beside the store; under `--agents`, the agent's real folder, where it can become the
//! real file), and once every byte is written the copy is kept. What it holds is exactly what the
//! daemon served, every byte checked as it was decoded, as the kernel's cache would hold it. Copies
//! are kept up to a budget of bytes, the least recently opened let go first; being unnamed, they
//! leave nothing behind when the daemon stops, however it stops.
//!
//! Not for: reading sessions ([`super::session`]) or choosing how an open is read ([`super::modes`]).

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use crate::digest::Digest;

pub struct Copies {
    /// The folder copies are made in (none: copies are off).
    dir: Option<OwnedFd>,
    budget: u64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    kept: HashMap<Digest, Kept>,
    bytes: u64,
    tick: u64,
    /// Copies being written, shared by the opens that read the session.
    making: HashMap<Digest, Weak<Making>>,
    /// Copies let go that the kernel may still read (passed through to), for [`Copies::take`].
    let_go: HashMap<Digest, Weak<File>>,
}

struct Kept {
    file: Arc<File>,
    size: u64,
    used: u64,
}

/// A copy being written: the file, and the ranges of it written so far (sorted, apart).
pub struct Making {
    sha256: Digest,
    size: u64,
    file: Arc<File>,
    written: Mutex<Option<Vec<(u64, u64)>>>,
}

impl Copies {
    /// Copies made in `dir`, up to `budget` bytes of them (0: none).
    pub fn new(dir: &Path, budget: u64) -> Self {
        use rustix::fs::{Mode, OFlags};
        let dir = (budget > 0)
            .then(|| {
                rustix::fs::open(
                    dir,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            })
            .flatten();
        Self {
            dir,
            budget,
            state: Mutex::default(),
        }
    }

    /// The whole copy of session `sha256`, if one is kept.
    pub fn get(&self, sha256: &Digest) -> Option<Arc<File>> {
        let mut state = self.lock();
        state.tick += 1;
        let tick = state.tick;
        let kept = state.kept.get_mut(sha256)?;
        kept.used = tick;
        Some(kept.file.clone())
    }

    /// Whether a whole copy of session `sha256` is kept.
    pub fn has(&self, sha256: &Digest) -> bool {
        self.lock().kept.contains_key(sha256)
    }

    /// The copy of session `sha256`, kept or still read, taken out of the copies: to become the
    /// session's real file (the one a writer and the readers passed through to it then share).
    pub fn take(&self, sha256: &Digest) -> Option<Arc<File>> {
        let mut state = self.lock();
        if let Some(kept) = state.kept.remove(sha256) {
            state.bytes -= kept.size;
            return Some(kept.file);
        }
        state.let_go.remove(sha256)?.upgrade()
    }

    /// A copy of session `sha256` (of `size` bytes) to write as its reads are served: the one
    /// being written already, or a new one; `None` where no copy is made (copies off, a session
    /// too large for the budget, no unnamed file possible on that disk).
    pub fn making(&self, sha256: Digest, size: u64) -> Option<Arc<Making>> {
        let dir = self.dir.as_ref()?;
        // A session larger than half the budget would push out all the others.
        if size == 0 || size > self.budget / 2 {
            return None;
        }
        let mut state = self.lock();
        if let Some(making) = state.making.get(&sha256).and_then(Weak::upgrade) {
            return Some(making);
        }
        state.making.retain(|_, m| m.strong_count() > 0);
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::openat(
            dir,
            ".",
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .ok()?;
        let making = Arc::new(Making {
            sha256,
            size,
            file: Arc::new(File::from(fd)),
            written: Mutex::new(Some(Vec::new())),
        });
        state.making.insert(sha256, Arc::downgrade(&making));
        Some(making)
    }

    /// `bytes`, served from `offset` of the session `making` copies, written into it; the copy is
    /// kept once it holds every byte. A copy that cannot be written is given up, quietly: reads
    /// are served as before.
    pub fn served(&self, making: &Making, offset: u64, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let end = offset + bytes.len() as u64;
        let whole = {
            let mut written = lock(&making.written);
            let Some(ranges) = written.as_mut() else {
                return;
            };
            if covered(ranges, offset, end) {
                return;
            }
            if making.file.write_all_at(bytes, offset).is_err() {
                *written = None;
                return;
            }
            add(ranges, offset, end);
            let whole = ranges.as_slice() == [(0, making.size)];
            if whole {
                *written = None;
            }
            whole
        };
        if whole {
            self.keep(making.sha256, making.file.clone(), making.size);
        }
    }

    fn keep(&self, sha256: Digest, file: Arc<File>, size: u64) {
        let mut state = self.lock();
        state.tick += 1;
        let used = state.tick;
        if let Some(old) = state.kept.insert(sha256, Kept { file, size, used }) {
            state.bytes -= old.size;
        }
        state.bytes += size;
        state.making.remove(&sha256);
        // Letting a copy go while the kernel reads it is safe: the kernel holds it open itself.
        while state.bytes > self.budget {
            let oldest = state
                .kept
                .iter()
                .min_by_key(|(_, kept)| kept.used)
                .map(|(sha, _)| *sha)
                .expect("bytes are kept");
            let gone = state.kept.remove(&oldest).expect("listed");
            state.bytes -= gone.size;
            state.let_go.insert(oldest, Arc::downgrade(&gone.file));
        }
        state.let_go.retain(|_, file| file.strong_count() > 0);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }
}

/// Whether `ranges` hold all of `start..end`.
fn covered(ranges: &[(u64, u64)], start: u64, end: u64) -> bool {
    let at = ranges.partition_point(|&(_, e)| e < end);
    ranges.get(at).is_some_and(|&(s, _)| s <= start)
}

/// `start..end` added to `ranges`, merged with those it touches.
fn add(ranges: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let first = ranges.partition_point(|&(_, e)| e < start);
    let last = ranges.partition_point(|&(s, _)| s <= end);
    let (mut start, mut end) = (start, end);
    if first < last {
        start = start.min(ranges[first].0);
        end = end.max(ranges[last - 1].1);
    }
    ranges.splice(first..last, [(start, end)]);
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_where_they_touch_or_overlap_and_stay_apart_otherwise() {
        let mut ranges = Vec::new();
        add(&mut ranges, 10, 20);
        add(&mut ranges, 30, 40);
        assert_eq!(ranges, [(10, 20), (30, 40)]);
        add(&mut ranges, 20, 25);
        assert_eq!(ranges, [(10, 25), (30, 40)]);
        add(&mut ranges, 0, 5);
        assert_eq!(ranges, [(0, 5), (10, 25), (30, 40)]);
        add(&mut ranges, 4, 31);
        assert_eq!(ranges, [(0, 40)]);
        add(&mut ranges, 50, 60);
        add(&mut ranges, 35, 55);
        assert_eq!(ranges, [(0, 60)]);
    }

    #[test]
    fn covered_only_when_one_range_holds_all_of_it() {
        let ranges = [(0, 10), (20, 30)];
        assert!(covered(&ranges, 0, 10));
        assert!(covered(&ranges, 22, 30));
        assert!(!covered(&ranges, 5, 25));
        assert!(!covered(&ranges, 10, 20));
        assert!(!covered(&ranges, 25, 31));
        assert!(!covered(&[], 0, 1));
    }

    #[test]
    fn a_copy_is_kept_once_every_byte_is_written_in_any_order_and_the_budget_holds() {
        let dir = tempfile::tempdir().unwrap();
        let copies = Copies::new(dir.path(), 40);
        let (a, b) = (Digest::from_bytes([1; 32]), Digest::from_bytes([2; 32]));
        let making = copies.making(a, 20).expect("a copy is made");
        copies.served(&making, 10, &[b'y'; 10]);
        assert!(copies.get(&a).is_none(), "half written");
        copies.served(&making, 0, &[b'x'; 10]);
        let file = copies.get(&a).expect("kept once whole");
        let mut back = vec![0; 20];
        file.read_exact_at(&mut back, 0).unwrap();
        assert_eq!(back, [[b'x'; 10], [b'y'; 10]].concat());
        assert!(copies.making(b, 21).is_none(), "over half the budget");
        let making = copies.making(b, 20).unwrap();
        copies.served(&making, 0, &[b'z'; 20]);
        assert!(copies.get(&b).is_some());
        // A third pushes out the least recently used: `a` was used before `b`.
        let c = Digest::from_bytes([3; 32]);
        let making = copies.making(c, 20).unwrap();
        copies.served(&making, 0, &[b'w'; 20]);
        assert!(copies.get(&a).is_none() && copies.get(&b).is_some() && copies.get(&c).is_some());
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "copies have no name"
        );
    }
}
