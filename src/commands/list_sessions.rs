//! `ctxfold-list-sessions`: the session files found under the Codex and Pi homes, or the paths named.

use std::path::PathBuf;

use crate::agents::Homes;
use crate::cli::{Command, Io, Status, emit};
use crate::error::Result;
use crate::sources::discover;

/// List the session files found, with the fields their manifests would record (JSON Lines)
///
/// Without PATHS, searches $CODEX_HOME (default ~/.codex) for sessions/YYYY/MM/DD/rollout-*.jsonl
/// (active) and archived_sessions/rollout-*.jsonl and rollout-*.jsonl.zst (archived; a plain file
/// wins over its .zst sibling), and $PI_CODING_AGENT_DIR/sessions (default ~/.pi/agent/sessions)
/// for --<cwd>--/*.jsonl. With PATHS, lists those files and every *.jsonl and *.jsonl.zst under
/// those folders.
///
/// Each line: `{"id","title"?,"cwd"?,"rollout_path","archived","agent","path"}`. The id is Codex's
/// session_meta.payload.id or Pi's header id, else taken from the file name. The title is, for
/// Codex, the threads table of $CODEX_HOME/state_5.sqlite, else thread_name in
/// $CODEX_HOME/session_index.jsonl, else the first line of the first user message; for Pi, the
/// session_info name, else the first user message. `path` is the file read; `rollout_path` is
/// where it is restored (for a .jsonl.zst, the plain .jsonl beside it). Files that cannot be
/// listed (unreadable, an unsafe id, a duplicate id) are named on stderr, and the exit status is 1.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-list-sessions", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct ListSessionsArgs {
    /// Session files and folders [default: the Codex and Pi homes]
    #[arg(value_name = "PATH", value_hint = clap::ValueHint::AnyPath)]
    pub paths: Vec<PathBuf>,
}

impl Command for ListSessionsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let discovery = discover(&Homes::from_env()?, &self.paths);
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
