//! One home per agent format. Everything ctxfold knows about how one agent keeps its sessions lives
//! in that agent's module, behind [`Format`]: where under its home its files are and how they are
//! named, what their first line says (id, cwd), what a person's message is, titles, a session's
//! place for restore, and how its lines read as a ledger (skeleton and blocks). [`Agent`] names the
//! formats and [`Agent::format`] is the one place that dispatches on them: a new agent is a module
//! implementing `Format`, a variant, and its arm there.
//!
//! Not for: walking folders (`sources` drives discovery), reading a ledger in two passes (`ledger`
//! drives that), or anything about the store.

pub mod codex;
mod content;
pub mod json;
pub mod lines;
pub mod pi;
pub mod place;
mod surrogates;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::ledger::{Block, Entry};

/// The agents whose session files ctxfold knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    Codex,
    Pi,
}

impl Agent {
    /// Every agent, in the order their openings are tried on a file's first line.
    pub const ALL: [Agent; 2] = [Agent::Codex, Agent::Pi];

    /// The agent as JSON output names it (`codex`, `pi`), for people too.
    pub fn key(self) -> &'static str {
        match self {
            Agent::Codex => "codex",
            Agent::Pi => "pi",
        }
    }

    /// What this agent's files are: the one dispatch on the agent.
    pub fn format(self) -> &'static dyn Format {
        match self {
            Agent::Codex => &codex::Codex,
            Agent::Pi => &pi::Pi,
        }
    }

    /// The agent whose first line `first` is (with what it says), if any.
    pub fn of_first_line(first: &[u8]) -> Option<(Agent, Meta)> {
        Self::ALL
            .into_iter()
            .find_map(|agent| Some((agent, agent.format().meta(first)?)))
    }
}

/// What a session file's opening says about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub id: Option<String>,
    pub cwd: Option<String>,
}

/// A folder under an agent's home that holds its sessions.
pub struct Tree {
    /// Its path under the home (`sessions`).
    pub dir: &'static str,
    /// Whether the sessions in it are archived (no longer written to).
    pub archived: bool,
    /// How deep discovery walks it (`None`: all the way).
    pub depth: Option<usize>,
    /// Whether a file at `rel` (under the tree) is a session, for discovery.
    pub holds: fn(rel: &Path) -> bool,
}

/// Everything ctxfold knows about one agent's session files.
pub trait Format: Sync {
    /// The agent's name, for people.
    fn name(&self) -> &'static str;

    /// The environment variable that moves the agent's home, and the home's default under `$HOME`.
    fn home(&self) -> (&'static str, &'static str);

    /// The folders under the home that discovery walks.
    fn trees(&self) -> &'static [Tree];

    /// The session's id and cwd from a file's first line, when the line is this agent's opening.
    fn meta(&self, first: &[u8]) -> Option<Meta>;

    /// The session id in a file name (without `.jsonl`/`.jsonl.zst`), when it is named as this
    /// agent names its files.
    fn id_from_name<'n>(&self, stem: &'n str) -> Option<&'n str>;

    /// Titles for the sessions of the agent whose home is `home`.
    fn titles<'h>(&self, home: &'h Path) -> Box<dyn Titles + 'h>;

    /// Where restore puts session `id` recorded at `rollout_path` (whose components are `parts`,
    /// each a plain name): its path relative to the agent's home, when `rollout_path` ends exactly
    /// as this agent places its sessions; else `None`.
    fn place(&self, parts: &[&str], id: &str) -> Option<PathBuf>;

    /// The skeleton of one ledger line (the `index`th read), and its opening when it is one; `ids`
    /// are the entries read so far by id. `None` when the line is not a JSON object.
    fn skeleton(
        &self,
        line: &[u8],
        index: usize,
        ids: &HashMap<String, usize>,
    ) -> Option<(Entry, Option<Meta>)>;

    /// A fresh reader of blocks for one pass over a ledger.
    fn blocks(&self) -> Box<dyn Blocks>;

    /// The blocks of the entry at `line` with its content replaced by `content` (an edit), their
    /// ids suffixed `:edit:<edit_id>`.
    fn edited(&self, line: &[u8], content: &RawValue, edit_id: &str) -> Vec<Block>;
}

/// Session titles, as the agent shows them.
pub trait Titles: Sync {
    /// The title of session `id`, whose file reads on from after its first line in `rest`.
    fn title(&self, id: &str, rest: &mut dyn BufRead) -> Option<String>;
}

/// The blocks of a ledger's lines, in order, for one pass (a format may number repeats).
pub trait Blocks {
    /// The line's blocks; `None` when it is not a JSON object.
    fn blocks(&mut self, line: &[u8]) -> Option<Vec<Block>>;
}

/// Where this machine's agents keep their files: each agent's home, from its environment variable,
/// else its default under `$HOME`.
#[derive(Debug, Clone)]
pub struct Homes {
    dirs: HashMap<Agent, PathBuf>,
}

impl Homes {
    pub fn from_env() -> Result<Self> {
        let env = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = env("HOME");
        let mut dirs = HashMap::new();
        for agent in Agent::ALL {
            let (variable, default) = agent.format().home();
            let dir = match (env(variable), &home) {
                (Some(dir), _) => dir,
                (None, Some(home)) => home.join(default),
                (None, None) => {
                    return Err(Error::usage(format!(
                        "HOME is not set: cannot find ~/{default}"
                    )));
                }
            };
            dirs.insert(agent, dir);
        }
        Ok(Self { dirs })
    }

    /// `agent`'s home.
    pub fn of(&self, agent: Agent) -> &Path {
        &self.dirs[&agent]
    }

    /// Every folder of sessions under every agent's home (`~/.codex/sessions`, …).
    pub fn session_trees(&self) -> Vec<PathBuf> {
        Agent::ALL
            .iter()
            .flat_map(|&agent| {
                let home = self.of(agent);
                agent.format().trees().iter().map(|t| home.join(t.dir))
            })
            .collect()
    }
}
