//! The skeleton of a ledger: one small entry per object read, enough to find branches, compactions,
//! edits and usage without holding any content.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The skeleton of one parsed entry (a Pi entry, a Codex line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Entry {
    /// Pi: the entry's `id` (v2+); Claude Code: a row's `uuid`; Codex: none.
    pub id: Option<String>,
    /// The previous entry on its branch (Pi: by `parentId`; Claude Code: by `parentUuid`; v1 and
    /// Codex: the entry before).
    pub parent: Option<usize>,
    /// The entry's timestamp as written (empty when it has none: a Claude Code side record).
    pub timestamp: String,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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
    /// A Pi `context_edit`: `replacement` is the new content as written, or `None` to omit the
    /// target.
    Edit {
        target: Option<usize>,
        replacement: Option<Box<RawValue>>,
    },
    /// A usage report: context tokens, and the window when the ledger says it.
    Usage { tokens: u64, window: Option<u64> },
}
