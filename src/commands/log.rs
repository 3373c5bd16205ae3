//! `ctxfold log`: the sessions, newest first, from the store and from disk.

use std::path::{Path, PathBuf};

use crate::agents::{Agent, Homes};
use crate::cli::human::bytes;
use crate::cli::pager::{self, PagerArgs};
use crate::cli::style::{ColorArgs, Role};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::report_discovery;
use crate::commands::show::open_if_any;
use crate::error::{Error, Result};
use crate::history::summary::{State, Summary, gather};
use crate::store::ids::unique_prefix_len;
use crate::time::{Instant, since};

/// The shortest id prefix shown, as git shows 7 hex digits.
const SHORT_ID: usize = 8;

/// List sessions newest first: when, agent, id, size, project folder, title
///
/// Every session folded in the store (those whose source file is gone included) and every session
/// found on disk under the agents' homes ($CODEX_HOME, $PI_CODING_AGENT_DIR, $CLAUDE_CONFIG_DIR), each once, newest
/// first by its last activity (the timestamp of its last line that has one, UTC). Each line says
/// where the session is: `folded` (in the store, and the same on disk), `stored` (only in the
/// store: its source is gone), `grown` (appended to on disk since it was folded), `changed`
/// (changed on disk other than by an append: `ctxfold diff ID` shows how) or `new` (only on disk).
/// Sizes are of the file on disk when it differs from the store, else the folded size. The id is
/// the shortest prefix (at least 8 characters) that names the session among those listed, which
/// `ctxfold show` and `ctxfold diff` take.
///
/// --json writes one object per session: `{"id","agent","date","bytes","cwd","title","archived",
/// "rollout_path","state"}` (`date` RFC 3339 in UTC, or null). On a terminal the list goes
/// through a pager (see --no-pager) and is coloured (see --color).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-log", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct LogArgs {
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
    /// Only the N newest
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    pub max_count: Option<usize>,
    /// One JSON object per session (JSON Lines)
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

impl Command for LogArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let (since, cwd) = filters(self.since.as_deref(), self.cwd.as_deref())?;
        let store = open_if_any(&self.store)?;
        let homes = Homes::from_env()?;
        let gathered = gather(store.as_ref(), &homes)?;
        let mut status = report_discovery(io, &gathered.discovery);
        // Each makes the status non-zero: an error, as report_discovery says its own.
        for problem in &gathered.problems {
            io.error(problem);
            status = status.worst(problem.status());
        }
        let shown: Vec<&Summary> = gathered
            .summaries
            .iter()
            .filter(|s| self.agent.is_none_or(|agent| s.agent == Some(agent)))
            .filter(|s| since.is_none_or(|at| s.date.is_some_and(|date| date >= at)))
            .filter(|s| {
                cwd.as_deref()
                    .is_none_or(|dir| is_under(s.cwd.as_deref(), dir))
            })
            .take(self.max_count.unwrap_or(usize::MAX))
            .collect();
        for summary in &shown {
            if let Some(problem) = &summary.problem {
                io.error(problem);
                status = status.worst(Status::Corrupt);
            }
        }
        let ids: Vec<&str> = gathered.summaries.iter().map(|s| s.id.as_str()).collect();
        let short = unique_prefix_len(&ids, SHORT_ID);
        let listed = pager::page(io, &self.pager, |io| {
            let style = self.color.style(io.out_is_terminal());
            for summary in &shown {
                if self.json {
                    emit(
                        io.out,
                        serde_json::to_string(summary).expect("summaries serialize"),
                    )?;
                } else {
                    emit(io.out, line(summary, short, style))?;
                }
            }
            Ok(Status::Success)
        })?;
        Ok(status.worst(listed))
    }
}

/// `2026-05-11 10:29Z  codex  019c8a4c  12.3 KiB  folded   project  title`.
fn line(summary: &Summary, short: usize, style: crate::cli::style::Style) -> String {
    let date = summary
        .date
        .map(Instant::minutes)
        .unwrap_or_else(|| "-".into());
    let agent = summary.agent.map(Agent::id).unwrap_or("file");
    let id: String = summary.id.chars().take(short).collect();
    let role = match summary.state {
        State::Folded => Role::Good,
        State::Stored => Role::Dim,
        State::Grown | State::Changed => Role::Bad,
        State::New => Role::Tool,
    };
    let state = style.paint(role, format!("{:<7}", summary.state.word()));
    let project = summary
        .cwd
        .as_deref()
        .map(|cwd| {
            Path::new(cwd)
                .file_name()
                .map_or(cwd.to_string(), |name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "-".into());
    let title = summary.title.as_deref().unwrap_or("");
    format!(
        "{date:<17}  {agent:<5}  {}  {:>10}  {state}  {project}  {title}",
        style.paint(Role::Heading, id),
        bytes(summary.bytes),
    )
    .trim_end()
    .to_string()
}

/// Whether `cwd` is `dir` or inside it (component by component: `/a/bc` is not inside `/a/b`).
/// `--since` and `--cwd` as log and grep take them: an instant, and an absolute folder.
pub(crate) fn filters(
    since_text: Option<&str>,
    cwd: Option<&Path>,
) -> Result<(Option<Instant>, Option<PathBuf>)> {
    let since_at = since_text
        .map(|text| since(text, Instant::now()))
        .transpose()?;
    let cwd = cwd
        .map(|path| {
            std::path::absolute(path)
                .map_err(|e| Error::usage(format!("bad --cwd {}: {e}", path.display())))
        })
        .transpose()?;
    Ok((since_at, cwd))
}

pub(crate) fn is_under(cwd: Option<&str>, dir: &Path) -> bool {
    cwd.is_some_and(|cwd| Path::new(cwd).starts_with(dir))
}
