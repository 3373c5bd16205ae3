//! The lexicons: pure functions that pick errors, identifiers, files, commands and user intents out
//! of block text, verbatim. Choosing among many (caps, diversity, recency) is the record builder's job.

pub mod commands;
pub mod errors;
pub mod files;
pub mod identifiers;
pub mod user;

/// A set of ASCII bytes held as a table: which bytes make up a lexicon's tokens.
pub struct ByteSet([bool; 256]);

impl ByteSet {
    /// ASCII letters and digits, and `extra`.
    pub const fn alphanumeric_and(extra: &[u8]) -> Self {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            table[b] = (b as u8).is_ascii_alphanumeric();
            b += 1;
        }
        let mut i = 0;
        while i < extra.len() {
            table[extra[i] as usize] = true;
            i += 1;
        }
        Self(table)
    }

    pub fn contains(&self, b: u8) -> bool {
        self.0[b as usize]
    }
}

/// Each maximal run of `set`'s bytes in `text`, in order. The bytes are ASCII, so every run lies on
/// character boundaries, and a non-ASCII character separates runs as any other byte outside `set`.
pub fn runs<'t>(text: &'t str, set: &ByteSet, mut found: impl FnMut(&'t str)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !set.contains(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && set.contains(bytes[i]) {
            i += 1;
        }
        found(&text[start..i]);
    }
}
