//! A test of a line's bytes as written that passes over most lines without decoding them: when
//! every match of the patterns starts (or else ends) with one of a few literals that JSON never
//! escapes (no `"`, `\`, `/` nor control character), a line whose bytes hold none of them, and no
//! `\u` escape (which may spell any character), holds no match in its decoded text either.
//!
//! Not for: deciding a match. A line the test passes is decoded and searched.

use memchr::memmem;
use regex::bytes::{Regex, RegexBuilder};
use regex_syntax::hir::literal::{ExtractKind, Extractor};

use super::ngrams::Query;

/// Literals tried at most: more, and the test costs what it saves.
const MAX_LITERALS: usize = 64;

pub struct Prefilter {
    literals: Regex,
    escape: memmem::Finder<'static>,
    /// The literals or a `\u`: where in a run of bytes a match may start.
    starts: Regex,
    /// The bytes a hit of `starts` spans at most.
    longest: usize,
    /// The sessions' n-gram filters are asked about the literals.
    query: Option<Query>,
}

impl Prefilter {
    /// The test for `pattern` (the search's regex, before case is ignored), or `None` when no
    /// sound one is known.
    pub fn new(pattern: &str, ignore_case: bool) -> Option<Self> {
        let hir = regex_syntax::ParserBuilder::new()
            .multi_line(true)
            .build()
            .parse(pattern)
            .ok()?;
        let found = [ExtractKind::Prefix, ExtractKind::Suffix]
            .into_iter()
            .find_map(|kind| literals(&hir, kind))?;
        let alternatives: Vec<String> = found.iter().map(|l| regex::escape(l)).collect();
        let literals = RegexBuilder::new(&alternatives.join("|"))
            .case_insensitive(ignore_case)
            .build()
            .ok()?;
        let starts = RegexBuilder::new(&format!(r"{}|\\u", alternatives.join("|")))
            .case_insensitive(ignore_case)
            .build()
            .ok()?;
        // A character matched without regard to case may take up to 4 bytes whatever the one
        // written (`k` matches the Kelvin sign's 3).
        let longest = 4 * found.iter().map(|a| a.len()).max().unwrap_or(0) + 2;
        let bytes: Vec<Vec<u8>> = found.iter().map(|l| l.as_bytes().to_vec()).collect();
        Some(Self {
            literals,
            escape: memmem::Finder::new(b"\\u"),
            starts,
            longest,
            query: Query::new(&bytes, ignore_case),
        })
    }

    /// Whether `raw` (a line as written) may hold a match once decoded.
    pub fn may_match(&self, raw: &[u8]) -> bool {
        self.literals.is_match(raw) || self.escape.find(raw).is_some()
    }

    /// Where in `raw`, from `at` on, the first run of bytes that would make [`Self::may_match`]
    /// true lies (none crosses a `\n`: no literal holds a control character).
    pub fn next_hit(&self, raw: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
        self.starts.find_at(raw, at).map(|m| m.range())
    }

    /// The most bytes a run found by [`Self::next_hit`] spans: a hit across the end of one run of
    /// bytes and the start of the next lies within this many bytes of the cut on either side.
    pub fn longest(&self) -> usize {
        self.longest
    }

    /// What to ask a session's n-gram filter, when a filter can answer (every literal has a
    /// n-gram it can be asked about).
    pub fn query(&self) -> Option<&Query> {
        self.query.as_ref()
    }
}

/// The literals every match starts (or ends) with, when they are few, none empty, and none holds
/// a byte JSON may escape.
fn literals(hir: &regex_syntax::hir::Hir, kind: ExtractKind) -> Option<Vec<String>> {
    let mut seq = Extractor::new().kind(kind.clone()).extract(hir);
    match kind {
        ExtractKind::Prefix => seq.optimize_for_prefix_by_preference(),
        _ => seq.optimize_for_suffix_by_preference(),
    }
    let literals = seq.literals()?;
    if literals.is_empty() || literals.len() > MAX_LITERALS {
        return None;
    }
    literals
        .iter()
        .map(|literal| {
            let bytes = literal.as_bytes();
            let plain = !bytes.is_empty() && bytes.iter().all(|&b| never_escaped(b));
            plain.then(|| std::str::from_utf8(bytes).ok().map(str::to_owned))?
        })
        .collect()
}

/// Whether JSON writes `byte` as itself, always (non-ASCII may be written `\u…`, which
/// [`Prefilter::may_match`] lets through).
fn never_escaped(byte: u8) -> bool {
    byte >= 0x20 && !matches!(byte, b'"' | b'\\' | b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_without_the_literals_are_passed_over_and_escapes_let_through() {
        let pre = Prefilter::new(r"(?:cool(?:down|er))|(?:warm\w+)", true).unwrap();
        assert!(pre.may_match(br#"{"text":"the COOLDOWN"}"#));
        assert!(pre.may_match(br#"{"text":"warming"}"#));
        assert!(!pre.may_match(br#"{"text":"cold"}"#));
        // `c` written as an escape: decoded, it may match.
        assert!(pre.may_match(br#"{"text":"\u0063ooldown"}"#));
    }

    #[test]
    fn no_test_where_a_match_may_start_anywhere_or_with_an_escaped_byte() {
        assert!(Prefilter::new(r"\w+", false).is_none());
        // No literal starts every match, one ends every match.
        let pre = Prefilter::new(r"\w+ing toshal", false).unwrap();
        assert!(pre.may_match(b"going toshal"));
        assert!(!pre.may_match(b"going home"));
        assert!(Prefilter::new(r"a|.*", false).is_none());
        assert!(Prefilter::new("say \"hi\"", false).is_none());
        assert!(Prefilter::new(r"src/main", false).is_none());
        assert!(Prefilter::new(r"a\nb", false).is_none());
        assert!(Prefilter::new(r"\b{start-half}(?:word)\b{end-half}", false).is_some());
    }
}
