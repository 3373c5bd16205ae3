//! The JSON span scanner: is one line a single valid JSON value, and where are its large strings?
//!
//! Validity follows the reference implementation exactly (see `codexfold-interop.md`, point 4), which
//! is why this is a tokenizer of our own rather than serde_json: invalid UTF-8 inside strings, lone
//! surrogate escapes and any depth of nesting are accepted; control characters in strings, a BOM,
//! NaN, trailing commas, an empty line and a second value on the line are not. `\r` and `\n` are
//! whitespace, so a line is scanned with its line ending. Nesting uses an explicit stack, never the
//! call stack, so a line of ten million `[` is just invalid-or-valid, never a crash.

use memchr::memchr2;

/// A string value whose raw token (quotes and escapes as spelled) is at least the threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Byte range of the raw token in the line, quotes included.
    pub start: usize,
    pub end: usize,
    /// RFC 6901 pointer of the value; `None` when the whole line is that string.
    pub json_path: Option<String>,
}

enum Frame {
    /// Inside an object; the raw span (quotes included) of the key whose value comes next.
    Object {
        key: (usize, usize),
    },
    Array {
        index: u64,
    },
}

/// Reusable scanner state, so scanning millions of lines allocates nothing per line.
#[derive(Default)]
pub struct Scanner {
    stack: Vec<Frame>,
}

impl Scanner {
    /// Scan `line`; on success push every string value of at least `threshold` raw bytes onto
    /// `fields` (in order) and return true. An invalid line returns false and leaves `fields`
    /// as it was.
    pub fn scan(&mut self, line: &[u8], threshold: u64, fields: &mut Vec<Field>) -> bool {
        let before = fields.len();
        self.stack.clear();
        let ok = self.scan_value_stream(line, threshold, fields).is_some();
        if !ok {
            fields.truncate(before);
        }
        ok
    }

    fn scan_value_stream(
        &mut self,
        b: &[u8],
        threshold: u64,
        fields: &mut Vec<Field>,
    ) -> Option<()> {
        let mut i = skip_ws(b, 0);
        'value: loop {
            // A value starts at i.
            match *b.get(i)? {
                b'{' => {
                    i = skip_ws(b, i + 1);
                    if *b.get(i)? == b'}' {
                        i += 1;
                    } else {
                        let key = (i, string_end(b, i)?);
                        i = expect(b, skip_ws(b, key.1), b':')?;
                        self.stack.push(Frame::Object { key });
                        i = skip_ws(b, i);
                        continue 'value;
                    }
                }
                b'[' => {
                    i = skip_ws(b, i + 1);
                    if *b.get(i)? == b']' {
                        i += 1;
                    } else {
                        self.stack.push(Frame::Array { index: 0 });
                        continue 'value;
                    }
                }
                b'"' => {
                    let end = string_end(b, i)?;
                    if (end - i) as u64 >= threshold {
                        let json_path = (!self.stack.is_empty()).then(|| self.pointer(b));
                        fields.push(Field {
                            start: i,
                            end,
                            json_path,
                        });
                    }
                    i = end;
                }
                b't' => i = literal(b, i, b"true")?,
                b'f' => i = literal(b, i, b"false")?,
                b'n' => i = literal(b, i, b"null")?,
                b'-' | b'0'..=b'9' => i = number_end(b, i)?,
                _ => return None,
            }
            // After a value: close containers or move to the next member.
            loop {
                i = skip_ws(b, i);
                match self.stack.last_mut() {
                    None => return (i == b.len()).then_some(()),
                    Some(Frame::Object { key }) => match *b.get(i)? {
                        b',' => {
                            i = skip_ws(b, i + 1);
                            let k = (i, string_end(b, i)?);
                            *key = k;
                            i = skip_ws(b, expect(b, skip_ws(b, k.1), b':')?);
                            continue 'value;
                        }
                        b'}' => {
                            self.stack.pop();
                            i += 1;
                        }
                        _ => return None,
                    },
                    Some(Frame::Array { index }) => match *b.get(i)? {
                        b',' => {
                            *index += 1;
                            i = skip_ws(b, i + 1);
                            continue 'value;
                        }
                        b']' => {
                            self.stack.pop();
                            i += 1;
                        }
                        _ => return None,
                    },
                }
            }
        }
    }

    /// The RFC 6901 pointer of the value the stack currently points at.
    fn pointer(&self, line: &[u8]) -> String {
        let mut path = String::new();
        for frame in &self.stack {
            path.push('/');
            match frame {
                Frame::Object { key } => {
                    let decoded = decode_string(&line[key.0 + 1..key.1 - 1]);
                    for c in decoded.chars() {
                        match c {
                            '~' => path.push_str("~0"),
                            '/' => path.push_str("~1"),
                            c => path.push(c),
                        }
                    }
                }
                Frame::Array { index } => path.push_str(&index.to_string()),
            }
        }
        path
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

fn expect(b: &[u8], i: usize, want: u8) -> Option<usize> {
    (*b.get(i)? == want).then_some(i + 1)
}

fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b.get(i..i + word.len())
        .filter(|w| *w == word)
        .map(|_| i + word.len())
}

/// The end (exclusive, past the closing quote) of the string token starting at `b[i] == '"'`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        let rest = b.get(j..)?;
        let at = memchr2(b'"', b'\\', rest)?;
        // No early exit: the test of every byte vectorizes, and strings almost never fail it.
        if rest[..at].iter().fold(false, |seen, &c| seen | (c < 0x20)) {
            return None;
        }
        j += at;
        if b[j] == b'"' {
            return Some(j + 1);
        }
        // A backslash: one of the allowed escapes.
        match *b.get(j + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
            b'u' => {
                let hex = b.get(j + 2..j + 6)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                j += 6;
            }
            _ => return None,
        }
    }
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], mut i: usize| {
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > start).then_some(i)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i)?,
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}

/// Decode the inside of a (valid) string token as Go's encoding/json does for keys: escapes
/// resolved, surrogate pairs joined, a lone surrogate or an invalid UTF-8 byte each become U+FFFD.
pub fn decode_string(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'\\' => {
                let (c, used) = decode_escape(raw, i);
                out.push(c);
                i += used;
            }
            _ => {
                let end = memchr::memchr(b'\\', &raw[i..]).map_or(raw.len(), |at| i + at);
                push_lossy_per_byte(&mut out, &raw[i..end]);
                i = end;
            }
        }
    }
    out
}

fn decode_escape(raw: &[u8], i: usize) -> (char, usize) {
    let simple = match raw[i + 1] {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => {
            let unit = hex4(&raw[i + 2..i + 6]);
            if (0xD800..0xDC00).contains(&unit) && raw.get(i + 6..i + 8) == Some(b"\\u") {
                let low = hex4(&raw[i + 8..i + 12]);
                if (0xDC00..0xE000).contains(&low) {
                    let c = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    return (char::from_u32(c).unwrap_or('\u{FFFD}'), 12);
                }
            }
            return (char::from_u32(unit).unwrap_or('\u{FFFD}'), 6);
        }
    };
    (simple, 2)
}

fn hex4(h: &[u8]) -> u32 {
    h.iter().fold(0, |acc, &c| {
        (acc << 4) | (c as char).to_digit(16).unwrap_or(0)
    })
}

fn push_lossy_per_byte(out: &mut String, mut bytes: &[u8]) {
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => return out.push_str(s),
            Err(e) => {
                let (good, bad) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).expect("checked valid"));
                out.push('\u{FFFD}');
                bytes = &bad[1..];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(line: &str, threshold: u64) -> Option<Vec<(String, Option<String>)>> {
        let mut out = Vec::new();
        Scanner::default()
            .scan(line.as_bytes(), threshold, &mut out)
            .then(|| {
                out.iter()
                    .map(|f| (line[f.start..f.end].to_string(), f.json_path.clone()))
                    .collect()
            })
    }

    fn valid(line: &[u8]) -> bool {
        Scanner::default().scan(line, u64::MAX, &mut Vec::new())
    }

    #[test]
    fn accepts_what_the_reference_accepts() {
        for line in [
            &b"{}"[..],
            b"{}\n",
            b"{}\r\n",
            b"  [1, -0.5e+3, true, false, null, \"x\"]  \n",
            b"\"bare\"",
            b"0",
            b"{\"a\":\"\\ud800\"}",  // lone surrogate escape
            b"{\"a\":\"\xff\xfe\"}", // invalid UTF-8 inside a string
            b"{\"\xff\":1}",
        ] {
            assert!(valid(line), "{:?}", String::from_utf8_lossy(line));
        }
        let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
        assert!(valid(deep.as_bytes()));
    }

    #[test]
    fn rejects_what_the_reference_rejects() {
        for line in [
            &b""[..],
            b"\n",
            b"   \n",
            b"\xef\xbb\xbf{}", // BOM
            b"NaN",
            b"[1,]",
            b"{\"a\":1,}",
            b"{} {}", // two values on a line
            b"{\"a\":1}{\"b\":2}\n",
            b"\"tab\tinside\"", // control character
            b"{\"a\" 1}",
            b"01",
            b"1.",
            b"-",
            b"1e",
            b"\"\\x\"",
            b"\"\\u12g4\"",
            b"\"unterminated",
            b"[",
            b"tru",
            b"{1:2}",
        ] {
            assert!(!valid(line), "{:?}", String::from_utf8_lossy(line));
        }
        let deep_open = "[".repeat(100_000);
        assert!(!valid(deep_open.as_bytes()));
    }

    #[test]
    fn the_threshold_counts_the_raw_token_with_quotes_and_escapes() {
        // "abc" is 5 raw bytes; "a\"c" is 6.
        assert_eq!(fields(r#"{"k":"abc"}"#, 6).unwrap(), vec![]);
        assert_eq!(fields(r#"{"k":"abc"}"#, 5).unwrap().len(), 1);
        assert_eq!(fields(r#"{"k":"abc"}"#, 4).unwrap().len(), 1);
        assert_eq!(
            fields(r#"{"k":"a\"c"}"#, 6).unwrap(),
            vec![(r#""a\"c""#.into(), Some("/k".into()))]
        );
    }

    #[test]
    fn keys_are_never_fields() {
        let key = "k".repeat(5000);
        let line = format!(r#"{{"{key}":"v"}}"#);
        assert_eq!(fields(&line, 10).unwrap(), vec![]);
    }

    #[test]
    fn pointers_follow_rfc_6901() {
        let line = r#"{"a":[{"b":"xxxxxx"}],"t~/s":"yyyyyy","":"zzzzzz","é":["wwwwww"],"e\u00e9":"vvvvvv"}"#;
        let paths: Vec<_> = fields(line, 8)
            .unwrap()
            .into_iter()
            .map(|f| f.1.unwrap())
            .collect();
        assert_eq!(paths, ["/a/0/b", "/t~0~1s", "/", "/é/0", "/eé"]);
        assert_eq!(
            fields(r#""xxxxxxxx""#, 4).unwrap(),
            vec![(r#""xxxxxxxx""#.into(), None)]
        );
        assert_eq!(
            fields(r#"["aaaa","bbbb"]"#, 4).unwrap()[1].1.as_deref(),
            Some("/1")
        );
    }

    #[test]
    fn decoding_keys_matches_go() {
        assert_eq!(decode_string(br"\ud83d\ude00"), "😀");
        assert_eq!(decode_string(br"\ud83dx"), "\u{FFFD}x");
        assert_eq!(decode_string(b"a\xe2\x82b"), "a\u{FFFD}\u{FFFD}b");
        assert_eq!(
            decode_string(br#"\"\\\/\b\f\n\r\t"#),
            "\"\\/\u{8}\u{c}\n\r\t"
        );
    }

    #[test]
    fn an_invalid_line_leaves_no_fields_behind() {
        let mut out = Vec::new();
        let line = br#"{"a":"xxxxxxxxxxxx","b":}"#;
        assert!(!Scanner::default().scan(line, 4, &mut out));
        assert!(out.is_empty());
    }
}
