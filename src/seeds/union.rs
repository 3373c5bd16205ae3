//! Reading seed-index files as the contract's union: the latest `fold-index` record per seq; a
//! `fold-retract` voids the records of its seq appended before it (a later record may reuse the seq
//! and stands alone); unknown fields kept; v1 to v3 understood; a higher `v`, or a line that is not
//! a record, skipped with a note.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::record::{FoldIndex, UNDERSTOOD};
use crate::error::{IoContext, Result};

/// What a union keeps of each record: the whole of it ([`FoldIndex`]), or what one reader needs.
pub trait Record: DeserializeOwned {
    fn v(&self) -> u64;
    fn kind(&self) -> &str;
    fn seq(&self) -> u64;

    /// Whether `line`, which reads as this, reads as a whole record too: it does, unless this
    /// reads less of a record than a record's reader checks (see [`Union::checking`]).
    fn whole(line: &[u8]) -> serde_json::Result<()> {
        let _ = line;
        Ok(())
    }
}

/// [`Record`] for a struct whose fields `v`, `kind` and `seq` are the record's; `whole if T`: a
/// line is a whole record if it reads as a `T`.
macro_rules! record_of_fields {
    ($record:ty $(, whole if $whole:ty)?) => {
        impl $crate::seeds::union::Record for $record {
            fn v(&self) -> u64 {
                self.v
            }

            fn kind(&self) -> &str {
                &self.kind
            }

            fn seq(&self) -> u64 {
                self.seq
            }

            $(
                fn whole(line: &[u8]) -> serde_json::Result<()> {
                    serde_json::from_slice::<$whole>(line).map(drop)
                }
            )?
        }
    };
}
pub(super) use record_of_fields;

record_of_fields!(FoldIndex);

/// The union being read, file after file (a Pi session's v1 spool file, then its v2 file).
pub struct Union<'a, R = FoldIndex> {
    /// seq -> (position of the line that set it, the record).
    live: BTreeMap<u64, (u64, R)>,
    position: u64,
    /// The records checked whole ([`Record::whole`]) besides those whose seq stands already.
    matters: &'a dyn Fn(&R) -> bool,
    /// What was skipped, one line each, for stderr.
    pub notes: Vec<String>,
    /// What lines are read into, kept from one part to the next: a long session's lines run to
    /// megabytes, and a buffer made for each part has its pages faulted in anew.
    buffer: Vec<u8>,
}

impl<R> Default for Union<'_, R> {
    fn default() -> Self {
        Self::checking(&|_| true)
    }
}

impl<'a, R> Union<'a, R> {
    /// A union that checks whole only the records `matters` picks and those that would replace a
    /// record: one that stands unchecked may be no record after all, but what it is used for is
    /// only to be replaced. Recall greps every record and checks only the ones that match (checking
    /// every record's spans took a fifth of its time).
    pub fn checking(matters: &'a dyn Fn(&R) -> bool) -> Self {
        Self {
            live: BTreeMap::new(),
            position: 0,
            matters,
            notes: Vec::new(),
            buffer: Vec::new(),
        }
    }
}

/// The fields of a line the union rules look at, read without building the rest.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    v: Option<Value>,
    #[serde(default)]
    seq: Option<Value>,
    #[serde(default)]
    kind: Option<Value>,
}

impl<R: Record> Union<'_, R> {
    pub fn read(&mut self, mut reader: impl BufRead, what: &str) -> Result<()> {
        let mut line = std::mem::take(&mut self.buffer);
        for n in 1.. {
            line.clear();
            if reader
                .read_until(b'\n', &mut line)
                .context(|| format!("read {what}"))?
                == 0
            {
                break;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            self.position += 1;
            if body.iter().all(u8::is_ascii_whitespace)
                || std::str::from_utf8(body).is_ok_and(|text| self.common_line(text))
            {
                continue;
            }
            self.line(body, &format!("{what}:{n}"));
        }
        self.buffer = line;
        Ok(())
    }

    /// A well-formed record of a version this reader understands, taken without building a
    /// `Value` of the whole line first (recall reads every record of every session); false for
    /// any other line, left to [`Union::line`], which decides the same for these. Its text is
    /// checked to be UTF-8 whole, not string by string (7% of recall's time).
    fn common_line(&mut self, line: &str) -> bool {
        if !line.trim_ascii_start().starts_with('{') {
            return false;
        }
        // Nearly every line is such a record: parsed once, as one, it needs no look at its head.
        if let Ok(record) = serde_json::from_str::<R>(line)
            && record.kind() == "fold-index"
            && record.v() <= UNDERSTOOD
        {
            return self.take(record, line.as_bytes()).is_ok();
        }
        let Ok(head) = serde_json::from_str::<Head>(line) else {
            return false;
        };
        if head.v.as_ref().and_then(Value::as_u64).unwrap_or(1) > UNDERSTOOD {
            return false;
        }
        let seq = head.seq.as_ref().and_then(Value::as_u64);
        match (head.kind.as_ref().and_then(Value::as_str), seq) {
            (Some("fold-retract"), Some(seq)) => {
                self.live.remove(&seq);
                true
            }
            (Some("fold-index"), Some(_)) => match serde_json::from_str::<R>(line) {
                Ok(record) => self.take(record, line.as_bytes()).is_ok(),
                Err(_) => false,
            },
            _ => false,
        }
    }

    fn line(&mut self, line: &[u8], at: &str) {
        let value: Value = match serde_json::from_slice(line) {
            Ok(v @ Value::Object(_)) => v,
            _ => return self.notes.push(format!("{at}: not a JSON object, skipped")),
        };
        let v = value.get("v").and_then(Value::as_u64).unwrap_or(1);
        if v > UNDERSTOOD {
            return self.notes.push(format!(
                "{at}: record version {v} is newer than this reader (v{UNDERSTOOD}), skipped"
            ));
        }
        let seq = value.get("seq").and_then(Value::as_u64);
        match (value.get("kind").and_then(Value::as_str), seq) {
            (Some("fold-retract"), Some(seq)) => {
                self.live.remove(&seq);
            }
            (Some("fold-index"), Some(_)) => {
                // Checked whole as it was read, through the value: a field given twice, once.
                let read = serde_json::to_vec(&value).expect("a JSON value serializes");
                let taken =
                    serde_json::from_value::<R>(value).and_then(|record| self.take(record, &read));
                if let Err(e) = taken {
                    self.notes
                        .push(format!("{at}: not a fold-index record ({e}), skipped"));
                }
            }
            (kind, _) => self.notes.push(format!(
                "{at}: {} without a seq, skipped",
                kind.unwrap_or("a line")
            )),
        }
    }

    /// `record`, read from `line`, stands for its seq if it is a whole record or need not be
    /// checked (see [`Union::checking`]).
    fn take(&mut self, record: R, line: &[u8]) -> serde_json::Result<()> {
        if self.live.contains_key(&record.seq()) || (self.matters)(&record) {
            R::whole(line)?;
        }
        self.live.insert(record.seq(), (self.position, record));
        Ok(())
    }

    /// The surviving records in the order their lines were appended, each with its line's place
    /// among every line read (the first is 1, blank lines count).
    pub fn records_at(self) -> Vec<(u64, R)> {
        let mut live: Vec<_> = self.live.into_values().collect();
        live.sort_by_key(|(position, _)| *position);
        live
    }
}

/// Where the extension keeps a Pi session's seed index: v1 at `<dir>/spool/<id>/`, v2 at
/// `<dir>/context-fold/<id>/`, `<dir>` being the folder of the session file.
pub fn pi_index_files(session_file: &Path, session_id: &str) -> [PathBuf; 2] {
    let dir = session_file.parent().unwrap_or(Path::new("."));
    [
        dir.join("spool").join(session_id).join("seed-index.jsonl"),
        dir.join("context-fold")
            .join(session_id)
            .join("seed-index.jsonl"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn union(text: &str) -> (Vec<(u64, String)>, usize) {
        let mut u: Union = Union::default();
        u.read(text.as_bytes(), "t").unwrap();
        let notes = u.notes.len();
        let records = u
            .records_at()
            .into_iter()
            .map(|(_, r)| (r.seq, r.at))
            .collect();
        (records, notes)
    }

    const A1: &str = r#"{"v":2,"kind":"fold-index","seq":1,"at":"a1","spans":[],"usage":{"tokens":9.5e4,"contextWindow":2e5}}"#;
    const A1B: &str = r#"{"v":2,"kind":"fold-index","seq":1,"at":"a1b"}"#;
    const B2: &str = r#"{"v":2,"kind":"fold-index","seq":2,"at":"b2"}"#;
    const R1: &str = r#"{"v":2,"kind":"fold-retract","seq":1,"at":"r"}"#;

    #[test]
    fn the_union_rules() {
        type Case<'a> = (&'a [&'a str], &'a [(u64, &'a str)], usize);
        let cases: &[Case<'_>] = &[
            (&[A1, B2], &[(1, "a1"), (2, "b2")], 0),
            (&[A1, B2, A1B], &[(2, "b2"), (1, "a1b")], 0),
            (&[A1, R1, B2], &[(2, "b2")], 0),
            (&[A1, R1, A1B], &[(1, "a1b")], 0),
            (&[R1, A1], &[(1, "a1")], 0),
            (
                &[
                    A1,
                    "{\"v\":4,\"kind\":\"fold-index\",\"seq\":1,\"at\":\"x\"}",
                    "garbage",
                ],
                &[(1, "a1")],
                2,
            ),
        ];
        for (lines, expected, notes) in cases {
            let (got, got_notes) = union(&lines.join("\n"));
            let expected: Vec<_> = expected.iter().map(|(s, a)| (*s, a.to_string())).collect();
            assert_eq!(got, expected, "{lines:?}");
            assert_eq!(got_notes, *notes, "{lines:?}");
        }
    }
}
