//! The error lexicon: which lines of folded output are error lines, and which kind (the marker),
//! so that a record's capped list can be spread over kinds instead of filled by one noisy log.
//!
//! It finds everything the extension's lexicon finds, minus its false positives (zero counts such as
//! `0 failed` or `errors: 0`), plus errno texts (`No such file or directory`) and more `E…` codes.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

/// Whole words that mark an error line as they are (case-sensitive).
const WORDS: &[&str] = &[
    "error",
    "Error",
    "ERROR",
    "FAIL",
    "FAILED",
    "FAILURE",
    "failed",
    "failure",
    "failures",
    "fails",
    "FATAL",
    "fatal",
    "Fatal",
    "PANIC",
    "panic",
    "Panic",
    "panicked",
    "aborted",
    "Aborted",
    "exception",
    "Traceback",
    "ENOENT",
    "ECONNREFUSED",
    "EACCES",
    "EPERM",
    "EADDRINUSE",
    "ECONNRESET",
    "ETIMEDOUT",
    "EEXIST",
    "ENOTDIR",
    "EISDIR",
    "ENOSPC",
    "EPIPE",
    "EMFILE",
    "ELIFECYCLE",
];

/// Phrases that mark an error line wherever they appear.
const PHRASES: &[&str] = &[
    "npm ERR!",
    "Segmentation fault",
    "core dumped",
    "Permission denied",
    "No such file or directory",
    "Connection refused",
    "Operation not permitted",
    "Address already in use",
    "No space left on device",
    "command not found",
    "Is a directory",
    "Not a directory",
    "Too many open files",
    "Connection reset by peer",
    "Out of memory",
    "✗",
    "✘",
];

/// Words whose zero counts (`0 failed`, `errors: 0`) say that nothing failed.
const COUNTED: &[&str] = &[
    "error", "errors", "failed", "failures", "failure", "fail", "fails", "failing", "FAILED",
];

/// Openings of source code lines: `error` in `catch (error) {` or `interface HookError` is code, not
/// an error that happened.
const CODE_OPENINGS: &[&str] = &[
    "import ",
    "export ",
    "const ",
    "let ",
    "var ",
    "function ",
    "class ",
    "interface ",
    "type ",
    "pub ",
    "fn ",
    "def ",
    "//",
    "/*",
    "* ",
    "#include",
    "} catch",
    "catch ",
    "if (",
    "return ",
    "throw new ",
    "raise ",
];

/// Substrings every word of [`WORDS`], every `Fail…` and every `…Error`/`…Exception`/`…Warning`
/// holds: a line with none of them needs no word-by-word look (most lines of output).
const WORD_HINTS: &[&str] = &[
    "rror",
    "RROR",
    "ail",
    "AIL",
    "atal",
    "ATAL",
    "anic",
    "ANIC",
    "bort",
    "xception",
    "raceback",
    "arning",
    "ENOENT",
    "ECONN",
    "EACCES",
    "EPERM",
    "EADDR",
    "ETIMEDOUT",
    "EEXIST",
    "ENOTDIR",
    "EISDIR",
    "ENOSPC",
    "EPIPE",
    "EMFILE",
    "ELIFECYCLE",
];

static PHRASE_FINDER: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(PHRASES).expect("fixed patterns"));
static HINT_FINDER: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(WORD_HINTS).expect("fixed patterns"));
/// Phrases and hints together: a line with none of them is no error line. Which of them is found
/// first in a line does not matter, and a leftmost search lets the SIMD prefilter do the scan (3×
/// faster than the standard one over the corpus's block texts).
static ANY_FINDER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .build(PHRASES.iter().chain(WORD_HINTS))
        .expect("fixed patterns")
});

/// Each error line of `text` (trimmed), with its marker, in order.
///
/// One search over the whole text finds the few lines that may be error lines; only those are
/// looked at word by word. No pattern holds a `\n` or starts or ends with white space, so a line
/// holds a pattern exactly when its trimmed text does.
pub fn error_lines<'t>(text: &'t str, mut found: impl FnMut(&'t str, &'t str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(hit) = ANY_FINDER.find(aho_corasick::Input::new(text).span(at..text.len())) {
        let start = memchr::memrchr(b'\n', &bytes[..hit.start()]).map_or(0, |p| p + 1);
        let end = memchr::memchr(b'\n', &bytes[hit.end()..]).map_or(text.len(), |p| hit.end() + p);
        let line = text[start..end].trim();
        if let Some(marker) = marker(line) {
            found(line, marker);
        }
        at = end;
    }
}

/// The marker of an error line (what made it one), or `None`.
pub fn marker(line: &str) -> Option<&str> {
    if let Some(found) = PHRASE_FINDER.find(line) {
        return Some(PHRASES[found.pattern().as_usize()]);
    }
    if !HINT_FINDER.is_match(line) {
        return None;
    }
    let body = line.trim_start_matches(['+', '-', ' ', '\t']);
    if CODE_OPENINGS.iter().any(|o| body.starts_with(o))
        || body.ends_with('{')
        || body.ends_with(';')
    {
        return None;
    }
    let words = words(line);
    for (i, &(at, word)) in words.iter().enumerate() {
        if zero_count(line, &words, i) {
            continue;
        }
        if WORDS.contains(&word) || (word.starts_with("Fail") && word.len() > 4) {
            return Some(word);
        }
        // A class-like name: `TypeError`, `IOException`, `DeprecationWarning`.
        let classy = ["Error", "Exception", "Warning"]
            .iter()
            .any(|suffix| word.len() > suffix.len() && word.ends_with(suffix));
        if classy && word.as_bytes()[0].is_ascii_uppercase() {
            return Some(&line[at..at + word.len()]);
        }
    }
    None
}

/// `(byte offset, word)` for each run of ASCII letters, digits and `_`.
fn words(line: &str) -> Vec<(usize, &str)> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut start = None;
    for (i, &b) in bytes.iter().chain(std::iter::once(&b' ')).enumerate() {
        let word_byte = b.is_ascii_alphanumeric() || b == b'_';
        match (word_byte, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &line[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Whether word `i` is a counted word with a zero count: `0 failed`, `failed: 0`, `errors=0`.
fn zero_count(line: &str, words: &[(usize, &str)], i: usize) -> bool {
    let (at, word) = words[i];
    if !COUNTED.contains(&word.to_ascii_lowercase().as_str()) && !COUNTED.contains(&word) {
        return false;
    }
    let before = i.checked_sub(1).map(|p| words[p]);
    if let Some((pat, "0")) = before
        && line[pat + 1..at].trim().is_empty()
    {
        return true;
    }
    let after = line[at + word.len()..].trim_start_matches([' ', ':', '=']);
    after.starts_with('0') && !after[1..].starts_with(|c: char| c.is_ascii_digit())
}

/// A line's shape for near-duplicate detection: its first 160 characters with every run of digits
/// folded to one `0`, so that `ERROR at 12:03` and `ERROR at 7:59` count once.
pub fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len().min(120));
    let mut last = '\0';
    for c in line.chars().take(160) {
        let c = if c.is_ascii_digit() { '0' } else { c };
        if c == '0' && last == '0' {
            continue;
        }
        out.push(c);
        last = c;
    }
    out
}

/// The first `max` characters of `line`.
pub fn clip(line: &str, max: usize) -> &str {
    match line.char_indices().nth(max) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_are_found() {
        for line in [
            "npm ERR! code ELIFECYCLE",
            "Traceback (most recent call last):",
            "ValueError: invalid literal for int() with base 10: 'x'",
            "Segmentation fault (core dumped)",
            "cat: /nope: No such file or directory",
            "FAIL tests/ladder.test.ts > step advance",
            "error[E0308]: mismatched types",
            "thread 'main' panicked at src/main.rs:2:5",
            "Error: ENOENT: no such file",
            "test result: FAILED. 3 passed; 1 failed",
            "✗ should render",
            "bash: foo: command not found",
            "1 failed, 10 passed",
        ] {
            assert!(marker(line).is_some(), "{line}");
        }
    }

    #[test]
    fn zero_counts_and_lookalikes_are_not_errors() {
        for line in [
            "10 passed, 0 failed",
            "Tests: 0 failed, 12 passed",
            "errors: 0, warnings: 2",
            "0 errors",
            "\"is_error\": false",
            "stderr was empty",
            "ErrorBoundary renders children",
            "terrorism",
            "} catch (error) {",
            "export interface HookError {",
            "+\tthrow new Error(`bad`);",
        ] {
            assert_eq!(marker(line), None, "{line}");
        }
    }

    #[test]
    fn shapes_fold_numbers_and_clip_keeps_char_boundaries() {
        assert_eq!(shape("ERROR at 12:03 x"), shape("ERROR at 7:59 x"));
        assert_ne!(shape("ERROR a"), shape("ERROR b"));
        assert_eq!(clip("éé", 1), "é");
        assert_eq!(clip("ab", 5), "ab");
    }
}
