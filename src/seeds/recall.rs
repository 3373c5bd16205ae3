//! Recall: grep the union of every session's seed records in the store, then pull the whole spans of
//! the matching records whose text matches too, located in the session's ledger (the source file when
//! it is still there and the right size, else the folded session) and checked against their sha256.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::catalog::Catalog;
use super::index::{self, StoreIndex};
use super::lean::Lean;
use super::record::{Span, command_text, error_text};
use super::union::{Union, record_of_fields};
use crate::digest::Fingerprint;
use crate::error::Result;
use crate::ledger::{FileSource, Ledger, Source, StoreSource};
use crate::odb::pack::{DEFAULT_CACHE_BYTES, FEW_BLOCKS_BYTES};
use crate::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Field {
    Identifiers,
    Errors,
    Files,
    Commands,
}

impl Field {
    pub const ALL: [Field; 4] = [
        Field::Identifiers,
        Field::Errors,
        Field::Files,
        Field::Commands,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Identifiers => "identifiers",
            Field::Errors => "errors",
            Field::Files => "files",
            Field::Commands => "commands",
        }
    }

    fn values(self, record: &Greppable) -> Vec<&str> {
        match self {
            Field::Identifiers => record.identifiers.iter().map(String::as_str).collect(),
            Field::Files => record.files.iter().map(String::as_str).collect(),
            Field::Errors => record.errors.iter().filter_map(error_text).collect(),
            Field::Commands => record.commands.iter().filter_map(command_text).collect(),
        }
    }
}

/// What recall greps of a record. Its spans are read again for the records that match, and only
/// for those: a long session's records each re-list every earlier span, and its index held whole
/// took gigabytes (1.5 GB and 6 s for a 1 GB rollout's 725 MB of records). A record that matches
/// is checked whole (see [`Union::checking`]).
#[derive(Deserialize)]
struct Greppable {
    v: u64,
    kind: String,
    seq: u64,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    commands: Vec<Value>,
    #[serde(default)]
    errors: Vec<Value>,
    #[serde(default)]
    identifiers: Vec<String>,
}

record_of_fields!(Greppable, whole if Lean);

/// A record value the pattern matched.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Match {
    pub session: String,
    pub seq: u64,
    pub field: &'static str,
    pub value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verified {
    /// The text's sha256 is the span's.
    Yes,
    /// The span carries no sha256 (v1): served as found.
    Unverified,
    /// The text differs from what the span recorded: not served.
    Mismatch,
}

/// A span pulled back.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub session: String,
    pub span: Span,
    pub verified: Verified,
    /// `file` (the source ledger) or `store` (the folded session).
    pub from: &'static str,
    pub text: String,
}

/// What recall reports, in order: a session's matches, then its spans, then a note if any.
pub enum Event {
    Match(Match),
    Span(Box<Pulled>),
    Note(String),
}

pub struct Query<'a> {
    pub pattern: &'a Regex,
    pub session: Option<&'a str>,
    pub fields: &'a [Field],
    /// Per session, stop after this many matching records (as `grep -m` stops per file).
    pub max_count: Option<usize>,
}

impl Query<'_> {
    /// The values of `record` the pattern matches, field by field.
    fn matches<'r>(&self, record: &'r Greppable) -> impl Iterator<Item = (Field, &'r str)> {
        (self.fields.iter())
            .flat_map(|&field| field.values(record).into_iter().map(move |v| (field, v)))
            .filter(|(_, value)| self.pattern.is_match(value))
    }
}

pub fn recall(
    store: &Store,
    query: &Query<'_>,
    emit: &mut dyn FnMut(Event) -> Result<()>,
) -> Result<()> {
    let catalog = Catalog::load(store)?;
    // Each session's batches are read once, in catalog order, from blocks neighbours share (with
    // less than a few blocks' room, each batch of a repacked store decoded its whole block).
    store.odb().set_block_cache(FEW_BLOCKS_BYTES);
    for session in index::sessions(store, &catalog)? {
        if query.session.is_some_and(|s| s != session) {
            continue;
        }
        let matters = |record: &Greppable| query.matches(record).next().is_some();
        let mut union = Union::checking(&matters);
        let parts = StoreIndex::new(store, &catalog, &session);
        if !index::read_union(&parts, &mut union)? {
            continue;
        }
        recall_session(store, &catalog, &session, union.records_at(), query, emit)?;
    }
    Ok(())
}

fn recall_session(
    store: &Store,
    catalog: &Catalog,
    session: &str,
    records: Vec<(u64, Greppable)>,
    query: &Query<'_>,
    emit: &mut dyn FnMut(Event) -> Result<()>,
) -> Result<()> {
    // Where the matching records' lines are in the index, with their seqs.
    let mut matching = HashMap::new();
    for (position, record) in &records {
        if query.max_count.is_some_and(|max| matching.len() >= max) {
            break;
        }
        let mut matched = false;
        for (field, value) in query.matches(record) {
            matched = true;
            emit(Event::Match(Match {
                session: session.into(),
                seq: record.seq,
                field: field.name(),
                value: value.to_string(),
            }))?;
        }
        if matched {
            matching.insert(*position, record.seq);
        }
    }
    let spans = spans_of(store, catalog, session, &matching)?;
    if spans.is_empty() {
        return Ok(());
    }
    let Ok(manifest) = store.load_manifest(session) else {
        return emit(Event::Note(format!(
            "session {session}: not folded in this store, spans not pulled"
        )));
    };
    let source_path = Path::new(&manifest.session.rollout_path);
    let source_ok = std::fs::metadata(source_path)
        .is_ok_and(|m| m.is_file() && m.len() == manifest.source.bytes);
    let file = FileSource(source_path.to_path_buf());
    let folded = StoreSource {
        store,
        manifest: &manifest,
    };
    let (source, from): (&dyn Source, _) = if source_ok {
        (&file, "file")
    } else {
        (&folded, "store")
    };
    // A session read back from the store takes its objects from blocks anywhere, as a restore.
    if !source_ok {
        store.odb().set_block_cache(DEFAULT_CACHE_BYTES);
    }
    let ledger = Ledger::scan(source)?;
    let wanted: HashSet<String> = spans.iter().map(|s| s.block_id.clone()).collect();
    let blocks = ledger.resolve_where(&wanted, &|block| query.pattern.is_match(&block.text))?;
    store.odb().set_block_cache(FEW_BLOCKS_BYTES);
    let mut missing = 0;
    for span in spans {
        let Some(found) = blocks.get(&span.block_id) else {
            missing += 1;
            continue;
        };
        // Only the blocks the pattern matches were kept.
        let Some(block) = found else {
            continue;
        };
        let verified = match &span.sha256 {
            None => Verified::Unverified,
            Some(sha)
                if sha.eq_ignore_ascii_case(&crate::blocks::block::sha256_hex(&block.text)) =>
            {
                Verified::Yes
            }
            Some(_) => Verified::Mismatch,
        };
        let text = if verified == Verified::Mismatch {
            String::new()
        } else {
            block.text.clone()
        };
        emit(Event::Span(Box::new(Pulled {
            session: session.into(),
            span,
            verified,
            from,
            text,
        })))?;
    }
    if missing > 0 {
        emit(Event::Note(format!(
            "session {session}: {missing} spans of matching records not found in its ledger"
        )))?;
    }
    Ok(())
}

/// The spans of the records at `positions` in `session`'s index (with the seqs they were read
/// with), once each (compact records repeat earlier spans), in the order of their records. Each
/// was checked whole as the union read it (see [`Union::checking`]).
fn spans_of(
    store: &Store,
    catalog: &Catalog,
    session: &str,
    positions: &HashMap<u64, u64>,
) -> Result<Vec<Span>> {
    let mut spans = Spans::default();
    let parts = StoreIndex::new(store, catalog, session);
    index::each_line_at(&parts, positions, &mut |line, seq| {
        spans.add_record(line, seq);
        Ok(())
    })?;
    Ok(spans.list)
}

/// The spans of matching records, gathered once each.
#[derive(Default)]
struct Spans {
    list: Vec<Span>,
    seen: HashSet<(String, Option<String>)>,
    /// The text of every span read, as fingerprints: a record of a long session re-lists every
    /// earlier span as it was written, and reading each whole again took most of a recall that
    /// matched many of them (1 GB rollout: 44% of 8.4 s).
    read: HashSet<Fingerprint>,
}

/// A record's seq and its spans as written.
#[derive(Deserialize)]
struct RawSpans<'a> {
    seq: u64,
    #[serde(borrow, default)]
    spans: Vec<&'a RawValue>,
}

impl Spans {
    /// Add the spans of the record `line` holds, if it is the one with `seq`.
    fn add_record(&mut self, line: &[u8], seq: u64) {
        if !self.add_new(line, seq) {
            for span in index::record_at(line, seq)
                .into_iter()
                .flat_map(|r| r.spans)
            {
                self.add(span);
            }
        }
    }

    fn add(&mut self, span: Span) {
        if self
            .seen
            .insert((span.block_id.clone(), span.sha256.clone()))
        {
            self.list.push(span);
        }
    }

    /// Add the spans of the record `line` holds, if it is the one with `seq`, reading only those
    /// not read before; false when it cannot be read so (a line only the union's slow path
    /// reads, see [`index::record_at`]).
    fn add_new(&mut self, line: &[u8], seq: u64) -> bool {
        let Ok(record) = serde_json::from_slice::<RawSpans<'_>>(line) else {
            return false;
        };
        if record.seq != seq {
            return true;
        }
        let new: Option<Vec<(Fingerprint, Span)>> = (record.spans.iter())
            .map(|raw| (Fingerprint::of(raw.get().as_bytes()), raw))
            .filter(|(read, _)| !self.read.contains(read))
            .map(|(read, raw)| Some((read, serde_json::from_str(raw.get()).ok()?)))
            .collect();
        let Some(new) = new else {
            return false;
        };
        for (read, span) in new {
            self.read.insert(read);
            self.add(span);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_gathered_once_each_in_the_order_records_list_them() {
        let span = |id: &str, extra: &str| {
            format!(r#"{{"blockId":"{id}","log":{{"bytes":1,"lines":1}},"sha256":"{id}"{extra}}}"#)
        };
        let record = |seq: u64, spans: &[String]| {
            format!(
                r#"{{"v":2,"kind":"fold-index","seq":{seq},"spans":[{}]}}"#,
                spans.join(",")
            )
        };
        let (a, b, c) = (span("a", ""), span("b", ""), span("c", ""));
        // The same span written otherwise is the same span: its block and sha256 name it.
        let b_again = span("b", r#","turn":3"#);
        let lines = [
            (record(1, &[a.clone(), b.clone()]), 1),
            (record(2, &[a.clone(), b_again, c.clone(), c.clone()]), 2),
            // Not the record read there before: none of its spans.
            (record(9, &[span("x", "")]), 3),
            // Only the union's slow path reads a record whose field is given twice.
            (
                format!(
                    r#"{{"v":2,"kind":"fold-index","seq":4,"spans":[],"spans":[{}]}}"#,
                    span("d", "")
                ),
                4,
            ),
        ];
        let mut spans = Spans::default();
        for (line, seq) in &lines {
            spans.add_record(line.as_bytes(), *seq);
        }
        let ids: Vec<&str> = spans.list.iter().map(|s| s.block_id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
        assert_eq!(spans.list[1].turn, None, "the first written of b");
    }
}
