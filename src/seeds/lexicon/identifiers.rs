//! The identifier lexicon: exact tokens recovery grep must match lexically — uuids, hex ids
//! (8+ digits, or `0x` + 4+), dotted versions, symbols of 4+ characters with a capital, `_`, `$` or
//! digit after the first, and numbers of 4+ digits. Every token is a substring of the text.

use super::{ByteSet, runs};

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

/// The bytes of a candidate token; a token with none of the marked ones is a word, or (36 bytes
/// long) perhaps a uuid of letters.
static TOKEN: ByteSet =
    ByteSet::alphanumeric_and(b"_$.-").marking(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$");

/// Call `found` with each identifier in `text`, in order.
pub fn identifiers<'t>(text: &'t str, mut found: impl FnMut(&'t str)) {
    runs(text, &TOKEN, |run, marked| {
        // Trimming takes no marked byte away.
        let token = run.trim_matches(['.', '-']);
        if (marked || token.len() == 36) && token.len() >= 4 && token.len() <= MAX_LEN {
            classify(token, &mut found);
        }
    });
}

fn classify<'t>(token: &'t str, found: &mut impl FnMut(&'t str)) {
    if is_uuid(token) || is_version(token) {
        return found(token);
    }
    for piece in token.split(['.', '-']) {
        if piece.len() >= 4 && (is_hex_id(piece) || is_number(piece) || is_symbol(piece)) {
            found(piece);
        }
    }
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

fn is_hex_id(t: &str) -> bool {
    if let Some(hex) = t.strip_prefix("0x") {
        return hex.len() >= 4 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let b = t.as_bytes();
    t.len() >= 8
        && b.iter().all(u8::is_ascii_hexdigit)
        && b.iter().any(u8::is_ascii_digit)
        && b.iter().any(u8::is_ascii_alphabetic)
}

fn is_number(t: &str) -> bool {
    t.bytes().all(|b| b.is_ascii_digit())
}

fn is_symbol(t: &str) -> bool {
    // Cheapest tests first: most tokens are plain words, out at `marked`.
    let b = t.as_bytes();
    let head_ok = || b[0].is_ascii_alphabetic() || matches!(b[0], b'_' | b'$');
    let body_ok = || {
        b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$'))
    };
    let marked = || {
        b[1..]
            .iter()
            .any(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || matches!(c, b'_' | b'$'))
    };
    // Shouted English (`ERROR`, `TODO`) is not an identifier; `RECALL_SLICE_TOKEN_CAP` is.
    let shouted = || b.iter().all(u8::is_ascii_uppercase);
    // A long run of mixed case and digits with no `_` is base64 or a key, an opaque blob.
    let blob = || {
        t.len() > 32
            && !t.contains('_')
            && b.iter().any(u8::is_ascii_uppercase)
            && b.iter().any(u8::is_ascii_lowercase)
            && b.iter().any(u8::is_ascii_digit)
    };
    head_ok() && marked() && body_ok() && !shouted() && !blob() && !KEYWORDS.contains(&t)
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
