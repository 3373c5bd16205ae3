//! Session ledgers (Pi sessions, Codex rollouts) read as blocks and anchors.
//!
//! Reading takes two streaming passes. [`Ledger::scan`] keeps a small skeleton per entry (its id,
//! parent, timestamp and what kind of entry it is: enough to find branches, compactions, edits and
//! usage); [`Ledger::walk`] then streams the entries again and hands out their blocks. Memory is the
//! largest line plus the skeleton (and the content of `context_edit` replacements, which are small).
//! The format is detected from the first parseable line; unparseable lines are passed over and
//! counted, never fatal. This module knows nothing of seed records.

pub mod block;
mod codex;
mod pi;
pub mod source;
mod surrogates;

use std::collections::{HashMap, HashSet};

use serde_json::Value;

pub use block::{Block, BlockKind, Call};
pub use source::{FileSource, FoldedFile, Source, StoreSource};

use crate::error::{Error, Result};
use source::Lines;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pi,
    Codex,
}

/// The skeleton of one parsed entry (a Pi entry, a Codex line).
#[derive(Debug, Clone)]
pub struct Entry {
    /// Pi: the entry's `id` (v2+); Codex: none.
    pub id: Option<String>,
    /// The previous entry on its branch (Pi: by `parentId`; v1 and Codex: the entry before).
    pub parent: Option<usize>,
    /// The entry's timestamp as written.
    pub timestamp: String,
    pub kind: EntryKind,
}

#[derive(Debug, Clone)]
pub enum EntryKind {
    /// The Pi header, and anything that makes no blocks and matters to no plan.
    Other,
    /// An entry that may make blocks; `tokens` is the context size an assistant message reports.
    Message { tokens: Option<u64> },
    /// A compaction: the entries before `first_kept` on its branch are compacted (Codex: all before).
    Compaction {
        first_kept: Option<usize>,
        tokens: Option<u64>,
    },
    /// A Pi `context_edit`: `replacement` is the new content, or `None` to omit the target.
    Edit {
        target: Option<usize>,
        replacement: Option<Value>,
    },
    /// A usage report: context tokens, and the window when the ledger says it.
    Usage { tokens: u64, window: Option<u64> },
}

/// A ledger after its first pass.
pub struct Ledger<'s> {
    source: &'s dyn Source,
    pub format: Format,
    pub session_id: String,
    pub cwd: Option<String>,
    pub entries: Vec<Entry>,
    /// Lines that did not parse as a JSON object (passed over).
    pub unparseable: u64,
}

/// One entry of the second pass, with its blocks as the ledger holds them.
pub struct Visit<'l> {
    pub index: usize,
    pub entry: &'l Entry,
    pub blocks: Vec<Block>,
    value: Value,
}

impl Ledger<'_> {
    pub fn scan(source: &dyn Source) -> Result<Ledger<'_>> {
        let mut lines = Lines::new(source)?;
        let mut format = None;
        let mut session_id = None;
        let mut cwd = None;
        let mut entries = Vec::new();
        let mut ids: HashMap<String, usize> = HashMap::new();
        let mut unparseable = 0;
        while let Some(line) = lines.next_line()? {
            let Some(value) = parse(line) else {
                unparseable += u64::from(!line.iter().all(u8::is_ascii_whitespace));
                continue;
            };
            let format = *format.get_or_insert_with(|| detect(&value));
            let entry = match format {
                Format::Pi => pi::skeleton(&value, entries.len(), &ids, &mut session_id, &mut cwd),
                Format::Codex => codex::skeleton(&value, entries.len(), &mut session_id, &mut cwd),
            };
            if let Some(id) = &entry.id {
                ids.insert(id.clone(), entries.len());
            }
            entries.push(entry);
        }
        let Some(format) = format else {
            return Err(Error::bad_input(
                source.describe(),
                "not a session ledger (no JSON lines)",
            ));
        };
        let session_id = session_id.ok_or_else(|| {
            Error::bad_input(
                source.describe(),
                "no session id in its first line (not a Pi or Codex session)",
            )
        })?;
        Ok(Ledger {
            source,
            format,
            session_id,
            cwd,
            entries,
            unparseable,
        })
    }

    /// The entry whose id is `id` (Pi), or the 1-based position `id` among parsed entries.
    pub fn find_entry(&self, id: &str) -> Option<usize> {
        if let Some(at) = self
            .entries
            .iter()
            .position(|e| e.id.as_deref() == Some(id))
        {
            return Some(at);
        }
        id.parse::<usize>()
            .ok()
            .filter(|n| (1..=self.entries.len()).contains(n))
            .map(|n| n - 1)
    }

    /// The index of the leaf of the active branch: the last entry (Pi), the last line (Codex).
    pub fn leaf(&self) -> Option<usize> {
        self.entries.len().checked_sub(1)
    }

    /// The entries from the root down to `to` (inclusive) along parents, in file order.
    pub fn path_to(&self, to: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = Some(to);
        let mut seen = HashSet::new();
        while let Some(i) = at {
            if !seen.insert(i) {
                break; // a malformed parent cycle
            }
            path.push(i);
            at = self.entries[i].parent;
        }
        path.reverse();
        path
    }

    /// Stream the entries again; `visit` gets each one with its blocks.
    pub fn walk(&self, mut visit: impl FnMut(&Visit<'_>) -> Result<()>) -> Result<()> {
        let mut lines = Lines::new(self.source)?;
        let mut codex = codex::Blocks::default();
        let mut index = 0;
        while let Some(line) = lines.next_line()? {
            let Some(value) = parse(line) else { continue };
            // A live session may have grown since the first pass: its appended entries wait for
            // the next read (the prefix read first is what every plan was made from).
            let Some(entry) = self.entries.get(index) else {
                break;
            };
            let blocks = match self.format {
                Format::Pi => pi::blocks(&value, line),
                Format::Codex => codex.blocks(&value),
            };
            visit(&Visit {
                index,
                entry,
                blocks,
                value,
            })?;
            index += 1;
        }
        if index != self.entries.len() {
            return Err(Error::session_changed(self.source.describe(), "it shrank"));
        }
        Ok(())
    }

    /// The blocks of `visit`'s entry as the `context_edit` at `edit` rewrites it: `None` when the
    /// edit omits it, else the re-made blocks with ids suffixed `:edit:<editId>`.
    pub fn edited(&self, visit: &Visit<'_>, edit: usize) -> Option<Vec<Block>> {
        let edit_entry = &self.entries[edit];
        let EntryKind::Edit { replacement, .. } = &edit_entry.kind else {
            return Some(visit.blocks.clone());
        };
        let content = replacement.as_ref()?;
        let edit_id = edit_entry.id.as_deref().unwrap_or_default();
        Some(pi::edited_blocks(&visit.value, content, edit_id))
    }

    /// Locate blocks by id, as a resolver does: the latest block of each plain id over every branch,
    /// and each `:edit:<editId>` revision by its edit. Returns what was found.
    pub fn resolve(&self, wanted: &HashSet<String>) -> Result<HashMap<String, Block>> {
        // For every edit revision asked for: target entry -> edit entries.
        let mut edits_for: HashMap<usize, Vec<usize>> = HashMap::new();
        for id in wanted {
            let Some((_, edit_id)) = id.split_once(":edit:") else {
                continue;
            };
            let Some(at) = self
                .entries
                .iter()
                .position(|e| e.id.as_deref() == Some(edit_id))
            else {
                continue;
            };
            if let EntryKind::Edit {
                target: Some(target),
                ..
            } = self.entries[at].kind
            {
                edits_for.entry(target).or_default().push(at);
            }
        }
        let mut found = HashMap::new();
        self.walk(|visit| {
            for block in &visit.blocks {
                if wanted.contains(&block.id) {
                    found.insert(block.id.clone(), block.clone());
                }
            }
            for &edit in edits_for
                .get(&visit.index)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                for block in self.edited(visit, edit).unwrap_or_default() {
                    if wanted.contains(&block.id) {
                        found.insert(block.id.clone(), block);
                    }
                }
            }
            Ok(())
        })?;
        Ok(found)
    }
}

fn parse(line: &[u8]) -> Option<Value> {
    match serde_json::from_slice::<Value>(line) {
        Ok(value @ Value::Object(_)) => Some(value),
        Ok(_) => None,
        Err(_) => match serde_json::from_slice::<Value>(&surrogates::repair(line)?) {
            Ok(value @ Value::Object(_)) => Some(value),
            _ => None,
        },
    }
}

/// Pi sessions open with a `{"type":"session",…}` header; anything else is read as a Codex rollout
/// (whose unknown line types make no blocks).
fn detect(first: &Value) -> Format {
    if first.get("type").and_then(Value::as_str) == Some("session") {
        Format::Pi
    } else {
        Format::Codex
    }
}

/// A timestamp field as written: a string as is, a number in its JSON spelling.
fn timestamp_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The `text` of the text parts of `content` joined by `\n` (a string content as is); and whether
/// an image part was among them.
fn text_of(content: Option<&Value>, text_types: &[&str]) -> (String, bool) {
    match content {
        Some(Value::String(s)) => (s.clone(), false),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            let mut image = false;
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
                if text_types.contains(&kind) {
                    if let Some(text) = part.get("text").and_then(Value::as_str) {
                        texts.push(text);
                    }
                } else if kind.contains("image") {
                    image = true;
                }
            }
            (texts.join("\n"), image)
        }
        _ => (String::new(), false),
    }
}
