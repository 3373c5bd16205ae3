//! A session's n-gram filter: which runs of three and of four bytes the text a search reads in it
//! holds (ASCII letters lowered), as one bitmap, so that a search for a rare word reads only the
//! few sessions that may hold it. A pattern's literals (every match starts or ends with one) are
//! looked up by their n-grams: a session whose filter lacks one n-gram of each literal holds no
//! match. A filter answers "maybe" wrongly at times (two n-grams may share a bit, or a session
//! hold each n-gram of a word apart), never "no". Four bytes tell words apart that are made of
//! common syllables (of bench/run's 375 sessions, 20 hold every trigram of `impreturn`, 3 the
//! word).
//!
//! Each n-gram sets one bit of a map of one to two bits for each n-gram a session holds, a power
//! of two between 1 Kib and 2 Mib: 40% to 63% of its bits set, so that a literal of nine letters
//! (thirteen n-grams) passes a session without them once in four hundred at worst. Twice the
//! bits made the filters of 4,914 forks 27 MB, more than their store (15 MB).
//!
//! Not for: where the filters are kept (`filters`) or what the text is (`strings`).

/// The smallest and largest maps, as powers of two of their bits.
pub const MIN_LOG2: u8 = 10;
pub const MAX_LOG2: u8 = 21;

/// Trigrams are gathered exactly (one bit for each of the 2^24); four bytes by a hash of 22 bits.
const TRIGRAM_WORDS: usize = (1 << 24) / 64;
const QUAD_BITS: u32 = 22;
const QUAD_WORDS: usize = (1 << QUAD_BITS) / 64;

/// A four-byte n-gram's key, apart from every trigram's (a trigram is its own key, under 2^24).
const QUAD_TAG: u32 = 1 << 31;

/// The bit a key sets in a map of `1 << log2` bits: the low bits of MurmurHash3's finaliser,
/// every one of which depends on every bit of the key.
fn slot(key: u32, log2: u8) -> usize {
    let mut h = key;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    (h as usize) & ((1 << log2) - 1)
}

/// Where four bytes (lowered, the first in the high byte) are gathered: one multiply per byte
/// of text.
fn quad_hash(quad: u32) -> usize {
    (quad.wrapping_mul(0x9E37_79B1) >> (32 - QUAD_BITS)) as usize
}

/// A byte as the filter sees it.
fn lower(byte: u8) -> u8 {
    byte.to_ascii_lowercase()
}

/// Gathers which n-grams texts hold, then maps them into a filter of their size.
pub struct Builder {
    trigrams: Box<[u64; TRIGRAM_WORDS]>,
    quads: Box<[u64; QUAD_WORDS]>,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            trigrams: zeroed(),
            quads: zeroed(),
        }
    }
}

fn zeroed<const N: usize>() -> Box<[u64; N]> {
    vec![0; N].into_boxed_slice().try_into().expect("sized")
}

impl Builder {
    /// Add the n-grams of `text` (a run of text: none spans two calls).
    pub fn add(&mut self, text: &[u8]) {
        let [a, b, rest @ ..] = text else {
            return;
        };
        let mut run = (u32::from(lower(*a)) << 8) | u32::from(lower(*b));
        for (i, &byte) in rest.iter().enumerate() {
            run = (run << 8) | u32::from(lower(byte));
            let trigram = (run & 0xFF_FFFF) as usize;
            self.trigrams[trigram / 64] |= 1 << (trigram % 64);
            if i > 0 {
                let quad = quad_hash(run);
                self.quads[quad / 64] |= 1 << (quad % 64);
            }
        }
    }

    /// The filter of what was added, at one to two bits for each n-gram it holds. The builder
    /// is empty again after.
    pub fn finish(&mut self) -> Filter {
        let held: u64 = (self.trigrams.iter().chain(self.quads.iter()))
            .map(|w| u64::from(w.count_ones()))
            .sum();
        let wanted = held.next_power_of_two().trailing_zeros() as u8;
        let log2 = wanted.clamp(MIN_LOG2, MAX_LOG2);
        let mut words = vec![0u64; (1 << log2) / 64];
        let mut set = |key: u32| {
            let bit = slot(key, log2);
            words[bit / 64] |= 1 << (bit % 64);
        };
        for (seen, tag) in [(&mut self.trigrams[..], 0), (&mut self.quads[..], QUAD_TAG)] {
            for (i, word) in seen.iter_mut().enumerate() {
                let mut bits = std::mem::take(word);
                while bits != 0 {
                    set(tag | ((i * 64) as u32 + bits.trailing_zeros()));
                    bits &= bits - 1;
                }
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

    fn has(&self, key: u32) -> bool {
        let bit = slot(key, self.log2);
        self.words[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Whether the session may hold a match of `query`: some literal's n-grams all set.
    pub fn may_hold(&self, query: &Query) -> bool {
        (query.literals.iter()).any(|trigrams| trigrams.iter().all(|&t| self.has(t)))
    }
}

/// The n-grams of a pattern's literals that a filter is asked about.
#[derive(Debug, Clone)]
pub struct Query {
    literals: Vec<Vec<u32>>,
}

impl Query {
    /// The query for `literals` (every match starts, or every match ends, with one of them,
    /// matched without regard to case when `ignore_case`); `None` when one literal has no n-gram
    /// a filter can be asked about (then every session may hold a match).
    pub fn new(literals: &[Vec<u8>], ignore_case: bool) -> Option<Self> {
        let literals = literals
            .iter()
            .map(|literal| {
                let asked = |w: &&[u8]| !ignore_case || w.iter().all(|&b| folds_in_ascii(b));
                let run = |w: &[u8]| w.iter().fold(0, |t, &b| (t << 8) | u32::from(lower(b)));
                let keys: Vec<u32> = (literal.windows(3).filter(asked).map(run))
                    .chain(
                        (literal.windows(4).filter(asked))
                            .map(|w| QUAD_TAG | quad_hash(run(w)) as u32),
                    )
                    .collect();
                (!keys.is_empty()).then_some(keys)
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
    fn four_bytes_tell_a_word_from_its_trigrams_held_apart() {
        let apart = filter_of(&["imp", "mpr", "pre", "ret", "etu", "tur", "urn"]);
        assert!(!apart.may_hold(&query(&["impreturn"], false).unwrap()));
        let whole = filter_of(&["an impreturn here"]);
        assert!(whole.may_hold(&query(&["impreturn"], false).unwrap()));
        // Three bytes have no four-byte n-gram to ask about.
        assert!(apart.may_hold(&query(&["imp"], false).unwrap()));
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
