//! A session's trigram filter: which runs of three bytes the text a search reads in it holds
//! (ASCII letters lowered), as one bitmap, so that a search for a rare word reads only the few
//! sessions that may hold it. A pattern's literals (every match starts or ends with one) are
//! looked up by their trigrams: a session whose filter lacks one trigram of each literal holds no
//! match. A filter answers "maybe" wrongly at times (two trigrams may share a bit), never "no".
//!
//! Each trigram sets one bit of a map sized to two to four times the trigrams a session holds (a
//! literal of nine letters, seven trigrams, then passes a session without it about once in a
//! thousand or less), between 1 Kib and 1 Mib.
//!
//! Not for: where the filters are kept (`filters`) or what the text is (`strings`).

/// The smallest and largest maps, as powers of two of their bits.
pub const MIN_LOG2: u8 = 10;
pub const MAX_LOG2: u8 = 20;

/// The bit a trigram sets in a map of `1 << log2` bits: the low bits of MurmurHash3's finaliser,
/// every one of which depends on every bit of the trigram.
fn slot(trigram: u32, log2: u8) -> usize {
    let mut h = trigram;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    (h as usize) & ((1 << log2) - 1)
}

/// A byte as the filter sees it.
fn lower(byte: u8) -> u8 {
    byte.to_ascii_lowercase()
}

/// Gathers which trigrams texts hold, exactly (one bit for each of the 2^24), then maps them
/// into a filter of their size: no hash is computed for each byte of text, only for each trigram.
pub struct Builder {
    seen: Vec<u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            seen: vec![0; (1 << 24) / 64],
        }
    }
}

impl Builder {
    /// Add the trigrams of `text` (a run of text: none spans two calls).
    pub fn add(&mut self, text: &[u8]) {
        let mut trigram = 0usize;
        for (i, &byte) in text.iter().enumerate() {
            trigram = ((trigram << 8) | usize::from(lower(byte))) & 0xFF_FFFF;
            if i >= 2 {
                self.seen[trigram / 64] |= 1 << (trigram % 64);
            }
        }
    }

    /// The filter of what was added, at about twice as many bits as it holds trigrams. The
    /// builder is empty again after.
    pub fn finish(&mut self) -> Filter {
        let held: u64 = self.seen.iter().map(|w| u64::from(w.count_ones())).sum();
        let wanted = (held * 2).next_power_of_two().trailing_zeros() as u8;
        let log2 = wanted.clamp(MIN_LOG2, MAX_LOG2);
        let mut words = vec![0u64; (1 << log2) / 64];
        for (i, word) in self.seen.iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                let trigram = (i * 64) as u32 + bits.trailing_zeros();
                bits &= bits - 1;
                let bit = slot(trigram, log2);
                words[bit / 64] |= 1 << (bit % 64);
            }
        }
        Filter { log2, words }
    }
}

/// One session's map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    log2: u8,
    words: Vec<u64>,
}

impl Filter {
    pub fn log2(&self) -> u8 {
        self.log2
    }

    /// Its bits as stored: little-endian words.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// The bytes a map of `1 << log2` bits takes, or `None` for a size no filter has.
    pub fn byte_len(log2: u8) -> Option<usize> {
        (MIN_LOG2..=MAX_LOG2)
            .contains(&log2)
            .then(|| (1 << log2) / 8)
    }

    /// A map read back from [`Self::to_bytes`]; `None` when `bytes` is no map of that size.
    pub fn from_bytes(log2: u8, bytes: &[u8]) -> Option<Self> {
        if Self::byte_len(log2)? != bytes.len() {
            return None;
        }
        let words = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        Some(Self { log2, words })
    }

    fn has(&self, trigram: u32) -> bool {
        let bit = slot(trigram, self.log2);
        self.words[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Whether the session may hold a match of `query`: some literal's trigrams all set.
    pub fn may_hold(&self, query: &Query) -> bool {
        (query.literals.iter()).any(|trigrams| trigrams.iter().all(|&t| self.has(t)))
    }
}

/// The trigrams of a pattern's literals that a filter is asked about.
#[derive(Debug, Clone)]
pub struct Query {
    literals: Vec<Vec<u32>>,
}

impl Query {
    /// The query for `literals` (every match starts, or every match ends, with one of them,
    /// matched without regard to case when `ignore_case`); `None` when one literal has no trigram
    /// a filter can be asked about (then every session may hold a match).
    pub fn new(literals: &[Vec<u8>], ignore_case: bool) -> Option<Self> {
        let literals = literals
            .iter()
            .map(|literal| {
                let trigrams: Vec<u32> = (literal.windows(3))
                    .filter(|w| !ignore_case || w.iter().all(|&b| folds_in_ascii(b)))
                    .map(|w| w.iter().fold(0, |t, &b| (t << 8) | u32::from(lower(b))))
                    .collect();
                (!trigrams.is_empty()).then_some(trigrams)
            })
            .collect::<Option<_>>()?;
        Some(Self { literals })
    }
}

/// Whether every character that matches `byte` without regard to case is ASCII, so that a text
/// holding one holds it lowered as the filter has it: not for a non-ASCII byte, nor for `k` and
/// `s` (the Kelvin sign and the long s match them).
fn folds_in_ascii(byte: u8) -> bool {
    byte.is_ascii() && !matches!(byte.to_ascii_lowercase(), b'k' | b's')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter_of(texts: &[&str]) -> Filter {
        let mut builder = Builder::default();
        for text in texts {
            builder.add(text.as_bytes());
        }
        builder.finish()
    }

    fn query(literals: &[&str], ignore_case: bool) -> Option<Query> {
        let literals: Vec<Vec<u8>> = literals.iter().map(|l| l.as_bytes().to_vec()).collect();
        Query::new(&literals, ignore_case)
    }

    #[test]
    fn a_filter_holds_what_was_added_and_rules_out_most_of_what_was_not() {
        let words: Vec<String> = (0..5000).map(|i| format!("word{i:05}x")).collect();
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let filter = filter_of(&refs);
        for word in &words {
            assert!(filter.may_hold(&query(&[word], false).unwrap()), "{word}");
        }
        let absent = (0..1000)
            .map(|i| format!("other{i:05}y"))
            .filter(|w| filter.may_hold(&query(&[w], false).unwrap()))
            .count();
        // Each trigram sets one bit of a map about half full at most.
        assert!(absent < 100, "{absent} of 1000 absent words pass");
        // Case is lowered on both sides.
        assert!(filter.may_hold(&query(&["WORD00042X"], false).unwrap()));
    }

    #[test]
    fn a_filter_reads_back_from_its_bytes_and_is_sized_by_what_it_holds() {
        let small = filter_of(&["a short text"]);
        assert_eq!(small.log2(), MIN_LOG2);
        let text: String = (0..60_000).map(|i| format!("{i:x} ")).collect();
        let large = filter_of(&[&text]);
        assert!(large.log2() > MIN_LOG2 && large.log2() < MAX_LOG2);
        let back = Filter::from_bytes(large.log2(), &large.to_bytes()).unwrap();
        assert_eq!(back, large);
        assert!(Filter::from_bytes(large.log2(), &large.to_bytes()[1..]).is_none());
        assert!(Filter::from_bytes(MAX_LOG2 + 1, &[]).is_none());
    }

    #[test]
    fn no_trigram_spans_two_texts() {
        let filter = filter_of(&["cool", "down"]);
        assert!(filter.may_hold(&query(&["cool"], false).unwrap()));
        // "old" and "ldo" would span the two: with a map this empty, no false "maybe".
        assert!(!filter.may_hold(&query(&["cooldown"], false).unwrap()));
    }

    #[test]
    fn any_literal_may_match_and_a_literal_without_trigrams_leaves_no_query() {
        let filter = filter_of(&["the cooldown"]);
        assert!(filter.may_hold(&query(&["warmup", "cooldown"], false).unwrap()));
        assert!(!filter.may_hold(&query(&["warmup", "heatwave"], false).unwrap()));
        assert!(query(&["cooldown", "ab"], false).is_none());
        assert!(query(&[], false).is_some_and(|q| !filter.may_hold(&q)));
    }

    #[test]
    fn ignoring_case_asks_only_about_trigrams_no_other_character_folds_to() {
        // The Kelvin sign matches `k` without regard to case: "\u{212A}ELVIN" holds no "kel".
        let filter = filter_of(&["\u{212A}ELVIN"]);
        let q = query(&["kelvin"], true).unwrap();
        assert!(filter.may_hold(&q));
        assert!(!filter.may_hold(&query(&["kelvin"], false).unwrap()));
        assert!(query(&["ks"], true).is_none());
        assert!(query(&["\u{e9}t\u{e9}"], true).is_none());
    }

    #[test]
    fn only_k_and_s_among_ascii_letters_match_a_character_outside_ascii() {
        use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};
        let mut outside = ClassUnicode::new([ClassUnicodeRange::new('\u{80}', '\u{10FFFF}')]);
        outside.case_fold_simple();
        let ascii: Vec<u8> = (0u8..0x80)
            .filter(|&b| {
                let c = char::from(b);
                outside
                    .ranges()
                    .iter()
                    .any(|r| r.start() <= c && c <= r.end())
            })
            .collect();
        assert_eq!(ascii, b"KSks");
        assert!((0u8..0x80).all(|b| folds_in_ascii(b) != ascii.contains(&b)));
    }
}
