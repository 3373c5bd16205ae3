//! The text a person reads in one JSONL line: its string values (never its keys), JSON escapes
//! decoded (`\n` becomes a newline, `\u00e9` an `é`), each with where its token lies in the line so
//! that a match maps back to the line's bytes. A line that is not JSON is its own text.
//!
//! Not for: telling what a value means (a prompt, a tool's output): that is the agent's block
//! reader's job, asked only about lines that hold a match. Strings under keys that hold opaque
//! data (encrypted reasoning, signatures, base64 images) are not text and are passed over.

use std::ops::Range;

use memchr::{memchr, memchr2};

/// Keys whose string values nobody reads: base64 and ciphertext, which a short pattern matches at
/// random.
const OPAQUE: &[&[u8]] = &[
    b"encrypted_content",
    b"signature",
    b"thinkingSignature",
    b"data",
    b"image_url",
    // Codex's copy of a prompt's images (data URLs) beside the `image_url` of its message.
    b"images",
];

/// Whether the string at `pointer` (a field part's RFC 6901 `json_path`) is opaque data: the
/// key it is under (an array's, for an element) is one of [`OPAQUE`].
pub fn opaque_at(pointer: &str) -> bool {
    let key = (pointer.rsplit('/'))
        .find(|segment| segment.is_empty() || !segment.bytes().all(|b| b.is_ascii_digit()));
    key.is_some_and(|key| OPAQUE.contains(&key.as_bytes()))
}

/// One string value of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    /// Its decoded text in [`Texts::text`].
    pub text: Range<usize>,
    /// Its token's contents in the line, between the quotes (the whole line when it is not JSON).
    pub raw: Range<usize>,
    /// For a value of JSON written as a string (a Codex tool call's `arguments`, an old shell
    /// tool's output): its token's contents in that string's decoded text.
    pub inner: Option<Range<usize>>,
}

/// The decoded values of one line, their texts one after the other, each followed by a `\n`: a
/// pattern run over the whole finds every match a value holds (a value's ends are line ends to
/// `^`, `$` and `\b`), and one that spans two values is told by its range.
#[derive(Debug, Default)]
pub struct Texts {
    pub text: Vec<u8>,
    pub values: Vec<Value>,
    scratch: Vec<u8>,
}

impl Texts {
    /// Decode `line` (without its `\n`), replacing what was held.
    pub fn decode(&mut self, line: &[u8]) {
        self.text.clear();
        self.values.clear();
        if !is_json(line) {
            let start = self.text.len();
            self.text.extend_from_slice(line);
            self.end_value(start, 0..line.len(), None);
            return;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        for_each_string(line, |raw| {
            scratch.clear();
            unescape(&line[raw.clone()], &mut scratch);
            if is_json(&scratch) {
                // JSON written as a string is read as JSON: its strings are the text, as the
                // agent shows them, not its escapes.
                for_each_string(&scratch, |inner| {
                    let start = self.text.len();
                    unescape(&scratch[inner.clone()], &mut self.text);
                    self.end_value(start, raw.clone(), Some(inner));
                });
            } else {
                let start = self.text.len();
                self.text.extend_from_slice(&scratch);
                self.end_value(start, raw, None);
            }
        });
        self.scratch = scratch;
    }

    fn end_value(&mut self, start: usize, raw: Range<usize>, inner: Option<Range<usize>>) {
        self.values.push(Value {
            text: start..self.text.len(),
            raw,
            inner,
        });
        self.text.push(b'\n');
    }

    /// The value whose text holds `range` whole, if one does.
    pub fn value_of(&self, range: &Range<usize>) -> Option<&Value> {
        let i = self
            .values
            .partition_point(|v| v.text.end < range.start)
            .min(self.values.len().saturating_sub(1));
        let value = self.values.get(i)?;
        (value.text.start <= range.start && range.end <= value.text.end).then_some(value)
    }
}

/// The bytes of `line` that `value`'s decoded `range` (a range of its text) was decoded from.
pub fn raw_of(line: &[u8], value: &Value, range: Range<usize>) -> Range<usize> {
    let token = &line[value.raw.clone()];
    let in_token = match &value.inner {
        None => range,
        Some(inner) => {
            let mut outer = Vec::new();
            unescape(token, &mut outer);
            let r = raw_range(&outer[inner.clone()], range);
            inner.start + r.start..inner.start + r.end
        }
    };
    let r = raw_range(token, in_token);
    value.raw.start + r.start..value.raw.start + r.end
}

/// Whether `bytes` read as a JSON object or array (by their ends: a string that only looks like
/// one yields its strings all the same).
fn is_json(bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    matches!(
        (trimmed.first(), trimmed.last()),
        (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))
    )
}

/// The contents of each string value of `json` (not keys, not opaque ones), in order.
fn for_each_string(json: &[u8], mut each: impl FnMut(Range<usize>)) {
    let mut at = 0;
    let mut key: &[u8] = b"";
    while let Some(open) = memchr(b'"', &json[at..]).map(|i| at + i) {
        let close = closing_quote(json, open + 1);
        let token = open + 1..close;
        let after = json[(close + 1).min(json.len())..]
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map(|i| close + 1 + i);
        if after.is_some_and(|i| json[i] == b':') {
            key = &json[token];
        } else if !OPAQUE.contains(&key) {
            each(token);
        }
        at = close + 1;
        if at >= json.len() {
            break;
        }
    }
}

/// Where the string whose contents start at `from` ends: its closing quote, or the line's end when
/// it has none.
pub(crate) fn closing_quote(line: &[u8], mut from: usize) -> usize {
    while let Some(i) = memchr2(b'"', b'\\', &line[from.min(line.len())..]) {
        let i = from + i;
        if line[i] == b'"' {
            return i;
        }
        from = i + 2;
    }
    line.len()
}

/// One unit of a token: a plain byte or an escape, and the bytes it decodes to.
fn unit(token: &[u8], at: usize, out: &mut Vec<u8>) -> usize {
    if token[at] != b'\\' || at + 1 == token.len() {
        out.push(token[at]);
        return 1;
    }
    let simple = match token[at + 1] {
        b'n' => Some(b'\n'),
        b't' => Some(b'\t'),
        b'r' => Some(b'\r'),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'u' => None,
        other => Some(other),
    };
    if let Some(byte) = simple {
        out.push(byte);
        return 2;
    }
    let Some(high) = hex4(token, at + 2) else {
        out.extend_from_slice(&token[at..at + 2]);
        return 2;
    };
    let (c, len) = if (0xd800..0xdc00).contains(&high)
        && token.get(at + 6..at + 8) == Some(b"\\u")
        && let Some(low @ 0xdc00..0xe000) = hex4(token, at + 8)
    {
        let c = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
        (char::from_u32(c), 12)
    } else {
        // A lone surrogate is no character: it reads as U+FFFD, as every decoder shows it.
        (char::from_u32(high), 6)
    };
    let c = c.unwrap_or(char::REPLACEMENT_CHARACTER);
    out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    len
}

fn hex4(token: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(token.get(at..at + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

/// A JSON string's contents (between its quotes) decoded into `out`.
pub fn unescape(token: &[u8], out: &mut Vec<u8>) {
    let mut at = 0;
    while at < token.len() {
        let Some(i) = memchr(b'\\', &token[at..]) else {
            out.extend_from_slice(&token[at..]);
            return;
        };
        out.extend_from_slice(&token[at..at + i]);
        at += i;
        at += unit(token, at, out);
    }
}

/// The bytes of `token` (a string's contents as written) that decode to `decoded` (a range of its
/// decoded text): an escape is taken whole when any of the bytes it decodes to is.
pub fn raw_range(token: &[u8], decoded: Range<usize>) -> Range<usize> {
    let (mut at, mut out) = (0, 0);
    let (mut start, mut end) = (None, None);
    let mut scratch = Vec::with_capacity(4);
    while at < token.len() && end.is_none() {
        scratch.clear();
        let len = unit(token, at, &mut scratch);
        out += scratch.len();
        if start.is_none() && decoded.start < out {
            start = Some(at);
        }
        if decoded.end > decoded.start && decoded.end <= out {
            end = Some(at + len);
        }
        at += len;
    }
    let start = start.unwrap_or(token.len());
    start..end.unwrap_or(if decoded.is_empty() {
        start
    } else {
        token.len()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(line: &str) -> Vec<String> {
        let mut texts = Texts::default();
        texts.decode(line.as_bytes());
        texts
            .values
            .iter()
            .map(|v| String::from_utf8_lossy(&texts.text[v.text.clone()]).into_owned())
            .collect()
    }

    #[test]
    fn values_are_decoded_and_keys_and_opaque_values_left_out() {
        assert_eq!(
            decoded(
                r#"{"type":"message","text":"a \"b\"\nc\\d \/ \u00e9 \ud83d\ude00","n":3,"encrypted_content":"gAAAA","list":["x", "y"]}"#
            ),
            vec!["message", "a \"b\"\nc\\d / é 😀", "x", "y"]
        );
        // A lone surrogate, a bad escape, an unterminated string: kept, never a panic.
        assert_eq!(
            decoded(r#"{"a":"\ud800 \uzz \q","b":"open}"#),
            vec!["\u{fffd} \\uzz q", "open}"]
        );
        // A line cut short is text as it is.
        assert_eq!(decoded(r#"{"a":"b"#), vec![r#"{"a":"b"#]);
        assert_eq!(decoded("not json \"at all\""), vec!["not json \"at all\""]);
        // JSON written as a string: its strings.
        assert_eq!(
            decoded(r#"{"arguments":"{\"cmd\":\"ls\\n-la\",\"n\":1}","x":"[not json"}"#),
            vec!["ls\n-la", "[not json"]
        );
        assert_eq!(decoded(r#"{"k" : "v" ,"w":"x"}"#), vec!["v", "x"]);
    }

    #[test]
    fn opaque_fields_are_told_by_their_pointer() {
        assert!(opaque_at("/payload/encrypted_content"));
        assert!(opaque_at("/message/content/0/source/data"));
        assert!(opaque_at("/images/data/3"));
        assert!(opaque_at("/payload/images/0"));
        assert!(!opaque_at("/payload/content/0/text"));
        assert!(!opaque_at("/data/0/text"));
        assert!(!opaque_at(""));
    }

    #[test]
    fn decoded_ranges_map_back_to_the_bytes_written() {
        let token = br#"ab\ncd\u00e9f\ud83d\ude00g"#;
        let mut text = Vec::new();
        unescape(token, &mut text);
        assert_eq!(text, "ab\ncdéf😀g".as_bytes());
        let raw =
            |r: Range<usize>| String::from_utf8_lossy(&token[raw_range(token, r)]).into_owned();
        assert_eq!(raw(0..2), "ab");
        assert_eq!(raw(1..4), r"b\nc");
        assert_eq!(raw(2..3), r"\n");
        // é is two bytes, one escape: either byte takes the escape whole.
        assert_eq!(raw(5..7), r"\u00e9");
        assert_eq!(raw(6..8), r"\u00e9f");
        assert_eq!(raw(8..12), r"\ud83d\ude00");
        assert_eq!(raw(12..13), "g");
        assert_eq!(raw(13..13), "");
    }

    #[test]
    fn a_range_is_found_in_the_value_that_holds_it_whole() {
        let mut texts = Texts::default();
        texts.decode(br#"{"a":"one","b":"two"}"#);
        assert_eq!(texts.text, b"one\ntwo\n");
        assert_eq!(texts.value_of(&(4..7)).map(|v| v.raw.clone()), Some(16..19));
        assert_eq!(texts.value_of(&(0..3)).map(|v| v.raw.clone()), Some(6..9));
        assert_eq!(texts.value_of(&(2..5)), None);
    }

    #[test]
    fn a_range_of_json_written_as_a_string_maps_back_through_both_escapes() {
        let line = br#"{"arguments":"{\"cmd\":\"say \\\"hi\\\"\\nnow\"}"}"#;
        let mut texts = Texts::default();
        texts.decode(line);
        assert_eq!(texts.text, b"say \"hi\"\nnow\n");
        let value = texts.values[0].clone();
        let raw =
            |r: Range<usize>| String::from_utf8_lossy(&line[raw_of(line, &value, r)]).into_owned();
        assert_eq!(raw(4..8), r#"\\\"hi\\\""#);
        assert_eq!(raw(8..12), r#"\\nnow"#);
        assert_eq!(raw(0..3), "say");
    }
}
