//! The identifier lexicon: exact tokens recovery grep must match lexically — uuids, hex ids
//! (8+ digits, or `0x` + 4+), dotted versions, symbols of 4+ characters with a capital, `_`, `$` or
//! digit after the first, and numbers of 4+ digits. Every token is a substring of the text.

use super::{Run, class, runs};

/// Longer runs are blobs (base64, minified code), not identifiers.
const MAX_LEN: usize = 128;

const KEYWORDS: &[&str] = &[
    "JavaScript",
    "TypeScript",
    "GitHub",
    "iOS",
    "macOS",
    "OpenAI",
    "ChatGPT",
    "README",
];

/// Call `found` with each identifier in `text`, in order.
pub fn identifiers<'t>(text: &'t str, mut found: impl FnMut(&'t str)) {
    runs(text, class::IDENTIFIER, |run| in_run(run, &mut found));
}

/// The identifiers of one maximal run of identifier-shaped bytes. A run with no marked byte is a
/// word, or (36 bytes long) perhaps a uuid of letters.
pub(super) fn in_run<'t>(run: Run<'t>, found: &mut impl FnMut(&'t str)) {
    let marked = run.any & class::IDENTIFIER_MARK != 0;
    if run.any & class::DOT_OR_DASH == 0 {
        // One piece, and neither a uuid nor a version (most runs).
        let token = run.text;
        if marked && token.len() <= MAX_LEN && is_identifier_piece(token) {
            found(token);
        }
        return;
    }
    // Trimming takes no marked byte away.
    let token = run.text.trim_matches(['.', '-']);
    if (marked || token.len() == 36) && token.len() >= 4 && token.len() <= MAX_LEN {
        classify(token, found);
    }
}

fn classify<'t>(token: &'t str, found: &mut impl FnMut(&'t str)) {
    if is_uuid(token) || is_version(token) {
        return found(token);
    }
    for piece in token.split(['.', '-']) {
        if is_identifier_piece(piece) {
            found(piece);
        }
    }
}

/// Whether a piece of a token (cut at `.` and `-`) is a hex id, a number or a symbol.
fn is_identifier_piece(piece: &str) -> bool {
    piece.len() >= 4 && Shape::of(piece).is_identifier(piece)
}

fn is_uuid(t: &str) -> bool {
    // 8-4-4-4-12 hex digits; checked in place, as this runs on every token.
    let b = t.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// `1.2.3`, `v0.104.0-alpha.1`: three or four dotted numbers, optionally a `v` and a suffix that
/// starts with a letter (so SVG path data and IP-like runs are not versions).
fn is_version(t: &str) -> bool {
    let core = t.strip_prefix('v').unwrap_or(t);
    if !core.starts_with(|c: char| c.is_ascii_digit()) {
        return false;
    }
    let (core, suffix) = core.split_once(['-', '+']).unwrap_or((core, "a"));
    let mut parts = 0;
    for part in core.split('.') {
        parts += 1;
        if parts > 4 || !(1..=6).contains(&part.len()) || !part.bytes().all(|b| b.is_ascii_digit())
        {
            return false;
        }
    }
    parts >= 3 && suffix.starts_with(|c: char| c.is_ascii_alphabetic())
}

/// What kinds of bytes a piece of a token holds, found in one pass over it: most tokens are
/// symbols, and each test of one took a pass of its own.
struct Shape {
    head: u8,
    rest: u8,
}

const DIGIT: u8 = 1;
const UPPER: u8 = 2;
const LOWER: u8 = 4;
/// A letter past `f`: not a hex digit.
const NOT_HEX: u8 = 8;
const UNDERSCORE: u8 = 16;
const DOLLAR: u8 = 32;
/// Anything else.
const OTHER: u8 = 64;

static SHAPES: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        table[b] = if byte.is_ascii_digit() {
            DIGIT
        } else if byte.is_ascii_uppercase() {
            UPPER
        } else if byte.is_ascii_lowercase() {
            LOWER
        } else if byte == b'_' {
            UNDERSCORE
        } else if byte == b'$' {
            DOLLAR
        } else {
            OTHER
        };
        if byte.is_ascii_alphabetic() && !byte.is_ascii_hexdigit() {
            table[b] |= NOT_HEX;
        }
        b += 1;
    }
    table
};

impl Shape {
    fn of(piece: &str) -> Self {
        let (head, rest) = piece.as_bytes().split_first().unwrap_or((&0, &[]));
        let rest = rest.iter().fold(0, |kinds, &b| kinds | SHAPES[b as usize]);
        Self {
            head: SHAPES[*head as usize],
            rest,
        }
    }

    fn all(&self) -> u8 {
        self.head | self.rest
    }

    /// A hex id, a number or a symbol.
    fn is_identifier(&self, piece: &str) -> bool {
        self.is_hex_id(piece) || self.all() == DIGIT || self.is_symbol(piece)
    }

    /// 8+ hex digits with a digit and a letter among them, or `0x` and 4+ hex digits.
    fn is_hex_id(&self, piece: &str) -> bool {
        if let Some(hex) = piece.strip_prefix("0x") {
            return hex.len() >= 4 && hex.bytes().all(|b| b.is_ascii_hexdigit());
        }
        let all = self.all();
        piece.len() >= 8
            && all & (NOT_HEX | UNDERSCORE | DOLLAR | OTHER) == 0
            && all & DIGIT != 0
            && all & (UPPER | LOWER) != 0
    }

    fn is_symbol(&self, piece: &str) -> bool {
        let all = self.all();
        let head_ok = self.head & (UPPER | LOWER | UNDERSCORE | DOLLAR) != 0;
        let marked = self.rest & (UPPER | DIGIT | UNDERSCORE | DOLLAR) != 0;
        // Shouted English (`ERROR`, `TODO`) is not an identifier; `RECALL_SLICE_TOKEN_CAP` is.
        let shouted = all & !(UPPER | NOT_HEX) == 0;
        // A long run of mixed case and digits with no `_` is base64 or a key, an opaque blob.
        let blob = piece.len() > 32
            && all & UNDERSCORE == 0
            && all & UPPER != 0
            && all & LOWER != 0
            && all & DIGIT != 0;
        head_ok && marked && all & OTHER == 0 && !shouted && !blob && !KEYWORDS.contains(&piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        identifiers(text, |t| out.push(t));
        out
    }

    #[test]
    fn the_classes_are_found_verbatim() {
        let text = "id=e2c70f2e at 0x811c9dc5 in lodash 4.17.21 (v0.104.0-alpha.1), \
                    uuid 019b7f94-51b4-7593-922e-ba12b5b73b52 RECALL_SLICE_TOKEN_CAP parseFoo 123456 port 8080";
        assert_eq!(
            all(text),
            [
                "e2c70f2e",
                "0x811c9dc5",
                "4.17.21",
                "v0.104.0-alpha.1",
                "019b7f94-51b4-7593-922e-ba12b5b73b52",
                "RECALL_SLICE_TOKEN_CAP",
                "parseFoo",
                "123456",
                "8080"
            ]
        );
        for t in all(text) {
            assert!(text.contains(t));
        }
    }

    #[test]
    fn words_and_blobs_are_not() {
        assert!(all("ERROR the Hello world deadbeef and TODO").is_empty());
        assert!(all(&"aB".repeat(100)).is_empty());
        assert!(all("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk").is_empty());
        assert!(
            all("M3.492.997.107-.775.418 319.192.694.801.576")
                .iter()
                .all(|t| !t.contains('.'))
        );
    }
}
