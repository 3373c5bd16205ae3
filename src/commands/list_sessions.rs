//! `ctxfold-list-sessions`: the session files found under the agents' homes, or the paths named.

use std::path::PathBuf;

use crate::agents::Homes;
use crate::cli::{Command, Io, Status, emit};
use crate::commands::AgentArgs;
use crate::error::Result;
use crate::sources::discover;

/// List the session files found, with the fields their manifests would record (JSON Lines)
///
/// Without PATHS, searches $CODEX_HOME (default ~/.codex) for sessions/YYYY/MM/DD/rollout-*.jsonl
/// (active) and archived_sessions/rollout-*.jsonl and rollout-*.jsonl.zst (archived; a plain file
/// wins over its .zst sibling), $PI_CODING_AGENT_DIR/sessions (default ~/.pi/agent/sessions)
/// for --<cwd>--/*.jsonl, and $CLAUDE_CONFIG_DIR/projects (default ~/.claude/projects) for
/// <project>/*.jsonl and the subagents' <project>/<session id>/subagents/agent-*.jsonl (each a
/// session of its own). --agent keeps one agent's. With PATHS, lists those files and every *.jsonl
/// and *.jsonl.zst under those folders.
///
/// Each line: `{"id","title"?,"cwd"?,"rollout_path","archived","agent","path"}`. The id is Codex's
/// session_meta.payload.id, Pi's header id, or Claude Code's sessionId (a subagent's:
/// agent-<agentId>), else taken from the file name. The title is, for Codex, the threads table of
/// $CODEX_HOME/state_5.sqlite, else thread_name in $CODEX_HOME/session_index.jsonl, else the first
/// line of the first user message; for Pi, the session_info name, else the first user message; for
/// Claude Code, what its resume picker shows: the latest agent-name, custom-title or ai-title, a
/// summary line in the file's last 64 KiB, the latest prompt (last-prompt), else the first prompt a
/// person typed. A Claude Code session is archived unless a running Claude Code process registered
/// it ($CLAUDE_CONFIG_DIR/sessions/<pid>.json) or its file changed in the last 10 minutes. `path` is
/// the file read; `rollout_path` is where it is restored (for a .jsonl.zst, the plain .jsonl beside
/// it). Files that cannot be listed (unreadable, an unsafe id, a duplicate id) are named on stderr,
/// and the exit status is 1.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-list-sessions", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct ListSessionsArgs {
    /// Session files and folders [default: the agents' homes]
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
    #[command(flatten)]
    pub agent: AgentArgs,
}

impl Command for ListSessionsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let discovery = discover(&Homes::from_env()?, &self.paths, &self.agent.agents);
        for found in &discovery.sessions {
            emit(
                io.out,
                serde_json::to_string(found).expect("sessions serialize"),
            )?;
        }
        for problem in &discovery.problems {
            io.warn(problem);
        }
        Ok(if discovery.problems.is_empty() {
            Status::Success
        } else {
            Status::Refused
        })
    }
}
