//! The second pass: a matching session read again, line by line with its agent's block reader, to
//! say of each match its turn (one per message from a person, as `ctxfold show` counts them), its
//! role (the kind of the block whose text holds it: `user`, `text`, `thinking`, `tool_call`,
//! `tool_result`, `summary`, `context`; `meta` for a string no block shows, as an id or a path)
//! and its block's id, and to cut the text lines around it (`-A`, `-B`, `-C`).

use std::ops::Range;

use memchr::memmem;
use regex::bytes::Regex;

use super::matches::{Match, matches};
use super::strings::{Texts, raw_of};
use crate::error::Result;
use crate::history::render::Renderer;
use crate::ledger::stream::Line;
use crate::ledger::{Block, Source, Stream};

/// Where a match is.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub turn: u64,
    /// The session's line (1 for the first).
    pub line: u64,
    pub role: &'static str,
    pub block_id: Option<&'a str>,
}

/// What the second pass shows, in order.
pub enum Shown<'a> {
    /// A text line holding matches: their ranges in it, and in the session's bytes (as written,
    /// escapes and all).
    Match {
        at: At<'a>,
        text: &'a [u8],
        ranges: Vec<Range<usize>>,
        bytes: Vec<Range<u64>>,
    },
    /// A text line around a match.
    Context { at: At<'a>, text: &'a [u8] },
    /// Text lines that do not follow the ones shown before.
    Break,
}

/// How much a session shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct Around {
    pub before: usize,
    pub after: usize,
    /// Matching text lines at most (`-m`).
    pub max_count: Option<u64>,
}

/// Show the matches on `lines` (the first pass's, in order) of the session `source` holds.
pub fn show(
    source: &dyn Source,
    lines: &[u64],
    regex: &Regex,
    around: Around,
    each: &mut dyn FnMut(Shown<'_>) -> Result<()>,
) -> Result<()> {
    let mut stream = Stream::new(source)?;
    let mut texts = Texts::default();
    let mut wanted = lines.iter().copied().peekable();
    let (mut turn, mut left, mut shown_any) = (0, around.max_count.unwrap_or(u64::MAX), false);
    while let Some(line) = stream.next_line()? {
        if Renderer::opens_turn(&line) {
            turn += 1;
        }
        if wanted.peek() != Some(&line.number) {
            continue;
        }
        wanted.next();
        texts.decode(line.text());
        let found = matches(regex, &texts);
        let mut at = 0;
        while at < found.len() && left > 0 {
            let value = found[at].value;
            let end = at + found[at..].iter().take_while(|m| m.value == value).count();
            let value_matches = &found[at..end];
            at = end;
            let scene = Scene {
                line: &line,
                texts: &texts,
                value,
                turn,
            };
            scene.show(value_matches, around, &mut left, &mut shown_any, each)?;
        }
        if left == 0 || wanted.peek().is_none() {
            break;
        }
    }
    Ok(())
}

/// One value of one line, with the matches in it.
struct Scene<'l> {
    line: &'l Line<'l>,
    texts: &'l Texts,
    value: usize,
    turn: u64,
}

impl Scene<'_> {
    fn show(
        &self,
        found: &[Match],
        around: Around,
        left: &mut u64,
        shown_any: &mut bool,
        each: &mut dyn FnMut(Shown<'_>) -> Result<()>,
    ) -> Result<()> {
        let value = &self.texts.values[self.value];
        let text = &self.texts.text[value.text.clone()];
        let first = &text[found[0].range.clone()];
        let block = attributed(&self.line.blocks, first);
        let at = At {
            turn: self.turn,
            line: self.line.number,
            role: block.map_or("meta", |b| b.kind.name()),
            block_id: block.map(|b| b.id.as_str()),
        };
        // The text's lines, as ranges of it.
        let starts: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text).map(|i| i + 1))
            .collect();
        let line_of = |offset: usize| starts.partition_point(|&s| s <= offset) - 1;
        let range_of = |i: usize| starts[i]..starts.get(i + 1).map_or(text.len(), |&s| s - 1);
        // Matching text lines (each match on the lines it spans), up to what -m leaves.
        let mut matched: Vec<usize> = Vec::new();
        let mut kept: Vec<&Match> = Vec::new();
        for m in found {
            let first_line = line_of(m.range.start);
            if matched.last() != Some(&first_line) {
                if *left == 0 {
                    break;
                }
                *left -= 1;
            }
            let last_line = line_of(m.range.end.saturating_sub(1).max(m.range.start));
            for i in first_line..=last_line {
                if matched.last().is_none_or(|&l| l < i) {
                    matched.push(i);
                }
            }
            kept.push(m);
        }
        let mut next = 0;
        let mut shown_to: Option<usize> = None;
        for &i in &matched {
            let from = i
                .saturating_sub(around.before)
                .max(shown_to.map_or(0, |s| s + 1));
            if (around.before > 0 || around.after > 0)
                && *shown_any
                && shown_to.is_none_or(|s| from > s + 1)
            {
                each(Shown::Break)?;
            }
            *shown_any = true;
            for c in from..i {
                each(Shown::Context {
                    at,
                    text: &text[range_of(c)],
                })?;
            }
            let line = range_of(i);
            let mut ranges = Vec::new();
            let mut bytes = Vec::new();
            while let Some(m) = kept.get(next).filter(|m| m.range.start < line.end + 1) {
                let start = m.range.start.max(line.start);
                let end = m.range.end.min(line.end);
                ranges.push(start - line.start..end - line.start);
                let raw = raw_of(self.line.raw, value, start..end);
                let base = self.line.offset;
                bytes.push(base + raw.start as u64..base + raw.end as u64);
                if m.range.end > line.end + 1 {
                    break;
                }
                next += 1;
            }
            each(Shown::Match {
                at,
                text: &text[line.clone()],
                ranges,
                bytes,
            })?;
            shown_to = Some(i);
            let after_end = (i + around.after).min(starts.len() - 1);
            let stop = matched
                .iter()
                .find(|&&l| l > i)
                .map_or(after_end, |&l| after_end.min(l - 1));
            for c in i + 1..=stop {
                each(Shown::Context {
                    at,
                    text: &text[range_of(c)],
                })?;
                shown_to = Some(c);
            }
        }
        Ok(())
    }
}

/// The block of a line whose text holds `matched`, if one does.
fn attributed<'b>(blocks: &'b [Block], matched: &[u8]) -> Option<&'b Block> {
    blocks.iter().find(|b| {
        memmem::find(b.shown_text().as_bytes(), matched).is_some()
            || memmem::find(b.text.as_bytes(), matched).is_some()
    })
}
