//! `ctxfold diff`: how two sessions relate, or a folded session and its file on disk now.

use serde::Serialize;

use crate::cli::human::{bytes, count};
use crate::cli::pager::{self, PagerArgs};
use crate::cli::style::{ColorArgs, Role, Style};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::show::open_if_any;
use crate::error::{Error, Result};
use crate::history::fork::{After, Common, Fork, Relation, changes};
use crate::history::named::Named;
use crate::history::relative::nearest;
use crate::ledger::{FileSource, Source};

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// Show how two sessions relate: their common history, then what each has after it
///
/// A and B are each a session's id, a unique prefix of one, or a session file's path (read as
/// `ctxfold show` reads them: the file while it is on disk, else the store). diff finds the
/// history both begin with, as their agent means it: a fork or a resume copies a session's lines
/// into a new file, where the agent may rewrite the fields that name the session (Claude Code's
/// `sessionId` and `slug`, the time Codex stamps on each copied line), open the file with a line
/// of its own (Codex's `session_meta`, Pi's header) or leave side records out (Claude Code's
/// `file-history-snapshot`). Entries are equal when they are but for those fields, Claude Code's
/// rows and Pi's entries by their own ids (`uuid`, `id`) among the rest; a session appended to
/// keeps its lines byte for byte. diff says how long that common history is (lines and bytes of
/// A, B's lines where they differ, and the turn it reaches, named by its first message from a
/// person and when it was sent), then shows what each has after the point where they part, turn
/// by turn: each pair of turns rendered as `ctxfold show` renders them and compared line by line,
/// `-` for a line only A's turn has, `+` only B's.
///
/// With only A, its folded version (the store's) is compared with its file on disk now: the
/// answer to `ctxfold status`'s `grown` (grown by N lines in T turns) and `changed` (changed at
/// line L). A session that has only one of them (not folded yet, or its file gone) is compared
/// with its nearest relative in the store instead: the folded session of its agent that shares
/// the longest history with it (the session it was forked or resumed from, or a fork of it).
///
/// --stat gives the summary alone. --json writes JSON Lines: for each pair of turns that differ,
/// `{"type":"turn","a_turn","b_turn","lines":[["-","text"],…]}` (unless --stat), then
/// `{"type":"summary","a","b","relation":"same"|"grown"|"shrunk"|"parted","common":{"lines",
/// "bytes","b_lines","b_bytes","turn","prompt","at"},"a_after":{"lines","bytes","turns"},"b_after":{…}}`. Exit status 0 when they
/// are the same, 1 when they differ.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-diff", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct DiffArgs {
    /// A session: an id, a unique prefix of one, or a session file's path
    #[arg(value_name = "A", add = crate::cli::complete::session_ids())]
    pub a: String,
    /// The other session [default: A's file on disk, compared with A as folded]
    #[arg(value_name = "B", add = crate::cli::complete::session_ids())]
    pub b: Option<String>,
    /// Only the summary: the common history and how much each has after it
    #[arg(long)]
    pub stat: bool,
    /// JSON Lines
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub color: ColorArgs,
    #[command(flatten)]
    pub pager: PagerArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Serialize)]
struct Turn<'a> {
    #[serde(rename = "type")]
    record: &'static str,
    a_turn: Option<u64>,
    b_turn: Option<u64>,
    lines: &'a [(char, String)],
}

#[derive(Serialize)]
struct Summary<'a> {
    #[serde(rename = "type")]
    record: &'static str,
    a: &'a str,
    b: &'a str,
    relation: Relation,
    common: &'a Common,
    a_after: After,
    b_after: After,
}

impl Command for DiffArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = open_if_any(&self.store)?;
        let a = Named::find(&self.a, store.as_ref())?;
        let b;
        let (source_a, source_b, labels): (Box<dyn Source + '_>, Box<dyn Source + '_>, _);
        match &self.b {
            Some(spec) => {
                b = Named::find(spec, store.as_ref())?;
                source_a = a.source(store.as_ref())?.0;
                source_b = b.source(store.as_ref())?.0;
                labels = (a.describe(), b.describe());
            }
            None => match (&a.manifest, &a.file, store.as_ref()) {
                (Some(_), Some(file), _) => {
                    source_a = a.folded_source(store.as_ref())?;
                    source_b = Box::new(FileSource(file.clone()));
                    labels = (
                        format!("{} (folded)", a.describe()),
                        format!("{} (on disk)", file.display()),
                    );
                }
                (_, _, Some(store)) => {
                    source_a = a.source(Some(store))?.0;
                    let missing = match &a.manifest {
                        Some(_) => "its file is not on disk",
                        None => "not folded",
                    };
                    let (relative, _) = nearest(store, source_a.as_ref(), a.id.as_deref())?
                        .ok_or_else(|| {
                            Error::not_found(format!(
                                "{}: {missing}, and no folded session shares its history; give two sessions to compare",
                                a.describe()
                            ))
                        })?;
                    b = Named::folded(relative)?;
                    source_b = b.folded_source(Some(store))?;
                    labels = (
                        a.describe(),
                        format!("{} (its nearest relative)", b.describe()),
                    );
                }
                (_, _, None) => {
                    return Err(Error::not_found(format!(
                        "{}: not folded, and there is no store; give two sessions to compare",
                        a.describe()
                    )));
                }
            },
        }
        let one = self.b.is_none() && a.manifest.is_some() && a.file.is_some();
        pager::page(io, &self.pager, |io| {
            let style = self.color.style(io.out_is_terminal());
            let mut fork = Fork::new(source_a.as_ref(), source_b.as_ref())?;
            let common = fork.common().clone();
            if !self.json {
                let heading = format!("diff {} {}", labels.0, labels.1);
                emit(io.out, style.paint(Role::Heading, heading))?;
                emit(io.out, common_line(&common))?;
            }
            while let Some((a, b)) = fork.next_turns()? {
                if self.stat {
                    continue;
                }
                let lines = changes(a.as_ref(), b.as_ref(), CONTEXT);
                if lines.is_empty() {
                    continue;
                }
                let (a_turn, b_turn) = (a.map(|c| c.turn), b.map(|c| c.turn));
                if self.json {
                    let turn = Turn {
                        record: "turn",
                        a_turn,
                        b_turn,
                        lines: &lines,
                    };
                    emit(
                        io.out,
                        serde_json::to_string(&turn).expect("turns serialize"),
                    )?;
                    continue;
                }
                emit(
                    io.out,
                    style.paint(Role::Heading, hunk_heading(a_turn, b_turn)),
                )?;
                for (tag, text) in &lines {
                    emit(io.out, changed_line(style, *tag, text))?;
                }
            }
            let (a_after, b_after) = fork.after();
            let relation = Relation::of(a_after, b_after);
            if self.json {
                let summary = Summary {
                    record: "summary",
                    a: &labels.0,
                    b: &labels.1,
                    relation,
                    common: &common,
                    a_after,
                    b_after,
                };
                emit(
                    io.out,
                    serde_json::to_string(&summary).expect("summaries serialize"),
                )?;
            } else {
                emit(
                    io.out,
                    relation_line(relation, &common, a_after, b_after, one),
                )?;
            }
            Ok(match relation {
                Relation::Same => Status::Success,
                _ => Status::Negative,
            })
        })
    }
}

/// `common history: 57 lines, 12.3 KiB (12640 bytes), through turn 2 ("fix the build",
/// 2026-05-11 10:29Z)`: the exact size only where the short one is rounded, B's lines where they
/// are not A's (`57 lines (56 in B)`); `common history: none` when the sessions part at their
/// first entry.
pub fn common_line(common: &Common) -> String {
    if common.lines == 0 {
        return "common history: none".into();
    }
    let size = match common.bytes < 1024 {
        true => count(common.bytes, "byte"),
        false => format!("{} ({})", bytes(common.bytes), count(common.bytes, "byte")),
    };
    let b_lines = match common.b_lines == common.lines {
        true => String::new(),
        false => format!(" ({} in B)", common.b_lines),
    };
    let turn = match (&common.prompt, common.at) {
        (Some(prompt), Some(at)) => format!(" ({prompt:?}, {})", at.minutes()),
        (Some(prompt), None) => format!(" ({prompt:?})"),
        _ => String::new(),
    };
    format!(
        "common history: {}{b_lines}, {size}, through turn {}{turn}",
        count(common.lines, "line"),
        common.turn
    )
}

/// `@@ turn 3 @@`, or `@@ turn 3 | turn 4 @@` when the sides are at different turns.
fn hunk_heading(a: Option<u64>, b: Option<u64>) -> String {
    let side = |turn: Option<u64>| turn.map_or("-".to_string(), |t| format!("turn {t}"));
    match (a, b) {
        (Some(a), Some(b)) if a == b => format!("@@ turn {a} @@"),
        _ => format!("@@ {} | {} @@", side(a), side(b)),
    }
}

fn changed_line(style: Style, tag: char, text: &str) -> String {
    let line = format!("{tag}{text}");
    match tag {
        '-' => style.paint(Role::Bad, line).to_string(),
        '+' => style.paint(Role::Good, line).to_string(),
        _ => line,
    }
}

/// The last line: what each has after the common history, in the words of `status` when a folded
/// session is compared with its file (`one`).
fn relation_line(relation: Relation, common: &Common, a: After, b: After, one: bool) -> String {
    // `3 lines (1.5 KiB, 1 new turn)`
    let amount = |after: After| {
        let turns = match after.turns {
            0 => "no new turn".to_string(),
            n => count(n, "new turn"),
        };
        format!(
            "{} ({}, {turns})",
            count(after.lines, "line"),
            bytes(after.bytes)
        )
    };
    let parted_at = match common.b_lines == common.lines {
        true => format!("line {}", common.lines + 1),
        false => format!(
            "line {} (line {} in B)",
            common.lines + 1,
            common.b_lines + 1
        ),
    };
    match (relation, one) {
        (Relation::Same, true) => "the same: the file on disk is as folded".into(),
        (Relation::Same, false) => "the same".into(),
        (Relation::Grown, true) => format!("grown by {}", amount(b)),
        (Relation::Grown, false) => format!("B is A and {} more", amount(b)),
        (Relation::Shrunk, true) => format!(
            "shrunk: the file on disk lacks the folded version's last {}",
            amount(a)
        ),
        (Relation::Shrunk, false) => format!("A is B and {} more", amount(a)),
        (Relation::Parted, true) => format!(
            "changed at {parted_at}: after it, the folded version has {}, the file {}",
            amount(a),
            amount(b)
        ),
        (Relation::Parted, false) => format!(
            "they part at {parted_at}: after it, A has {}, B {}",
            amount(a),
            amount(b)
        ),
    }
}
