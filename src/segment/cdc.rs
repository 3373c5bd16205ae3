//! The gap chunker: FastCDC v2020 (the pinned `fastcdc` crate) over the stream of residual bytes.
//!
//! Bytes are pushed as they come; a chunk is emitted as soon as its cut point is certain, which is
//! once `max` bytes are pending (a cut only ever looks at the `max` bytes after the previous one),
//! so the chunks are exactly those of FastCDC run over the whole gap at once, while memory stays
//! bounded by `max` plus what one push adds.

use fastcdc::v2020::{Normalization, cut, select_masks};

pub struct GapChunker {
    min: usize,
    avg: usize,
    max: usize,
    masks: (u64, u64),
    pending: Vec<u8>,
    /// Start of the bytes not yet emitted in `pending`.
    start: usize,
}

impl GapChunker {
    pub fn new(min: usize, avg: usize, max: usize) -> Self {
        Self {
            min,
            avg,
            max,
            masks: select_masks(avg, Normalization::Level1),
            pending: Vec::new(),
            start: 0,
        }
    }

    /// Add residual bytes; emit every chunk whose end is already decided.
    pub fn push<E>(&mut self, bytes: &[u8], emit: &mut impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        self.pending.extend_from_slice(bytes);
        while self.pending.len() - self.start >= self.max {
            self.emit_one(emit)?;
        }
        if self.start > 0 && self.start >= self.pending.len() / 2 {
            self.pending.drain(..self.start);
            self.start = 0;
        }
        Ok(())
    }

    /// End of a gap (before a field, at the end of the file): emit everything pending.
    pub fn flush<E>(&mut self, emit: &mut impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        while self.start < self.pending.len() {
            self.emit_one(emit)?;
        }
        self.pending.clear();
        self.start = 0;
        Ok(())
    }

    fn emit_one<E>(&mut self, emit: &mut impl FnMut(&[u8]) -> Result<(), E>) -> Result<(), E> {
        let rest = &self.pending[self.start..];
        let (mask_s, mask_l) = self.masks;
        let (_, len) = cut(rest, self.min, self.avg, self.max, mask_s, mask_l, mask_s << 1, mask_l << 1);
        let len = len.max(1).min(rest.len());
        emit(&rest[..len])?;
        self.start += len;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fastcdc::v2020::FastCDC;

    /// Deterministic pseudo-random bytes (xorshift), so the golden cut points never depend on a crate.
    pub fn noise(len: usize, mut seed: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 24) as u8
            })
            .collect()
    }

    fn chunk_lengths(data: &[u8], pieces: &[usize]) -> Vec<usize> {
        let mut chunker = GapChunker::new(4096, 16384, 65536);
        let mut out = Vec::new();
        let mut emit = |c: &[u8]| -> Result<(), ()> {
            out.push(c.len());
            Ok(())
        };
        let mut at = 0;
        for &n in pieces.iter().cycle() {
            if at >= data.len() {
                break;
            }
            let end = (at + n).min(data.len());
            chunker.push(&data[at..end], &mut emit).unwrap();
            at = end;
        }
        chunker.flush(&mut emit).unwrap();
        out
    }

    #[test]
    fn streaming_gives_the_cut_points_of_one_whole_pass() {
        let data = noise(1_000_000, 7);
        let whole: Vec<usize> = FastCDC::new(&data, 4096, 16384, 65536).map(|c| c.length).collect();
        assert_eq!(chunk_lengths(&data, &[1_000_000]), whole);
        assert_eq!(chunk_lengths(&data, &[1]), whole);
        assert_eq!(chunk_lengths(&data, &[7, 70_000, 333]), whole);
    }

    /// fastcdc is pinned because cut points changed between versions before: this fails if they move.
    #[test]
    fn golden_cut_points_of_fastcdc_5_0_0() {
        let data = noise(300_000, 42);
        let lengths = chunk_lengths(&data, &[300_000]);
        assert_eq!(lengths, GOLDEN);
        assert_eq!(lengths.iter().sum::<usize>(), 300_000);
    }

    const GOLDEN: &[usize] = &[
        17111, 23075, 13908, 32265, 17243, 24790, 24058, 20300, 20721, 20906, 18289, 21022, 16534, 5789, 10274, 13715,
    ];

    #[test]
    fn zeros_cut_at_max_and_short_gaps_are_one_chunk() {
        assert_eq!(chunk_lengths(&vec![0u8; 150_000], &[4096]), vec![65536, 65536, 18928]);
        assert_eq!(chunk_lengths(b"short", &[5]), vec![5]);
        assert_eq!(chunk_lengths(b"", &[1]), Vec::<usize>::new());
    }
}
