//! `ctxfold recall`: find exact errors, ids, files or commands in folded history and pull back the
//! spans that hold them, verified.

use std::io::Write;

use regex::RegexBuilder;
use serde::Serialize;

use crate::agents::Agent;
use crate::agents::place::{named_by, started};
use crate::cli::human::minute;
use crate::cli::pager::{self, PagerArgs};
use crate::store::Store;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::{Error, Result, stdout_failed};
use crate::seeds::catalog::Catalog;
use crate::seeds::index::resolve_indexed;
use crate::seeds::recall::{Event, Field, Pulled, Query, Verified, recall};

/// Grep the seed index of every folded session and pull back whole spans, verified
///
/// PATTERN (a regular expression; `-F` for a fixed string, `-i` to ignore case) is matched against the
/// `identifiers`, `errors`, `files` and `commands` of the union of each session's records in the
/// store's seed index (see ctxfold-read-seeds; `--field` narrows it, `--session` keeps one session;
/// -m N stops after N matching records in each session). Each session found starts with a heading,
/// `## session <id> <started> <title>` (its start as in ctxfold ls, `-` when not known). Each value that
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
/// Lines: for each session `{"type":"session","session":ID,"title":…,"started":…,"agent":…,
/// "cwd":…}` (what is not known is null), then its `{"type":"match",…}` and `{"type":"span",…,
/// "sha256":HEX|null,"text":…}` objects: the sha256 a span was recorded with, which
/// ctxfold-verify-span takes. Exit 1 when nothing matched, with a note that ctxfold grep searches
/// the sessions' whole text (prompts and replies are not in the index).
///
/// On a terminal the output goes through a pager, as git's does: $CTXFOLD_PAGER, else $PAGER,
/// else less (with LESS=FRX unless LESS is set); an empty one or `cat`, or --no-pager, is none.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-recall", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct RecallArgs {
    /// What to look for (a regular expression)
    #[arg(value_name = "PATTERN")]
    pub pattern: String,
    /// Only this session (its id, or a unique prefix of it)
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
    /// Stop after NUM matching records in each session
    #[arg(short = 'm', long, value_name = "NUM")]
    pub max_count: Option<usize>,
    /// JSON Lines
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub pager: PagerArgs,
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
        let session = (self.session.as_deref())
            .map(|spec| resolve_indexed(&store, &Catalog::load(&store)?, spec))
            .transpose()?;
        let query = Query {
            pattern: &pattern,
            session: session.as_deref(),
            fields: &fields,
            max_count: self.max_count,
        };
        let mut found = false;
        // Notes wait for the pager to close: they would scribble over its screen.
        let mut notes = Vec::new();
        pager::page(io, &self.pager, |io| {
            let out: &mut dyn Write = &mut *io.out;
            let mut heading = None;
            recall(&store, &query, &mut |event| {
                match event {
                    Event::Match(m) => {
                        found = true;
                        self.heading(out, &store, &m.session, &mut heading)?;
                        if self.json {
                            let mut value = serde_json::to_value(&m).expect("a match serializes");
                            value["type"] = "match".into();
                            emit(out, value)?;
                        } else {
                            emit(
                                out,
                                format!(
                                    "# session {} seq {} {}: {}",
                                    m.session, m.seq, m.field, m.value
                                ),
                            )?;
                        }
                    }
                    Event::Span(pulled) => {
                        self.heading(out, &store, &pulled.session, &mut heading)?;
                        self.span(out, &pulled)?;
                    }
                    Event::Note(note) => notes.push(note),
                }
                Ok(())
            })?;
            Ok(Status::Success)
        })?;
        for note in notes {
            io.note(note);
        }
        if !found {
            // The index holds identifiers, errors, files and commands, not what people wrote.
            io.note("no seed record matches; try ctxfold grep");
        }
        Ok(if found {
            Status::Success
        } else {
            Status::Negative
        })
    }
}

/// A session's heading under --json.
#[derive(Serialize)]
struct Heading<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    session: &'a str,
    title: Option<&'a str>,
    started: Option<String>,
    agent: Option<&'static str>,
    cwd: Option<&'a str>,
}

impl RecallArgs {
    /// The heading of `session`, unless it is the one `current` names already.
    fn heading(
        &self,
        out: &mut dyn Write,
        store: &Store,
        session: &str,
        current: &mut Option<String>,
    ) -> Result<()> {
        if current.as_deref() == Some(session) {
            return Ok(());
        }
        *current = Some(session.to_string());
        // A session indexed but not folded here has only its id.
        let manifest = store.load_manifest(session).ok();
        let folded = manifest.as_ref().map(|m| &m.session);
        let heading = Heading {
            kind: "session",
            session,
            title: folded.and_then(|s| s.title.as_deref()),
            started: folded.and_then(started),
            agent: folded.and_then(named_by).map(Agent::id),
            cwd: folded.and_then(|s| s.cwd.as_deref()),
        };
        if self.json {
            return emit(
                out,
                serde_json::to_string(&heading).expect("headings serialize"),
            );
        }
        emit(
            out,
            format!(
                "## session {session}  {}  {}",
                minute(heading.started.as_deref()),
                heading.title.unwrap_or("")
            )
            .trim_end(),
        )
    }

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
                "sha256": span.sha256,
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
