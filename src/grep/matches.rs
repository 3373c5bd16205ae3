//! Where a pattern matches in one line's decoded values, and the text lines of a value those
//! matches are on: what both passes count, so that `-c`, `-l` and `-m` agree with what is printed.

use std::collections::HashSet;
use std::ops::Range;

use regex::bytes::Regex;

use super::pattern::Pattern;
use super::strings::Texts;

/// A match in one value: the value's index and the match's range in the value's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub value: usize,
    pub range: Range<usize>,
}

/// Every match of `regex` in `texts`' values, value by value. A pass over all the values at once
/// tells most lines apart (no match in any); a line that has one is searched value by value, so
/// that no match spans two values and each value's ends are the ends of its text.
///
/// A text line that an earlier value of the same JSON line holds too is left out: agents write
/// what a tool printed twice on one line (Claude Code's `tool_result` and `toolUseResult`), and
/// a person wants it once, as ripgrep shows a line once.
pub fn matches(regex: &Regex, texts: &Texts) -> Vec<Match> {
    if !regex.is_match(&texts.text) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut seen: HashSet<&[u8]> = HashSet::new();
    for (i, value) in texts.values.iter().enumerate() {
        let text = &texts.text[value.text.clone()];
        let mut lines = Vec::new();
        // The text line of the match before: matches come in order, so each byte of a long
        // text is looked at a bounded number of times, however many matches it holds.
        let mut line: Option<Range<usize>> = None;
        for m in regex.find_iter(text).filter(|m| !m.is_empty()) {
            let current = match line.take() {
                Some(l) if m.start() <= l.end => l,
                before => {
                    let from = before.map_or(0, |l| l.end);
                    let start = memchr::memrchr(b'\n', &text[from..m.start()])
                        .map_or(from, |i| from + i + 1);
                    let end = memchr::memchr(b'\n', &text[m.start()..])
                        .map_or(text.len(), |i| m.start() + i);
                    start..end
                }
            };
            let bytes = &text[current.clone()];
            line = Some(current);
            if seen.contains(bytes) {
                continue;
            }
            if lines.last() != Some(&bytes) {
                lines.push(bytes);
            }
            found.push(Match {
                value: i,
                range: m.range(),
            });
        }
        seen.extend(lines);
    }
    found
}

/// The text lines (value, line index in its text) the matches start on, each once, in order: what
/// ripgrep counts as matching lines.
pub fn lines_of(texts: &Texts, matches: &[Match]) -> Vec<(usize, usize)> {
    let mut lines: Vec<(usize, usize)> = Vec::new();
    // Newlines counted on from the match before: a long output with many matches is read once.
    let (mut value, mut at, mut line) = (usize::MAX, 0, 0);
    for m in matches {
        let text = &texts.text[texts.values[m.value].text.clone()];
        if m.value != value {
            (value, at, line) = (m.value, 0, 0);
        }
        line += memchr::memchr_iter(b'\n', &text[at..m.range.start]).count();
        at = m.range.start;
        if lines.last() != Some(&(value, line)) {
            lines.push((value, line));
        }
    }
    lines
}

/// How many text lines of `line` (a JSONL line without its `\n`) hold a match.
pub fn count(pattern: &Pattern, texts: &mut Texts, line: &[u8]) -> u64 {
    if (pattern.prefilter.as_ref()).is_some_and(|pre| !pre.may_match(line)) {
        return 0;
    }
    texts.decode(line);
    let found = matches(&pattern.regex, texts);
    if found.is_empty() {
        return 0;
    }
    lines_of(texts, &found).len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_stay_within_one_value_and_count_by_text_line() {
        let pattern = Pattern {
            regex: Regex::new(r"(?m)b\s+c|^two|x").unwrap(),
            prefilter: None,
        };
        let regex = &pattern.regex;
        let mut texts = Texts::default();
        // "b" ends one value and "c" starts the next: the newline between them is no text.
        assert_eq!(count(&pattern, &mut texts, br#"{"a":"ab","b":"cd"}"#), 0);
        assert_eq!(
            count(&pattern, &mut texts, br#"{"a":"one\ntwo x","b":"b\nc"}"#),
            2
        );
        let found = matches(regex, &texts);
        assert_eq!(lines_of(&texts, &found), vec![(0, 1), (1, 0)]);
        // The same text line twice on one JSON line is one matching line.
        assert_eq!(
            count(
                &pattern,
                &mut texts,
                br#"{"a":"1\ntwo x","b":"two x","c":"z\ntwo x","d":"x y"}"#
            ),
            2
        );
    }
}
