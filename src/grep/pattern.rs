//! The one regular expression a search runs, built from ripgrep's flags: every `-e` pattern as an
//! alternative, `-F` (literal), `-i`, `-S` (smart case), `-w` (whole words).
//!
//! Text is searched as ripgrep searches a line, but a decoded string may hold newlines: `^` and `$`
//! match at every line's start and end, and a pattern may span lines where it says so (`\n`).

use regex::bytes::{Regex, RegexBuilder};

use super::prefilter::Prefilter;
use crate::error::{Error, Result};

/// The patterns as one regex over bytes (session text is not always UTF-8), and the test that
/// passes over lines that cannot match without decoding them, when there is one.
pub struct Pattern {
    pub regex: Regex,
    pub prefilter: Option<Prefilter>,
}

/// How the patterns are read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub fixed: bool,
    pub ignore_case: bool,
    /// Case-insensitive unless a pattern has an uppercase letter.
    pub smart_case: bool,
    pub word: bool,
}

/// The patterns read as `flags` say.
pub fn build(patterns: &[String], flags: Flags) -> Result<Pattern> {
    let alternatives: Vec<String> = patterns
        .iter()
        .map(|p| {
            let p = if flags.fixed {
                regex::escape(p)
            } else {
                p.clone()
            };
            if flags.word {
                // ripgrep's own reading of -w: a match neither preceded nor followed by a word
                // character, whatever the pattern's own ends are.
                format!(r"\b{{start-half}}(?:{p})\b{{end-half}}")
            } else {
                format!("(?:{p})")
            }
        })
        .collect();
    let ignore_case = flags.ignore_case
        || (flags.smart_case && !patterns.iter().any(|p| has_uppercase(p, flags.fixed)));
    let source = alternatives.join("|");
    let regex = RegexBuilder::new(&source)
        .multi_line(true)
        .case_insensitive(ignore_case)
        .build()
        .map_err(|e| {
            let shown = patterns.join("\", \"");
            Error::usage(format!(
                "bad PATTERN \"{shown}\": {}",
                e.to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            ))
        })?;
    Ok(Pattern {
        regex,
        prefilter: Prefilter::new(&source, ignore_case),
    })
}

/// Whether `pattern` names an uppercase letter itself: the letter of an escape (`\S`, `\W`,
/// `\p{Lu}`) is syntax, not text, as ripgrep's smart case reads it.
fn has_uppercase(pattern: &str, fixed: bool) -> bool {
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == '\\' && !fixed {
            chars.next();
        } else if c.is_uppercase() {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(patterns: &[&str], flags: Flags, text: &str) -> bool {
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        build(&patterns, flags)
            .unwrap()
            .regex
            .is_match(text.as_bytes())
    }

    #[test]
    fn smart_case_is_insensitive_only_without_an_uppercase_letter() {
        let smart = Flags {
            smart_case: true,
            ..Flags::default()
        };
        assert!(matches(&["cooldown"], smart, "the CoolDown"));
        assert!(!matches(&["CoolDown"], smart, "the cooldown"));
        assert!(matches(&[r"cool\Sown"], smart, "COOLDOWN"));
    }

    #[test]
    fn words_fixed_strings_and_alternatives() {
        let word = Flags {
            word: true,
            ..Flags::default()
        };
        assert!(!matches(&["cool"], word, "cooldown"));
        assert!(matches(&["cool"], word, "a cool-down"));
        assert!(matches(&["-x"], word, "run -x now"));
        let fixed = Flags {
            fixed: true,
            ..Flags::default()
        };
        assert!(matches(&["a.b"], fixed, "a.b"));
        assert!(!matches(&["a.b"], fixed, "axb"));
        assert!(matches(&["zzz", "b+"], Flags::default(), "abc"));
        assert!(matches(&["^two$"], Flags::default(), "one\ntwo\nthree"));
    }

    #[test]
    fn a_bad_pattern_is_a_usage_error_on_one_line() {
        let Err(e) = build(&["a(".to_string()], Flags::default()) else {
            panic!("a( is a pattern");
        };
        assert_eq!(e.status(), crate::error::Status::Usage);
        assert!(!e.to_string().contains('\n'), "{e}");
    }
}
