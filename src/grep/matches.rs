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

/// The text lines of each value of `texts` that hold a match, each as its value's index and a hash
/// of its bytes, in order, each once: what [`count`] counts of one value, before it leaves out the
/// lines an earlier value of the same JSON line holds too. For a value that is a stored field,
/// searched alone: [`count_values`] adds up a line's fields as [`count`] counts the line.
pub fn value_lines(regex: &Regex, texts: &Texts) -> Vec<(u32, u128)> {
    let mut found = Vec::new();
    if !regex.is_match(&texts.text) {
        return found;
    }
    for (i, value) in texts.values.iter().enumerate() {
        let text = &texts.text[value.text.clone()];
        // As `matches` tells a match's text line: the one its start is on, or the one of the
        // match before when it starts at that line's end.
        let mut line: Option<Range<usize>> = None;
        for m in regex.find_iter(text).filter(|m| !m.is_empty()) {
            match &line {
                Some(l) if m.start() <= l.end => continue,
                before => {
                    let from = before.as_ref().map_or(0, |l| l.end);
                    let start = memchr::memrchr(b'\n', &text[from..m.start()])
                        .map_or(from, |i| from + i + 1);
                    let end = memchr::memchr(b'\n', &text[m.start()..])
                        .map_or(text.len(), |i| m.start() + i);
                    line = Some(start..end);
                    let hash = xxhash_rust::xxh3::xxh3_128(&text[start..end]);
                    found.push((i as u32, hash));
                }
            }
        }
    }
    found
}

/// How many text lines hold a match in a JSON line whose only matches are in `values` (each
/// value's [`value_lines`], in the line's order): a text line an earlier value holds is left out.
pub fn count_values<'a>(values: impl IntoIterator<Item = &'a [(u32, u128)]>) -> u64 {
    let mut seen: HashSet<u128> = HashSet::new();
    let mut this: Vec<u128> = Vec::new();
    let mut n = 0;
    for lines in values {
        let mut value = None;
        for &(i, hash) in lines {
            if value != Some(i) {
                seen.extend(this.drain(..));
                value = Some(i);
            }
            if !seen.contains(&hash) {
                n += 1;
                this.push(hash);
            }
        }
        seen.extend(this.drain(..));
    }
    n
}

/// How many text lines of `line` (a JSONL line without its `\n`) hold a match: the lines
/// [`lines_of`] tells of [`matches`], without building every match of a common word.
pub fn count(pattern: &Pattern, texts: &mut Texts, line: &[u8]) -> u64 {
    if (pattern.prefilter.as_ref()).is_some_and(|pre| !pre.may_match(line)) {
        return 0;
    }
    texts.decode(line);
    count_values([&value_lines(&pattern.regex, texts)[..]])
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

    /// Each value searched alone, then added up, counts what the line searched whole counts.
    #[test]
    fn values_searched_alone_add_up_to_their_line() {
        let pattern = Pattern {
            regex: Regex::new(r"(?m)b\s+c|^two|x|\n|y$").unwrap(),
            prefilter: None,
        };
        let lines: [&[u8]; 6] = [
            br#"{"a":"1\ntwo x","b":"two x","c":"z\ntwo x","d":"x y"}"#,
            br#"{"a":"two x\ntwo x","b":"two x\nq","c":"{\"k\":\"two x\",\"l\":\"y\"}"}"#,
            br#"{"a":"xx\nxx","b":"xx","c":"b\n  c y"}"#,
            br#"["x","x",{"y":"x"},"none"]"#,
            br#"{"a":"nothing"}"#,
            br#"{"a":"x","x":"b"}"#,
        ];
        let mut texts = Texts::default();
        for line in lines {
            let whole = count(&pattern, &mut texts, line);
            // The line's values, each in a line of its own (as a stored field is searched).
            let values: Vec<Vec<u8>> = {
                texts.decode(line);
                let mut raws: Vec<_> = texts.values.iter().map(|v| v.raw.clone()).collect();
                // A JSON string's strings are one value as written.
                raws.dedup();
                (raws.into_iter())
                    .map(|raw| {
                        let mut token = b"[\"".to_vec();
                        token.extend_from_slice(&line[raw]);
                        token.extend_from_slice(b"\"]");
                        token
                    })
                    .collect()
            };
            let mut alone = Vec::new();
            for value in &values {
                texts.decode(value);
                alone.push(value_lines(&pattern.regex, &texts));
            }
            let added = count_values(alone.iter().map(Vec::as_slice));
            assert_eq!(added, whole, "{}", String::from_utf8_lossy(line));
            // What the second pass shows counts the same lines.
            texts.decode(line);
            let shown = lines_of(&texts, &matches(&pattern.regex, &texts)).len() as u64;
            assert_eq!(shown, whole, "{}", String::from_utf8_lossy(line));
        }
        assert!(count(&pattern, &mut texts, lines[0]) > 0);
    }
}
