//! Lines of records done with, kept for the records made after them: a long session's records run
//! to megabytes, each larger than the one before, and glibc maps each such allocation afresh,
//! whose pages the kernel then zeroes as they are first written (perf, the fold of bench/long's
//! 1 GB rollout: 0.2 s of CPU, two fifths of building its records). A line taken again has its
//! pages. Few are wanted (a record is made as the one before it is batched), and small ones come
//! cheap from the allocator; those kept stay for the process's life (two, of a few megabytes).

use std::sync::Mutex;

/// At most this many lines are kept.
const KEPT: usize = 2;
/// Lines smaller than this are not kept.
const LARGE: usize = 1 << 20;

pub struct SpareLines(Mutex<Vec<String>>);

impl SpareLines {
    pub const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// An empty line with room for `bytes`: a kept one if there is one.
    pub fn take(&self, bytes: usize) -> String {
        let kept = self.0.lock().expect("never poisoned").pop();
        let mut line = kept.unwrap_or_default();
        line.clear();
        line.reserve(bytes);
        line
    }

    /// Keep `line` for a later [`take`](Self::take), if it is large and few are kept.
    pub fn keep(&self, line: String) {
        if line.capacity() < LARGE {
            return;
        }
        let mut kept = self.0.lock().expect("never poisoned");
        if kept.len() < KEPT {
            kept.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_lines_are_taken_again_emptied_and_few_are_kept() {
        let spares = SpareLines::new();
        let large = |fill: &str| fill.repeat(LARGE);
        let lines = [large("a"), large("b"), large("c")];
        let addresses: Vec<_> = lines.iter().map(|l| l.as_ptr()).collect();
        for line in lines {
            spares.keep(line);
        }
        spares.keep("small".into());
        let taken = [spares.take(10), spares.take(10)];
        assert!(taken.iter().all(|l| l.is_empty() && l.capacity() >= LARGE));
        // The last kept is taken first; the third large one and the small one were not kept.
        assert_eq!(taken[0].as_ptr(), addresses[1]);
        assert_eq!(taken[1].as_ptr(), addresses[0]);
        let fresh = spares.take(10);
        assert!(fresh.capacity() < LARGE, "none kept: a new line");
        // A kept line too small for what is asked grows.
        spares.keep(large("d"));
        assert!(spares.take(2 * LARGE).capacity() >= 2 * LARGE);
    }
}
