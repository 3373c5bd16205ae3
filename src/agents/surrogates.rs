//! Lone UTF-16 surrogate escapes (`"\ud83d"` with no partner): JavaScript writes them (a truncated
//! emoji in tool output) and parses them, serde_json refuses them. Node hashes such a string as UTF-8
//! with each lone surrogate replaced by U+FFFD, so a line is read with that replacement made in its
//! escapes: the text, its sha256 and its byte length come out as the extension's.

/// `line` with every lone surrogate escape replaced by `\ufffd`, or `None` when it has none.
pub fn repair(line: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(line.len());
    let mut changed = false;
    let mut i = 0;
    while i < line.len() {
        if line[i] != b'\\' || i + 1 >= line.len() {
            out.push(line[i]);
            i += 1;
            continue;
        }
        if line[i + 1] != b'u' {
            out.extend_from_slice(&line[i..(i + 2).min(line.len())]);
            i += 2;
            continue;
        }
        let unit = hex4(line, i + 2);
        match unit {
            Some(0xD800..=0xDBFF) if matches!(low_after(line, i + 6), Some(0xDC00..=0xDFFF)) => {
                out.extend_from_slice(&line[i..i + 12]);
                i += 12;
            }
            Some(0xD800..=0xDFFF) => {
                out.extend_from_slice(br"\ufffd");
                changed = true;
                i += 6;
            }
            _ => {
                out.extend_from_slice(&line[i..i + 2]);
                i += 2;
            }
        }
    }
    changed.then_some(out)
}

/// The code unit of a `\uXXXX` escape starting at `at`.
fn low_after(line: &[u8], at: usize) -> Option<u16> {
    (line.get(at) == Some(&b'\\') && line.get(at + 1) == Some(&b'u'))
        .then(|| hex4(line, at + 2))
        .flatten()
}

fn hex4(line: &[u8], at: usize) -> Option<u16> {
    let digits = std::str::from_utf8(line.get(at..at + 4)?).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_pairs_stay() {
        assert_eq!(
            repair(br#"{"t":"a\ud83d"}"#).unwrap(),
            br#"{"t":"a\ufffd"}"#
        );
        assert_eq!(
            repair(br#"{"t":"\udc00x\\ud800"}"#).unwrap(),
            br#"{"t":"\ufffdx\\ud800"}"#
        );
        assert_eq!(repair(br#"{"t":"\ud83d\ude00 ok"}"#), None);
        let value: serde_json::Value =
            serde_json::from_slice(&repair(br#"{"t":"a\uD83D"}"#).unwrap()).unwrap();
        assert_eq!(value["t"], "a\u{fffd}");
    }
}
