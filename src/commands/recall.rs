//! `ctxfold recall`: find exact errors, ids, files or commands in folded history and pull back the
//! spans that hold them, verified.

use std::io::Write;

use regex::RegexBuilder;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::{Error, Result, stdout_failed};
use crate::seeds::recall::{Event, Field, Pulled, Query, Verified, recall};

/// Grep the seed index of every folded session and pull back whole spans, verified
///
/// PATTERN (a regular expression; `-F` for a fixed string, `-i` to ignore case) is matched against the
/// `identifiers`, `errors`, `files` and `commands` of the union of each session's records in the
/// store's seed index (see ctxfold-read-seeds; `--field` narrows it, `--session` keeps one session). Each value that
/// matches is printed as `# session <id> seq <n> <field>: <value>`. Then the spans of the matching
/// records whose block text matches PATTERN too are pulled whole from the session's ledger — the source
/// file named by the manifest when it is still there at its folded size, else the folded session
/// streamed out of the store — and checked against the span's sha256. Each span comes with a header:
///
/// `=== recall session=<id> blockId=<blockId> code=<code> tool=<tool> turn=<n> bytes=<b> lines=<l>
/// verified=<yes|unverified|mismatch> from=<file|store> ===`, the text, then `=== end <blockId> ===`.
///
/// A span whose text no longer matches its sha256 is reported with `verified=mismatch` and no text;
/// a v1 span (no sha256) is served `unverified`. `-l` prints the headers only. `--json` prints JSON
/// Lines: `{"type":"match",…}` and `{"type":"span",…,"text":…}` objects. Exit 1 when nothing matched.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-recall", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct RecallArgs {
    /// What to look for (a regular expression)
    #[arg(value_name = "PATTERN")]
    pub pattern: String,
    /// Only this session
    #[arg(long, value_name = "ID", add = crate::cli::complete::session_ids())]
    pub session: Option<String>,
    /// Only these fields of the records [default: all four]
    #[arg(long, value_enum, value_name = "FIELD")]
    pub field: Vec<Field>,
    /// PATTERN is a fixed string
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Ignore case
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// List the spans (headers only), without their text
    #[arg(short = 'l', long = "list")]
    pub list: bool,
    /// JSON Lines
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for RecallArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let source = if self.fixed_strings {
            regex::escape(&self.pattern)
        } else {
            self.pattern.clone()
        };
        let pattern = RegexBuilder::new(&source)
            .case_insensitive(self.ignore_case)
            .build()
            .map_err(|e| {
                Error::usage(format!(
                    "bad PATTERN {:?}: {}",
                    self.pattern,
                    e.to_string().replace('\n', " ")
                ))
            })?;
        let fields = if self.field.is_empty() {
            Field::ALL.to_vec()
        } else {
            self.field.clone()
        };
        let store = self.store.open()?;
        let query = Query {
            pattern: &pattern,
            session: self.session.as_deref(),
            fields: &fields,
        };
        let mut found = false;
        recall(&store, &query, &mut |event| {
            match event {
                Event::Match(m) => {
                    found = true;
                    if self.json {
                        let mut value = serde_json::to_value(&m).expect("a match serializes");
                        value["type"] = "match".into();
                        emit(io.out, value)?;
                    } else {
                        emit(
                            io.out,
                            format!(
                                "# session {} seq {} {}: {}",
                                m.session, m.seq, m.field, m.value
                            ),
                        )?;
                    }
                }
                Event::Span(pulled) => self.span(io.out, &pulled)?,
                Event::Note(note) => {
                    io.note(note);
                }
            }
            Ok(())
        })?;
        Ok(if found {
            Status::Success
        } else {
            Status::Negative
        })
    }
}

impl RecallArgs {
    fn span(&self, out: &mut dyn Write, pulled: &Pulled) -> Result<()> {
        let span = &pulled.span;
        let verified = match pulled.verified {
            Verified::Yes => "yes",
            Verified::Unverified => "unverified",
            Verified::Mismatch => "mismatch",
        };
        if self.json {
            let mut value = serde_json::json!({
                "type": "span",
                "session": pulled.session,
                "blockId": span.block_id,
                "code": span.code,
                "tool": span.tool,
                "turn": span.turn,
                "bytes": span.log.bytes,
                "lines": span.log.lines,
                "verified": verified,
                "from": pulled.from,
            });
            if !self.list && pulled.verified != Verified::Mismatch {
                value["text"] = pulled.text.clone().into();
            }
            return emit(out, value);
        }
        let opt = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        emit(
            out,
            format!(
                "=== recall session={} blockId={} code={} tool={} turn={} bytes={} lines={} verified={verified} from={} ===",
                pulled.session,
                span.block_id,
                span.code.as_deref().unwrap_or("?"),
                span.tool.as_deref().unwrap_or("?"),
                opt(span.turn),
                opt(span.log.bytes),
                opt(span.log.lines),
                pulled.from,
            ),
        )?;
        if self.list || pulled.verified == Verified::Mismatch {
            return Ok(());
        }
        out.write_all(pulled.text.as_bytes())
            .map_err(stdout_failed)?;
        if !pulled.text.ends_with('\n') {
            emit(out, "")?;
        }
        emit(out, format!("=== end {} ===", span.block_id))
    }
}
