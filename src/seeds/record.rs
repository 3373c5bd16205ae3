//! Seed index records (`fold-index`, `fold-retract`) as the contract shapes them, v1 to v3.
//! Reading keeps every field it does not know (`extra`) so that writing a record back loses nothing;
//! `errors` and `commands` stay JSON values because v3 writes them as objects.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::spare_lines::SpareLines;

/// The record version ctxfold writes.
pub const VERSION: u64 = 2;
/// The highest record version ctxfold understands (v3: the extension fork's object fields).
pub const UNDERSTOOD: u64 = 3;
/// The `harness` ctxfold writes.
pub const HARNESS: &str = "ctxfold";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FoldIndex {
    pub v: u64,
    pub kind: String,
    #[serde(default)]
    pub harness: String,
    #[serde(default)]
    pub session: String,
    pub seq: u64,
    #[serde(default)]
    pub at: String,
    #[serde(default)]
    pub trigger: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub files: Vec<String>,
    /// v1/v2: strings; v3: `{command, turn, code?}`.
    #[serde(default)]
    pub commands: Vec<Value>,
    /// v1/v2: strings; v3: `{line, context?, turn, code, toolError?}`.
    #[serde(default)]
    pub errors: Vec<Value>,
    #[serde(default)]
    pub identifiers: Vec<String>,
    #[serde(default)]
    pub user_messages: Vec<UserMessage>,
    #[serde(default)]
    pub spans: Vec<Span>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    // Numbers as written: other writers may spell counts as floats.
    #[serde(default)]
    pub tokens: Option<serde_json::Number>,
    #[serde(default)]
    pub context_window: Option<serde_json::Number>,
    #[serde(default)]
    pub fraction: Option<f64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    #[serde(default)]
    pub turn: u64,
    #[serde(default)]
    pub first_line: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    #[serde(default)]
    pub block_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    #[serde(default)]
    pub log: Log,
    /// Absent on v1 spans: their content is served unverified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Log {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    /// v1: `path`, `byteStart`, `byteEnd` into a spool file.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The text an `errors` entry stands for (v3: its `line`).
pub fn error_text(entry: &Value) -> Option<&str> {
    entry
        .as_str()
        .or_else(|| entry.get("line").and_then(Value::as_str))
}

/// The text a `commands` entry stands for (v3: its `command`).
pub fn command_text(entry: &Value) -> Option<&str> {
    entry
        .as_str()
        .or_else(|| entry.get("command").and_then(Value::as_str))
}

impl FoldIndex {
    /// One JSON line (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a record serializes")
    }

    /// The line [`to_line`](Self::to_line) writes for the record with its seq set to `seq`, made
    /// from `unnumbered`, the line it writes with seq 0: a long session's records are large
    /// (each re-lists every earlier span), and one is wanted of both lines.
    pub fn numbered(unnumbered: &str, seq: u64) -> String {
        let mut line = String::with_capacity(unnumbered.len() + 20);
        Self::push_numbered(unnumbered, seq, &mut line);
        line
    }

    /// [`numbered`](Self::numbered), written at the end of `out` (a batch of lines).
    pub fn push_numbered(unnumbered: &str, seq: u64, out: &mut String) {
        // `seq` is written after `v`, `kind`, `harness` and `session`, and within a string a quote
        // is always escaped: the first `,"seq":0,` is the field.
        const ZERO: &str = ",\"seq\":0,";
        let at = unnumbered.find(ZERO).expect("a line with seq 0") + ZERO.len() - 2;
        out.push_str(&unnumbered[..at]);
        write!(out, "{seq}").expect("a String takes every write");
        out.push_str(&unnumbered[at + 1..]);
    }
}

/// A record as the extraction makes it: the seq its plan gives it, and its line with seq 0 (what a
/// store numbers anew). Made as a line, spans spliced in as they were written once each: a long
/// session's records are large (each re-lists every earlier span) and are wanted only as lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Made {
    pub seq: u64,
    pub unnumbered: String,
}

impl Made {
    /// A record as if made: its seq apart, its line with seq 0.
    pub fn of(mut record: FoldIndex) -> Self {
        let seq = std::mem::take(&mut record.seq);
        Self {
            seq,
            unnumbered: record.to_line(),
        }
    }

    /// An empty line to make a record in, with room for `bytes`: the line of a record given back
    /// ([`give_back`](Self::give_back)) when there is one.
    pub fn empty_line(bytes: usize) -> String {
        SPARE_LINES.take(bytes)
    }

    /// Done with the record: its line is kept for one made after it.
    pub fn give_back(self) {
        SPARE_LINES.keep(self.unnumbered);
    }

    /// Its line, with the seq its plan gives it (what `ctxfold-extract-seeds` prints).
    pub fn line(&self) -> String {
        FoldIndex::numbered(&self.unnumbered, self.seq)
    }

    /// The record, read back from its line.
    #[cfg(test)]
    pub fn record(&self) -> FoldIndex {
        serde_json::from_str(&self.line()).expect("a record made reads back")
    }
}

/// The lines of records done with, for those made after them (see [`SpareLines`]).
static SPARE_LINES: SpareLines = SpareLines::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numbered_line_is_the_line_the_record_numbered_writes() {
        let line = r#"{"v":2,"kind":"fold-index","harness":"ctxfold","session":"s","seq":3,"at":"t","trigger":"x","files":[",\"seq\":0,"],"commands":[],"errors":[],"identifiers":[],"userMessages":[],"spans":[],"seq0":",\"seq\":0,"}"#;
        let mut record: FoldIndex = serde_json::from_str(line).unwrap();
        for session in ["s", r#"a","seq":0,"b"#, "\",\"seq\":0,", "é\n\u{1}"] {
            record.session = session.into();
            record.seq = 0;
            let unnumbered = record.to_line();
            for seq in [0, 1, 9, 10, 1_000_000_007, u64::MAX] {
                record.seq = seq;
                assert_eq!(FoldIndex::numbered(&unnumbered, seq), record.to_line());
                let mut batch = String::from("{}\n");
                FoldIndex::push_numbered(&unnumbered, seq, &mut batch);
                assert_eq!(batch, format!("{{}}\n{}", record.to_line()));
            }
        }
    }
}
