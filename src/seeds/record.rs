//! Seed index records (`fold-index`, `fold-retract`) as the contract shapes them, v1 to v3.
//! Reading keeps every field it does not know (`extra`) so that writing a record back loses nothing;
//! `errors` and `commands` stay JSON values because v3 writes them as objects.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::digest::{Fingerprint, Fingerprinter};

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

    /// The line [`to_line`](Self::to_line) writes for the record with its seq set to `seq`,
    /// written to `out`, made from `unnumbered`, the line it writes with seq 0 (or the first
    /// piece of it, up to past its seq): a long session's records are large (each re-lists every
    /// earlier span), and one is wanted of both lines.
    pub fn write_numbered(unnumbered: &str, seq: u64, out: &mut impl fmt::Write) -> fmt::Result {
        // `seq` is written after `v`, `kind`, `harness` and `session`, and within a string a quote
        // is always escaped: the first `,"seq":0,` is the field.
        const ZERO: &str = ",\"seq\":0,";
        let at = unnumbered.find(ZERO).expect("a line with seq 0") + ZERO.len() - 2;
        out.write_str(&unnumbered[..at])?;
        write!(out, "{seq}")?;
        out.write_str(&unnumbered[at + 1..])
    }
}

/// A record as the extraction makes it: the seq its plan gives it, and its line with seq 0 (what a
/// store numbers anew), in pieces: what was written for it, then the user messages and spans it
/// lists as the builder that made it holds them, borrowed. A long session's records are large
/// (each re-lists every earlier span and user message) and are wanted only as lines: each is
/// copied once, into the batch or the output that takes it.
#[derive(Debug, Clone)]
pub struct Made<'a> {
    pub seq: u64,
    /// The line with seq 0, piece after piece; the seq field is within the first.
    pieces: [Cow<'a, str>; 5],
}

impl<'a> Made<'a> {
    /// A record whose line is `head` (up to and with `"userMessages":[`), `user_messages`, then
    /// `spans` in their field (each one's JSON, `,` between them).
    pub fn spliced(seq: u64, head: String, user_messages: &'a str, spans: &'a str) -> Self {
        Self {
            seq,
            pieces: [
                head.into(),
                user_messages.into(),
                r#"],"spans":["#.into(),
                spans.into(),
                "]}".into(),
            ],
        }
    }

    /// A record as if made: its seq apart, its line with seq 0.
    pub fn of(mut record: FoldIndex) -> Made<'static> {
        let seq = std::mem::take(&mut record.seq);
        Made::whole(seq, record.to_line())
    }

    /// A record whose line with seq 0 is `line`, in one piece.
    fn whole(seq: u64, line: String) -> Made<'static> {
        Made {
            seq,
            pieces: [line.into(), "".into(), "".into(), "".into(), "".into()],
        }
    }

    /// The record with its line its own: to be kept past the builder that made it.
    pub fn into_owned(self) -> Made<'static> {
        Made::whole(self.seq, self.pieces.concat())
    }

    /// The length of its line with seq 0.
    pub fn line_len(&self) -> usize {
        self.pieces.iter().map(|p| p.len()).sum()
    }

    /// The fingerprint of its line with seq 0.
    pub fn fingerprint(&self) -> Fingerprint {
        let mut fingerprinter = Fingerprinter::default();
        for piece in &self.pieces {
            fingerprinter.update(piece.as_bytes());
        }
        fingerprinter.fingerprint()
    }

    /// Its line with seq `seq`, written at the end of `out` (a batch of lines).
    pub fn push_numbered(&self, seq: u64, out: &mut String) {
        self.write_numbered(seq, out)
            .expect("a String takes every write");
    }

    fn write_numbered(&self, seq: u64, out: &mut impl fmt::Write) -> fmt::Result {
        let [first, rest @ ..] = &self.pieces;
        FoldIndex::write_numbered(first, seq, out)?;
        rest.iter().try_for_each(|piece| out.write_str(piece))
    }

    /// The record, read back from its line.
    #[cfg(test)]
    pub fn record(&self) -> FoldIndex {
        serde_json::from_str(&self.to_string()).expect("a record made reads back")
    }
}

/// Its line, with the seq its plan gives it (what `ctxfold-extract-seeds` prints), written piece
/// by piece.
impl fmt::Display for Made<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_numbered(self.seq, f)
    }
}

/// Records are the same when their seqs and lines are, however their lines are pieced.
impl PartialEq for Made<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq && self.pieces.concat() == other.pieces.concat()
    }
}

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
                let mut batch = String::from("{}\n");
                FoldIndex::write_numbered(&unnumbered, seq, &mut batch).unwrap();
                assert_eq!(batch, format!("{{}}\n{}", record.to_line()));
            }
        }
    }

    #[test]
    fn a_record_made_in_pieces_is_the_record_its_line_is() {
        let span = |n: usize| format!(r#"{{"blockId":"b{n}","log":{{"bytes":{n}}}}}"#);
        let message = |n: usize| format!(r#"{{"turn":{n},"firstLine":"m{n}"}}"#);
        for spans in [0, 1, 2, 50] {
            let mut record: FoldIndex = serde_json::from_str(
                r#"{"v":2,"kind":"fold-index","harness":"ctxfold","session":"s","seq":0,"files":["a"]}"#,
            )
            .unwrap();
            record.spans = (0..spans)
                .map(|n| serde_json::from_str(&span(n)).unwrap())
                .collect();
            record.user_messages = (0..spans)
                .map(|n| serde_json::from_str(&message(n)).unwrap())
                .collect();
            let unnumbered = record.to_line();
            const OPEN: &str = r#""userMessages":["#;
            let head = &unnumbered[..unnumbered.find(OPEN).unwrap() + OPEN.len()];
            let messages = (0..spans).map(message).collect::<Vec<_>>().join(",");
            let joined = (0..spans).map(span).collect::<Vec<_>>().join(",");
            let made = Made::spliced(7, head.into(), &messages, &joined);
            assert_eq!(made.line_len(), unnumbered.len());
            assert_eq!(made.fingerprint(), Fingerprint::of(unnumbered.as_bytes()));
            record.seq = 7;
            assert_eq!(made.to_string(), record.to_line());
            let mut batch = String::from("x");
            made.push_numbered(1_000_001, &mut batch);
            record.seq = 1_000_001;
            assert_eq!(batch, format!("x{}", record.to_line()));
            record.seq = 7;
            assert_eq!(Made::of(record.clone()), made);
            let owned = made.clone().into_owned();
            assert_eq!(owned, made);
            assert_eq!(owned.fingerprint(), made.fingerprint());
            assert_ne!(Made::of(FoldIndex { seq: 8, ..record }), made);
        }
    }
}
