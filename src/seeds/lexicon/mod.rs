//! The lexicons: pure functions that pick errors, identifiers, files, commands and user intents out
//! of block text, verbatim. Choosing among many (caps, diversity, recency) is the record builder's job.

pub mod commands;
pub mod errors;
pub mod files;
pub mod identifiers;
pub mod user;

/// A set of ASCII bytes held as a table: which bytes make up a lexicon's tokens, and which of
/// them mark a token as one to look at closer (most runs are plain words, told apart at no cost
/// beyond the scan that finds them).
pub struct ByteSet([u8; 256]);

const MEMBER: u8 = 1;
const MARK: u8 = 2;

impl ByteSet {
    /// ASCII letters and digits, and `extra`.
    pub const fn alphanumeric_and(extra: &[u8]) -> Self {
        let mut table = [0; 256];
        let mut b = 0;
        while b < 256 {
            if (b as u8).is_ascii_alphanumeric() {
                table[b] = MEMBER;
            }
            b += 1;
        }
        let mut i = 0;
        while i < extra.len() {
            table[extra[i] as usize] = MEMBER;
            i += 1;
        }
        Self(table)
    }

    /// These bytes (of the set) mark a run that holds one.
    pub const fn marking(mut self, marks: &[u8]) -> Self {
        let mut i = 0;
        while i < marks.len() {
            assert!(
                self.0[marks[i] as usize] & MEMBER != 0,
                "a mark is of the set"
            );
            self.0[marks[i] as usize] |= MARK;
            i += 1;
        }
        self
    }
}

/// Each maximal run of `set`'s bytes in `text`, in order, and whether it holds a byte `set` marks.
/// The bytes are ASCII, so every run lies on character boundaries, and a non-ASCII character
/// separates runs as any other byte outside `set`.
pub fn runs<'t>(text: &'t str, set: &ByteSet, mut found: impl FnMut(&'t str, bool)) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if set.0[bytes[i] as usize] == 0 {
            i += 1;
            continue;
        }
        let start = i;
        let mut seen = 0;
        while let Some(&b) = bytes.get(i) {
            let class = set.0[b as usize];
            if class == 0 {
                break;
            }
            seen |= class;
            i += 1;
        }
        found(&text[start..i], seen & MARK != 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_maximal_and_say_whether_they_are_marked() {
        static SET: ByteSet = ByteSet::alphanumeric_and(b"_.").marking(b"_0123456789");
        let mut seen = Vec::new();
        runs("plain x_y, é9a.b\tend_", &SET, |run, marked| {
            seen.push((run, marked))
        });
        assert_eq!(
            seen,
            [
                ("plain", false),
                ("x_y", true),
                ("9a.b", true),
                ("end_", true)
            ]
        );
        let mut none = Vec::new();
        runs("", &SET, |run, _| none.push(run));
        runs(" é, ", &SET, |run, _| none.push(run));
        assert!(none.is_empty());
    }
}
