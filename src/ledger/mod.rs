//! Session ledgers (Pi sessions, Codex rollouts, Claude Code transcripts) read as blocks and
//! anchors.
//!
//! Reading takes two streaming passes. [`Ledger::scan`] keeps a small skeleton per entry (its id,
//! parent, timestamp and what kind of entry it is: enough to find branches, compactions, edits and
//! usage); [`Ledger::walk`] then streams the entries again and hands out their blocks. Memory is the
//! largest line plus the skeleton (and the content of `context_edit` replacements, which are small).
//! The agent is detected from the first parseable line; unparseable lines are passed over and
//! counted, never fatal. An entry is one JSON object: one per line, but for an agent that may
//! write two on one line (Claude Code), one per object. What a line means (its skeleton, its blocks) is its agent's module's
//! (`agents`); this module drives the passes and knows nothing of seed records.

pub mod source;
pub mod stream;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::blocks::{Block, BlockKind, Call, Entry, EntryKind, Outcome};
pub use source::{AlongsideFile, FileSource, FoldedFile, Kept, Source, StoreSource};
pub use stream::Stream;

use crate::agents::{Agent, Blocks, json};
use crate::error::{Error, Result};
use source::Lines;

/// What a first pass found in a ledger's first `bytes`: a pass over the ledger grown by an append
/// since goes on from there ([`Ledger::scan_on`]).
#[derive(Clone, Serialize, Deserialize)]
pub struct Scanned {
    pub agent: Agent,
    /// `None` only for a ledger with nothing to index (see [`Ledger::scan_on`]).
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub entries: Vec<Entry>,
    /// Lines that did not parse as a JSON object (passed over).
    pub unparseable: u64,
    /// The bytes read.
    pub bytes: u64,
}

/// A ledger after its first pass: what it found (shared with where an extraction of it ends: a
/// long session's is megabytes), and where to read it again.
pub struct Ledger<'s> {
    source: &'s dyn Source,
    scanned: Arc<Scanned>,
}

impl std::ops::Deref for Ledger<'_> {
    type Target = Scanned;

    fn deref(&self) -> &Scanned {
        &self.scanned
    }
}

/// One entry of the second pass, with its blocks as the ledger holds them.
pub struct Visit<'l> {
    pub index: usize,
    /// The 1-based number of its line among the lines this walk read: the file's line number for
    /// a walk from the start.
    pub line_number: u64,
    pub entry: &'l Entry,
    pub blocks: Vec<Block>,
    line: &'l [u8],
}

/// Where a walk stands between two lines: the entries visited, the bytes of the lines they came
/// from, and the block reader's state after them.
pub struct Position {
    pub entries: usize,
    pub bytes: u64,
    pub blocks: Box<dyn Blocks>,
}

impl Ledger<'_> {
    pub fn scan(source: &dyn Source) -> Result<Ledger<'_>> {
        Self::scan_on(source, None)
    }

    /// [`scan`](Self::scan), going on from what a scan of the ledger's first bytes found (`from`):
    /// only the lines after them are read as entries. `from` must be of those very bytes (the
    /// caller knows the ledger grew from them), as a walk's [`Position`] must; when the ledger is
    /// shorter, it is scanned whole.
    pub fn scan_on(source: &dyn Source, from: Option<Scanned>) -> Result<Ledger<'_>> {
        let going_on = match from {
            Some(from) => Lines::after(source, from.bytes)?.map(|lines| (lines, from)),
            None => None,
        };
        let (mut lines, from) = match going_on {
            Some((lines, from)) => (lines, Some(from)),
            None => (Lines::new(source)?, None),
        };
        let mut agent = from.as_ref().map(|from| from.agent);
        // Whether a line was an agent's opening (the scan this goes on from had one, or failed).
        let mut opened = from.is_some();
        let (mut session_id, mut cwd, mut entries, mut unparseable) = match from {
            Some(from) => (from.session_id, from.cwd, from.entries, from.unparseable),
            None => (None, None, Vec::new(), 0),
        };
        let mut ids: HashMap<String, usize> = (entries.iter().enumerate())
            .filter_map(|(at, entry)| Some((entry.id.clone()?, at)))
            .collect();
        while let Some(line) = lines.next_line()? {
            let Some(format) = agent.or_else(|| detect(line)) else {
                unparseable += u64::from(!line.iter().all(u8::is_ascii_whitespace));
                continue;
            };
            let objects = format.format().objects(line);
            if objects.is_empty() {
                unparseable += 1;
            }
            for object in objects {
                let Some((entry, meta)) = format.format().skeleton(object, entries.len(), &ids)
                else {
                    unparseable += u64::from(!object.iter().all(u8::is_ascii_whitespace));
                    continue;
                };
                agent = Some(format);
                // The first opening names the session (Codex: the first `session_meta`, wherever);
                // a cwd it does not say, a later line of the same session may.
                if let Some(meta) = meta {
                    opened = true;
                    if session_id.is_none() {
                        session_id = meta.id;
                        cwd = meta.cwd;
                    } else if cwd.is_none() && meta.id == session_id {
                        cwd = meta.cwd;
                    }
                }
                if let Some(id) = &entry.id {
                    ids.insert(id.clone(), entries.len());
                }
                entries.push(entry);
            }
        }
        let Some(agent) = agent else {
            return Err(Error::bad_input(
                source.describe(),
                "not a session ledger (no JSON lines)",
            ));
        };
        // An agent's side records alone (a Claude Code 1.0.x file holding only a `summary` that
        // titles another file's conversation) name no session and hold nothing to index: an
        // empty index.
        let indexable = entries.iter().any(|e| !matches!(e.kind, EntryKind::Other));
        if session_id.is_none() && (indexable || !opened) {
            return Err(Error::bad_input(
                source.describe(),
                format!(
                    "no session id in its lines (not a {} session)",
                    Agent::names_or()
                ),
            ));
        }
        let scanned = Scanned {
            agent,
            session_id,
            cwd,
            entries,
            unparseable,
            bytes: lines.bytes(),
        };
        Ok(Ledger {
            source,
            scanned: Arc::new(scanned),
        })
    }

    /// What this scan found, for a scan of the ledger grown by an append to go on from; `None`
    /// unless it read whole lines only, `bytes` of them.
    pub fn scanned(&self, bytes: u64) -> Option<Arc<Scanned>> {
        (self.bytes == bytes).then(|| self.scanned.clone())
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

    /// The index of the leaf of the active branch: the last entry (Pi, Claude Code), the last line
    /// (Codex).
    pub fn leaf(&self) -> Option<usize> {
        self.entries.len().checked_sub(1)
    }

    /// The entries from the root down to `to` (inclusive) along parents, in file order.
    pub fn path_to(&self, to: usize) -> Vec<usize> {
        let mut path: Vec<usize> = self.ancestors(to).collect();
        path.reverse();
        path
    }

    /// `at` and the entries above it along parents, nearest first. A parent is an entry read
    /// before its child (the skeleton names it from those), so the walk ends.
    pub fn ancestors(&self, at: usize) -> impl Iterator<Item = usize> + '_ {
        std::iter::successors(Some(at), |&i| self.entries[i].parent.filter(|&p| p < i))
    }

    /// Stream the entries again; `visit` gets each one with its blocks.
    pub fn walk(&self, visit: impl FnMut(Visit<'_>) -> Result<()>) -> Result<()> {
        self.walk_from(None, visit).map(drop)
    }

    /// [`walk`](Self::walk) from `from` on (the start when `None`), passing over the bytes before
    /// it unread. Returns where the walk ended, when that is at the end of a line after every
    /// entry (a walk of the ledger grown by an append can go on from there).
    pub fn walk_from(
        &self,
        from: Option<Position>,
        mut visit: impl FnMut(Visit<'_>) -> Result<()>,
    ) -> Result<Option<Position>> {
        let format = self.agent.format();
        let (mut lines, mut index, mut reader) = match from {
            Some(from) => {
                let Some(lines) = Lines::after(self.source, from.bytes)? else {
                    return Err(Error::session_changed(self.source.describe(), "it shrank"));
                };
                (lines, from.entries, from.blocks)
            }
            None => (Lines::new(self.source)?, 0, format.blocks()),
        };
        let mut whole = true;
        let mut line_number = 0;
        'lines: while let Some(line) = lines.next_line()? {
            line_number += 1;
            for object in format.objects(line) {
                let Some(blocks) = reader.blocks(object) else {
                    continue;
                };
                // A live session may have grown since the first pass: its appended entries wait
                // for the next read (the prefix read first is what every plan was made from).
                let Some(entry) = self.entries.get(index) else {
                    whole = false;
                    break 'lines;
                };
                visit(Visit {
                    index,
                    line_number,
                    entry,
                    blocks,
                    line: object,
                })?;
                index += 1;
            }
        }
        if index != self.entries.len() {
            return Err(Error::session_changed(self.source.describe(), "it shrank"));
        }
        Ok(lines.whole_lines().filter(|_| whole).map(|bytes| Position {
            entries: index,
            bytes,
            blocks: reader,
        }))
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
        Some(self.agent.format().edited(visit.line, content, edit_id))
    }

    /// Locate blocks by id, as a resolver does: the latest block of each plain id over every branch,
    /// and each `:edit:<editId>` revision by its edit. Returns what was found.
    pub fn resolve(&self, wanted: &HashSet<String>) -> Result<HashMap<String, Block>> {
        let found = self.resolve_where(wanted, &|_| true)?;
        Ok((found.into_iter())
            .filter_map(|(id, block)| Some((id, block?)))
            .collect())
    }

    /// [`resolve`](Self::resolve), keeping only the blocks found that `keep` takes: every id
    /// found, each with its block if it was kept (recall keeps those its pattern matches, of
    /// spans that may name a long session's every block).
    pub fn resolve_where(
        &self,
        wanted: &HashSet<String>,
        keep: &dyn Fn(&Block) -> bool,
    ) -> Result<HashMap<String, Option<Block>>> {
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
                    found.insert(block.id.clone(), keep(block).then(|| block.clone()));
                }
            }
            for &edit in edits_for
                .get(&visit.index)
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                for block in self.edited(&visit, edit).unwrap_or_default() {
                    if wanted.contains(&block.id) {
                        found.insert(block.id.clone(), keep(&block).then_some(block));
                    }
                }
            }
            Ok(())
        })?;
        Ok(found)
    }
}

/// The agent of a ledger whose first JSON object is `line`: whichever agent opens its files so,
/// else Codex (a rollout's unknown line types make no blocks). `None` when `line` is not a JSON
/// object.
pub(crate) fn detect(line: &[u8]) -> Option<Agent> {
    match Agent::of_first_line(line) {
        Some((agent, _)) => Some(agent),
        None => json::parse::<serde::de::IgnoredAny>(line, &mut json::Scratch::default())
            .map(|_| Agent::Codex),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a first pass found, as JSON.
    fn skeleton(ledger: &Ledger<'_>) -> serde_json::Value {
        serde_json::to_value(ledger.scanned(ledger.bytes)).unwrap()
    }

    #[test]
    fn a_scan_going_on_reads_only_the_lines_after_those_it_goes_on_from() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let dir = tempfile::tempdir().unwrap();
        let source = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            FileSource(path)
        };
        let mut went_on = 0;
        for agent in ["pi", "codex", "claude"] {
            for file in std::fs::read_dir(fixtures.join(agent)).unwrap() {
                let bytes = std::fs::read(file.unwrap().path()).unwrap();
                let whole = source("whole.jsonl", &bytes);
                let Ok(all) = Ledger::scan(&whole) else {
                    continue;
                };
                let half = bytes.len() / 2;
                let Some(end) = bytes[half..].iter().position(|&b| b == b'\n') else {
                    continue;
                };
                let cut = half + end + 1;
                let prefix = source("prefix.jsonl", &bytes[..cut]);
                let Ok(before) = Ledger::scan(&prefix) else {
                    continue;
                };
                let scanned = before.scanned(cut as u64).expect("whole lines");
                // The lines before the cut blanked out: only a scan that does not read them finds
                // what a scan of the whole finds.
                let mut blanked = bytes.clone();
                (blanked[..cut].iter_mut())
                    .filter(|b| **b != b'\n')
                    .for_each(|b| *b = b' ');
                let blanked = source("blanked.jsonl", &blanked);
                let on = Ledger::scan_on(&blanked, Some(Scanned::clone(&scanned))).unwrap();
                assert_eq!(skeleton(&on), skeleton(&all), "{agent}");
                let read_whole = Ledger::scan(&blanked).map(|l| skeleton(&l));
                assert!(read_whole.ok() != Some(skeleton(&all)), "{agent}");
                // Shorter than the bytes it would go on after: scanned whole.
                let short = source("short.jsonl", &bytes[..cut - 1]);
                let short_on =
                    Ledger::scan_on(&short, Some(Arc::unwrap_or_clone(scanned))).unwrap();
                assert_eq!(
                    skeleton(&short_on),
                    skeleton(&Ledger::scan(&short).unwrap())
                );
                went_on += 1;
            }
        }
        assert!(went_on >= 3, "{went_on} fixtures went on");
    }
}
