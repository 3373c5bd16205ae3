//! A ledger read in one pass, line by line, for a person reading it as it streams (`ctxfold show`,
//! `diff`): each line's bytes as written, its number and offset, and its blocks exactly as
//! [`super::Ledger::walk`] gives them (the same reader, so the same blockIds), without a first
//! pass: the first line is out as soon as it is read, and memory is the largest line.
//!
//! Not for: plans, branches or edits (a `context_edit` is a line like any other here; `Ledger`
//! applies them).

use std::io::BufRead;

use super::source::Source;
use super::{Block, detect};
use crate::agents::{Agent, Blocks};
use crate::error::{IoContext, Result};

pub struct Stream<'s> {
    reader: Box<dyn BufRead + 's>,
    what: String,
    buf: Vec<u8>,
    agent: Option<Agent>,
    blocks: Option<Box<dyn Blocks>>,
    number: u64,
    offset: u64,
}

/// One line of a ledger.
pub struct Line<'a> {
    /// 1 for the first line.
    pub number: u64,
    /// Where the line starts in the ledger's bytes.
    pub offset: u64,
    /// The line as written, its `\n` included (the last line may have none).
    pub raw: &'a [u8],
    /// The ledger's agent, once a line has told it.
    pub agent: Option<Agent>,
    pub blocks: Vec<Block>,
}

impl Line<'_> {
    /// The line without its `\n` (and `\r`).
    pub fn text(&self) -> &[u8] {
        let line = self.raw.strip_suffix(b"\n").unwrap_or(self.raw);
        line.strip_suffix(b"\r").unwrap_or(line)
    }
}

impl<'s> Stream<'s> {
    pub fn new(source: &'s dyn Source) -> Result<Self> {
        Ok(Self {
            reader: source.open()?,
            what: source.describe(),
            buf: Vec::new(),
            agent: None,
            blocks: None,
            number: 0,
            offset: 0,
        })
    }

    /// What the ledger is called in messages.
    pub fn describe(&self) -> &str {
        &self.what
    }

    /// The next line with its blocks, or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<Line<'_>>> {
        self.buf.clear();
        let what = &self.what;
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .context(|| format!("read {what}"))?;
        if n == 0 {
            return Ok(None);
        }
        let raw = &self.buf[..];
        let text = raw.strip_suffix(b"\n").unwrap_or(raw);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if self.agent.is_none() {
            self.agent = detect(text);
            self.blocks = self.agent.map(|agent| agent.format().blocks());
        }
        let blocks = match &mut self.blocks {
            Some(reader) => reader.blocks(text).unwrap_or_default(),
            None => Vec::new(),
        };
        self.number += 1;
        let offset = self.offset;
        self.offset += n as u64;
        Ok(Some(Line {
            number: self.number,
            offset,
            raw,
            agent: self.agent,
            blocks,
        }))
    }
}
