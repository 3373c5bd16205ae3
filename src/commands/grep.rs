//! `ctxfold grep`: search what agents and people said in every session, folded or on disk, as
//! ripgrep searches files.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::agents::place::started;
use crate::agents::{Agent, Homes};
use crate::cli::human::minute;
use crate::cli::pager::{self, PagerArgs};
use crate::cli::style::{ColorArgs, Role, Style};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::log::{filters, is_under};
use crate::commands::report_discovery;
use crate::commands::show::open_if_any;
use crate::digest::Digest;
use crate::error::{Error, Result, stdout_failed};
use crate::grep::hits::{Around, At, Shown, show};
use crate::grep::pattern::{Flags, build};
use crate::grep::{Found, Limits, Place, scan};
use crate::history::named::Named;
use crate::history::summary::{State, Summary, gather};
use crate::sources::{Found as OnDisk, discover};
use crate::store::Store;
use crate::store::ids::{Unresolved, resolve_prefix};

/// Search the text of every session, folded or on disk, as ripgrep searches files
///
/// PATTERN (a regular expression, as ripgrep's; `-F` for a fixed string) is matched against what a
/// person reads in each session: the prompts, replies, thinking, tool calls and their output of
/// Codex, Pi and Claude Code sessions, as text: each string of each JSON line with its escapes
/// decoded (a `\n` in the JSON is a newline in the text, which a pattern can span with `\n`; `^`
/// and `$` match at the start and end of each line of it), keys and opaque data (encrypted
/// reasoning, signatures, base64 images) left out. A line of any other file is its own text.
///
/// Every folded session is searched (from the store, or from its file when that grew or changed
/// since it was folded), and every session found on disk under the agents' homes ($CODEX_HOME,
/// $PI_CODING_AGENT_DIR, $CLAUDE_CONFIG_DIR); SESSION (an id, a unique prefix of one, or a
/// session file's path) or --session narrows the search to those; --agent, --since and --cwd as
/// in ctxfold log. A line that forks and resumes of a session repeat is read from the store and
/// searched once, however many sessions hold it. A folded session is not read at all when its
/// n-gram filter (which runs of three and four characters its text holds) lacks one of each word
/// every match must hold: the first search that can ask builds the filters of the sessions that
/// have none (reading each once) and keeps them in the store's cache/grep-filters.
///
/// Each session with a match starts with a heading, `## session <id>  <started>  <agent>
/// <title>`; each line of text that holds a match follows as `<turn>:<role>:<text>`, the lines
/// around it (-A, -B, -C) as `<turn>-<role>-<text>`, `--` between lines that do not follow each
/// other. The turn is counted as ctxfold show counts it (one per message from a person); the role
/// is the kind of the block the text is in (`user`, `text`, `thinking`, `tool_call`,
/// `tool_result`, `summary`, `context`), `meta` for a string no block shows (an id, a path, an
/// event the agent logs twice).
///
/// --json writes JSON Lines: for each session `{"type":"session","session","started","agent",
/// "title","cwd"}`, then `{"type":"match"|"context","session","turn","role","blockId","line",
/// "text","submatches":[{"start","end","bytes":[B,E]}]}`: `line` is the session file's line,
/// `start`/`end` the match's bytes in `text`, `bytes` its bytes in the session file as written
/// (escapes and all: `ctxfold show --raw` gives them).
///
/// On a terminal the output goes through a pager (see --no-pager) and matches are coloured (see
/// --color). Exit status as ripgrep's, of the table below only 0, 1 and 2: 0 a match was found, 1
/// none, 2 an error (a bad pattern, a session not found, a session that could not be read or is
/// not UTF-8: the others are searched and shown still).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-grep", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct GrepArgs {
    /// What to look for (a regular expression); with -e, the first SESSION
    #[arg(value_name = "PATTERN", required_unless_present = "regexp")]
    pub pattern: Option<String>,
    /// Only these sessions: ids, unique prefixes of ids, or session files' paths
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub sessions: Vec<String>,
    /// A pattern to look for (again for several: a match of any)
    #[arg(short = 'e', long, value_name = "PATTERN", allow_hyphen_values = true)]
    pub regexp: Vec<String>,
    /// The patterns are fixed strings
    #[arg(short = 'F', long)]
    pub fixed_strings: bool,
    /// Ignore case
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Ignore case unless a pattern has an uppercase letter
    #[arg(short = 'S', long)]
    pub smart_case: bool,
    /// Only matches that are whole words
    #[arg(short = 'w', long)]
    pub word_regexp: bool,
    /// Show NUM lines of text after each matching line
    #[arg(short = 'A', long, value_name = "NUM")]
    pub after_context: Option<usize>,
    /// Show NUM lines of text before each matching line
    #[arg(short = 'B', long, value_name = "NUM")]
    pub before_context: Option<usize>,
    /// Show NUM lines of text before and after each matching line
    #[arg(short = 'C', long, value_name = "NUM")]
    pub context: Option<usize>,
    /// Only the ids of the sessions that match
    #[arg(short = 'l', long, conflicts_with_all = ["count", "json"])]
    pub files_with_matches: bool,
    /// Only how many lines of text match in each session that matches (`<id>:<count>`)
    #[arg(short = 'c', long, conflicts_with = "json")]
    pub count: bool,
    /// Stop after NUM matching lines of text in each session
    #[arg(short = 'm', long, value_name = "NUM")]
    pub max_count: Option<u64>,
    /// JSON Lines
    #[arg(long)]
    pub json: bool,
    /// Only this session (again for several)
    #[arg(long, value_name = "ID", add = crate::cli::complete::session_ids())]
    pub session: Vec<String>,
    /// Only this agent's sessions
    #[arg(long, value_enum, value_name = "AGENT")]
    pub agent: Option<Agent>,
    /// Only sessions active since DATE: 2026-05-01, 2026-05-01T12:00 (UTC unless a zone is
    /// given), or how long ago: 30m, 12h, 3d, 2w
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only sessions whose project folder is PATH or inside it
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::DirPath)]
    pub cwd: Option<PathBuf>,
    #[command(flatten)]
    pub color: ColorArgs,
    #[command(flatten)]
    pub pager: PagerArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A session to search, with what its heading says.
struct Target {
    id: String,
    place: Place,
    started: Option<String>,
    agent: Option<Agent>,
    title: Option<String>,
    cwd: Option<String>,
}

impl Command for GrepArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        // As ripgrep's: every error is status 2, whatever ctxfold's table says of it elsewhere.
        self.search(io).map_err(|e| {
            if e.is_broken_pipe() || e.status() == Status::Usage {
                e
            } else {
                Error::usage(e.to_string())
            }
        })
    }
}

impl GrepArgs {
    fn search(&self, io: &mut Io<'_>) -> Result<Status> {
        let mut patterns = self.regexp.clone();
        let mut specs: Vec<String> = self.session.clone();
        match &self.pattern {
            Some(first) if !self.regexp.is_empty() => specs.push(first.clone()),
            Some(pattern) => patterns.push(pattern.clone()),
            None => {}
        }
        specs.extend(self.sessions.iter().cloned());
        let pattern = build(
            &patterns,
            Flags {
                fixed: self.fixed_strings,
                ignore_case: self.ignore_case,
                smart_case: self.smart_case,
                word: self.word_regexp,
            },
        )?;
        let store = open_if_any(&self.store)?;
        if let Some(store) = &store {
            // Manifests (packed ones too) and sessions are read in order, each from a few
            // neighbouring blocks: a larger cache of decoded blocks only adds to the peak.
            store
                .odb()
                .set_block_cache(crate::odb::pack::FEW_BLOCKS_BYTES);
        }
        let mut status = Status::Success;
        let (targets, live) = self.targets(io, store.as_ref(), &specs, &mut status)?;
        let limits = Limits {
            max_count: self.max_count,
            first: self.files_with_matches,
        };
        let places: Vec<&Place> = targets.iter().map(|t| &t.place).collect();
        let found = scan(store.as_ref(), &places, &pattern, limits, &live);
        let mut errors = Vec::new();
        let mut any = false;
        let listed = pager::page(io, &self.pager, |io| {
            let style = self.color.style(io.out_is_terminal());
            for (target, found) in targets.iter().zip(found) {
                let found = match found {
                    Ok(found) if found.count > 0 => found,
                    Ok(_) => continue,
                    Err(e) => {
                        errors.push(format!("session {}: {}", target.id, e.without_context()));
                        continue;
                    }
                };
                any = true;
                if self.files_with_matches {
                    emit(io.out, &target.id)?;
                } else if self.count {
                    emit(io.out, format_args!("{}:{}", target.id, found.count))?;
                } else if let Err(e) = self.matches(
                    io.out,
                    style,
                    store.as_ref(),
                    target,
                    &found,
                    &pattern.regex,
                    &mut errors,
                ) {
                    if e.is_broken_pipe() || matches!(e.cause(), crate::error::Cause::Write { .. })
                    {
                        return Err(e);
                    }
                    errors.push(format!("session {}: {}", target.id, e.without_context()));
                }
            }
            Ok(Status::Success)
        })?;
        for error in &errors {
            io.error(error);
        }
        if !errors.is_empty() {
            status = Status::Usage;
        }
        Ok(status
            .worst(listed)
            .worst(if any || status != Status::Success {
                Status::Success
            } else {
                Status::Negative
            }))
    }

    /// The sessions to search: those named, else every one, filtered; and the bytes of every
    /// folded session.
    fn targets(
        &self,
        io: &mut Io<'_>,
        store: Option<&Store>,
        specs: &[String],
        status: &mut Status,
    ) -> Result<(Vec<Target>, HashSet<Digest>)> {
        let (since, cwd) = filters(self.since.as_deref(), self.cwd.as_deref())?;
        let homes = Homes::from_env()?;
        let gathered = gather(store, &homes)?;
        if report_discovery(io, &gathered.discovery) != Status::Success {
            *status = Status::Usage;
        }
        for problem in &gathered.problems {
            io.error(problem);
            *status = Status::Usage;
        }
        let on_disk: HashMap<&str, &OnDisk> = (gathered.discovery.sessions.iter())
            .map(|found| (found.session.id.as_str(), found))
            .collect();
        let mut named = Vec::new();
        let ids: Vec<String> = gathered.summaries.iter().map(|s| s.id.clone()).collect();
        for spec in specs {
            if is_path(spec, &ids) {
                named.push(Named::find(spec, store)?.id_or_describe());
                continue;
            }
            match resolve_prefix(spec, &ids) {
                Ok(id) => named.push(id),
                Err(Unresolved::Ambiguous(message)) => return Err(Error::usage(message)),
                Err(Unresolved::None) => {
                    return Err(Error::usage(format!(
                        "no session {spec:?}, folded or on disk ('ctxfold log' lists them)"
                    )));
                }
            }
        }
        let mut targets = Vec::new();
        for summary in &gathered.summaries {
            if !specs.is_empty() && !named.contains(&summary.id) {
                continue;
            }
            let kept = self.agent.is_none_or(|agent| summary.agent == Some(agent))
                && since.is_none_or(|at| summary.date.is_some_and(|date| date >= at))
                && cwd
                    .as_deref()
                    .is_none_or(|dir| is_under(summary.cwd.as_deref(), dir));
            if !kept {
                continue;
            }
            if let Some(target) = target_of(summary, store, &on_disk)? {
                targets.push(target);
            }
        }
        // Sessions named by a path that no listing holds (a file outside the agents' homes).
        for spec in specs.iter().filter(|s| is_path(s, &ids)) {
            let path = PathBuf::from(spec);
            let found = discover(&homes, std::slice::from_ref(&path), &[])
                .sessions
                .pop();
            let id = found
                .as_ref()
                .map_or(spec.clone(), |f| f.session.id.clone());
            if targets.iter().any(|t| t.id == id) {
                continue;
            }
            targets.push(Target {
                id,
                started: found.as_ref().and_then(|f| started(&f.session)),
                agent: found.as_ref().and_then(|f| f.agent),
                title: found.as_ref().and_then(|f| f.session.title.clone()),
                cwd: found.and_then(|f| f.session.cwd),
                place: Place::File(path),
            });
        }
        // Oldest first, as a history reads (a session whose start is not known first).
        targets.sort_by(|a, b| a.started.cmp(&b.started).then_with(|| a.id.cmp(&b.id)));
        let live = gathered.summaries.iter().filter_map(|s| s.folded).collect();
        Ok((targets, live))
    }

    #[allow(clippy::too_many_arguments)]
    fn matches(
        &self,
        out: &mut dyn Write,
        style: Style,
        store: Option<&Store>,
        target: &Target,
        found: &Found,
        regex: &regex::bytes::Regex,
        errors: &mut Vec<String>,
    ) -> Result<()> {
        let context = self.context.unwrap_or(0);
        let around = Around {
            before: self.before_context.unwrap_or(context),
            after: self.after_context.unwrap_or(context),
            max_count: self.max_count,
        };
        self.heading(out, style, target)?;
        let mut bad_utf8 = None;
        let mut each = |shown: Shown<'_>| match shown {
            Shown::Break if !self.json => emit(out, "--"),
            Shown::Break => Ok(()),
            Shown::Context { at, text } => {
                check_utf8(text, at, &mut bad_utf8);
                self.line(out, style, target, at, text, &[], &[])
            }
            Shown::Match {
                at,
                text,
                ranges,
                bytes,
            } => {
                check_utf8(text, at, &mut bad_utf8);
                self.line(out, style, target, at, text, &ranges, &bytes)
            }
        };
        (target.place).read(store, |source| {
            show(source, &found.lines, regex, around, &mut each)
        })?;
        if !self.json {
            emit(out, "")?;
        }
        if let Some(line) = bad_utf8 {
            errors.push(format!(
                "session {}: line {line} is not valid UTF-8 (shown with U+FFFD)",
                target.id
            ));
        }
        Ok(())
    }

    fn heading(&self, out: &mut dyn Write, style: Style, target: &Target) -> Result<()> {
        if self.json {
            return emit(
                out,
                json!({
                    "type": "session",
                    "session": target.id,
                    "started": target.started,
                    "agent": target.agent.map(Agent::id),
                    "title": target.title,
                    "cwd": target.cwd,
                }),
            );
        }
        let heading = format!(
            "## session {}  {}  {}  {}",
            target.id,
            minute(target.started.as_deref()),
            target.agent.map_or("file", Agent::id),
            target.title.as_deref().unwrap_or("")
        );
        emit(out, style.paint(Role::Heading, heading.trim_end()))
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &self,
        out: &mut dyn Write,
        style: Style,
        target: &Target,
        at: At<'_>,
        text: &[u8],
        ranges: &[std::ops::Range<usize>],
        bytes: &[std::ops::Range<u64>],
    ) -> Result<()> {
        let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        if self.json {
            let kind = if ranges.is_empty() {
                "context"
            } else {
                "match"
            };
            let submatches: Vec<_> = (ranges.iter().zip(bytes))
                .map(|(r, b)| json!({"start": r.start, "end": r.end, "bytes": [b.start, b.end]}))
                .collect();
            return emit(
                out,
                json!({
                    "type": kind,
                    "session": target.id,
                    "turn": at.turn,
                    "role": at.role,
                    "blockId": at.block_id,
                    "line": at.line,
                    "text": lossy(text),
                    "submatches": submatches,
                }),
            );
        }
        let sep = if ranges.is_empty() { '-' } else { ':' };
        let mut painted = String::new();
        let mut from = 0;
        for r in ranges {
            painted.push_str(&lossy(&text[from..r.start]));
            painted.push_str(&style.paint(Role::Bad, lossy(&text[r.clone()])).to_string());
            from = r.end;
        }
        painted.push_str(&lossy(&text[from..]));
        let line = format!(
            "{}{sep}{}{sep}{painted}",
            style.paint(Role::Good, at.turn),
            style.paint(Role::Tool, at.role)
        );
        out.write_all(line.as_bytes()).map_err(stdout_failed)?;
        emit(out, "")
    }
}

/// Whether a SESSION names a file (by its path) rather than an id.
fn is_path(spec: &str, ids: &[String]) -> bool {
    spec.contains('/') || (Path::new(spec).is_file() && !ids.iter().any(|id| id == spec))
}

/// Notes the first line of text that is not UTF-8 (it is shown, and the search ends with status 2).
fn check_utf8(text: &[u8], at: At<'_>, bad: &mut Option<u64>) {
    if bad.is_none() && std::str::from_utf8(text).is_err() {
        *bad = Some(at.line);
    }
}

/// Where a listed session is searched: the store while its file is the same or gone, else the file.
fn target_of(
    summary: &Summary,
    store: Option<&Store>,
    on_disk: &HashMap<&str, &OnDisk>,
) -> Result<Option<Target>> {
    let disk = on_disk.get(summary.id.as_str());
    let (place, started_at) = match (summary.state, store) {
        (State::Folded | State::Stored, Some(_)) => {
            let place = Place::Store {
                id: summary.id.clone(),
                sha256: summary.folded,
                bytes: summary.bytes,
            };
            (place, summary.started.clone())
        }
        _ => match disk {
            Some(found) => (Place::File(found.path.clone()), summary.started.clone()),
            None => return Ok(None),
        },
    };
    Ok(Some(Target {
        id: summary.id.clone(),
        place,
        started: started_at,
        agent: summary.agent,
        title: summary.title.clone(),
        cwd: summary.cwd.clone(),
    }))
}
