//! Where a ledger's bytes come from: a session file (plain or `.zst`) or a folded session streamed
//! out of the store. Every pass over a ledger opens it afresh, so nothing is held between passes.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use crate::error::{IoContext, Result};
use crate::store::Store;
use crate::store::manifest::Manifest;
use crate::store::reconstruct::SessionReader;

pub trait Source {
    /// A fresh reader over the ledger's (decompressed) bytes.
    fn open(&self) -> Result<Box<dyn BufRead + '_>>;
    /// How to name the ledger in messages.
    fn describe(&self) -> String;
}

/// A session file on disk, plain or `.jsonl.zst`.
pub struct FileSource(pub PathBuf);

impl Source for FileSource {
    fn open(&self) -> Result<Box<dyn BufRead + '_>> {
        Ok(crate::input::open(&self.0)?)
    }
    fn describe(&self) -> String {
        self.0.display().to_string()
    }
}

/// A folded session, read back out of the store and verified as it streams.
pub struct StoreSource<'a> {
    pub store: &'a Store,
    pub manifest: &'a Manifest,
}

impl Source for StoreSource<'_> {
    fn open(&self) -> Result<Box<dyn BufRead + '_>> {
        Ok(Box::new(BufReader::with_capacity(
            1 << 20,
            SessionReader::new(self.store, self.manifest),
        )))
    }
    fn describe(&self) -> String {
        format!("folded session {}", self.manifest.session.id)
    }
}

/// The ledger's lines one at a time into a reused buffer: memory is the largest line.
pub struct Lines<'a> {
    reader: Box<dyn BufRead + 'a>,
    what: String,
    buf: Vec<u8>,
}

impl<'a> Lines<'a> {
    pub fn new(source: &'a dyn Source) -> Result<Self> {
        Ok(Self {
            reader: source.open()?,
            what: source.describe(),
            buf: Vec::new(),
        })
    }

    /// The next line without its `\n` (and `\r`), or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>> {
        self.buf.clear();
        let what = &self.what;
        let n = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .context(|| format!("read {what}"))?;
        if n == 0 {
            return Ok(None);
        }
        let mut line = &self.buf[..];
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest;
        }
        if let Some(rest) = line.strip_suffix(b"\r") {
            line = rest;
        }
        Ok(Some(line))
    }
}
