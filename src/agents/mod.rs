//! One home per agent format. Everything ctxfold knows about how one agent keeps its sessions lives
//! in that agent's module, behind [`Format`]: where under its home its files are and how they are
//! named, what their first line says (id, cwd), what a person's message is, titles, a session's
//! place for restore, and how its lines read as a ledger (skeleton and blocks). [`Agent`] names the
//! formats and [`Agent::format`] is the one place that dispatches on them: a new agent is a module
//! implementing `Format`, a variant, and its arm there.
//!
//! Not for: walking folders (`sources` drives discovery), reading a ledger in two passes (`ledger`
//! drives that), or anything about the store.

pub mod claude;
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

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::blocks::{Block, Entry};
use crate::error::{Error, Result};

/// The agents whose session files ctxfold knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Codex CLI rollouts ($CODEX_HOME, default ~/.codex)
    Codex,
    /// Pi sessions ($PI_CODING_AGENT_DIR, default ~/.pi/agent)
    Pi,
    /// Claude Code transcripts ($CLAUDE_CONFIG_DIR, default ~/.claude)
    Claude,
}

impl Agent {
    /// Every agent, in the order their openings are tried on a file's first line (Claude Code
    /// last: its side records are the least particular openings).
    pub const ALL: [Agent; 3] = [Agent::Codex, Agent::Pi, Agent::Claude];

    /// What this agent's files are: the one dispatch on the agent.
    pub fn format(self) -> &'static dyn Format {
        match self {
            Agent::Codex => &codex::Codex,
            Agent::Pi => &pi::Pi,
            Agent::Claude => &claude::Claude,
        }
    }

    /// The agents' names for people, joined with `or` (`Codex, Pi or Claude Code`).
    pub fn names_or() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|a| a.format().name()).collect();
        match names.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// Its name in listings, JSON and `--agent` (`codex`, `pi`, `claude`).
    pub fn id(self) -> &'static str {
        match self {
            Agent::Codex => "codex",
            Agent::Pi => "pi",
            Agent::Claude => "claude",
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

    /// What discovery reads past the first line of the sessions of the agent whose home is `home`;
    /// a title that takes reading the whole file is left for later when `titles` says so.
    fn describer<'h>(&self, home: &'h Path, titles: Titles) -> Box<dyn Describe + 'h>;

    /// The title of the session at `path`, which its describer left for later
    /// ([`Described::title_later`]); `grown`: the title its first bytes had, and how many they are,
    /// when the lines after them were appended since (they may be all that need reading).
    fn title_later(&self, path: &Path, grown: Option<(Option<&str>, u64)>) -> Option<String> {
        let _ = (path, grown);
        None
    }

    /// Give the sessions of one folder (this agent's, as discovery found them) the titles their
    /// files give each other, where a session's own give none better. A format whose files title
    /// only themselves does nothing.
    fn titles_across(&self, _sessions: &mut [Titling<'_>]) {}

    /// Whether a session's file alone says all that discovery learns of it (its title comes from
    /// no other file: see [`Format::titles_across`]).
    fn describes_itself(&self) -> bool {
        true
    }

    /// Where restore puts session `id` recorded at `rollout_path` (whose components are `parts`,
    /// each a plain name): its path relative to the agent's home, when `rollout_path` ends exactly
    /// as this agent places its sessions; else `None`.
    fn place(&self, parts: &[&str], id: &str) -> Option<PathBuf>;

    /// The JSON objects of one line, each read as an entry of the ledger: the line itself, unless
    /// the agent is known to write several objects on one line.
    fn objects<'l>(&self, line: &'l [u8]) -> Vec<&'l [u8]> {
        vec![line]
    }

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

    /// A reader of blocks in the state [`Blocks::save`] gave (`None`: not one of this agent's).
    fn resume_blocks(&self, saved: serde_json::Value) -> Option<Box<dyn Blocks>>;

    /// The blocks of the entry at `line` with its content replaced by `content` (an edit), their
    /// ids suffixed `:edit:<edit_id>`.
    fn edited(&self, line: &[u8], content: &RawValue, edit_id: &str) -> Vec<Block>;

    /// Files the agent keeps for a session beside its file (a folder), which folding leaves where
    /// they are.
    fn companion(&self, _session_file: &Path) -> Option<PathBuf> {
        None
    }

    /// What `line` says about the session besides its blocks, for a person reading it (`ctxfold
    /// show`): the model it goes on with, a compaction. A format that says nothing has none.
    fn marks(&self, _line: &[u8]) -> Vec<Mark> {
        Vec::new()
    }

    /// What `line` is as history, apart from the file that holds it (`ctxfold diff`): a fork or
    /// a resume copies a session's lines into a new file, and the agent may rename them there.
    /// A format whose copies are byte for byte, with no line of its own, says nothing.
    fn likeness(&self, _line: &[u8]) -> Likeness {
        Likeness::default()
    }
}

/// A line as history apart from its file (see [`Format::likeness`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Likeness {
    /// The line without the fields a copy rewrites (the session's id, the time it was copied),
    /// as compact JSON; `None`: the line as written is what counts.
    pub key: Option<Vec<u8>>,
    /// A line that is no entry of the conversation: one an agent writes to open a new file (a
    /// Codex `session_meta`, a Pi header), or a side record a copy may leave out (a Claude Code
    /// `file-history-snapshot`).
    pub aside: bool,
}

impl Likeness {
    /// `line` without its top-level members `rewritten`, and whether `aside` says it is aside;
    /// the line as written, not aside, when it is not one JSON object.
    fn without(
        line: &[u8],
        rewritten: &[&str],
        aside: impl Fn(&serde_json::Map<String, serde_json::Value>) -> bool,
    ) -> Self {
        let Ok(mut object) = serde_json::from_slice::<serde_json::Map<_, _>>(line) else {
            return Self::default();
        };
        let aside = aside(&object);
        for field in rewritten {
            object.remove(*field);
        }
        Self {
            key: serde_json::to_vec(&object).ok(),
            aside,
        }
    }
}

/// What a line says about the session besides its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// The model the session goes on with (a line may repeat the one in use).
    Model(String),
    /// The reasoning effort or thinking level it goes on with.
    Thinking(String),
    /// The context was compacted here; the summary, when the line holds one, is its block.
    Compaction { tokens_before: Option<u64> },
}

/// When discovery reads a title that takes reading the whole file: a fold needs it only of the
/// sessions it folds, and most are up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Titles {
    Now,
    Later,
}

/// What discovery learns of a session file past its first line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Described {
    /// The title, as the agent shows it.
    pub title: Option<String>,
    /// The title is left for [`Format::title_later`] (asked for with [`Titles::Later`]).
    pub title_later: bool,
    /// The cwd, when the first line did not say it.
    pub cwd: Option<String>,
    /// Whether the session is being written (`None`: as the folder it is in says).
    pub active: Option<bool>,
    /// What the file says of titles across files (see [`Format::titles_across`]).
    pub across: Across,
}

/// What a session file says of titles across the files of its folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Across {
    /// The titles it gives the conversations that end at these entries, wherever they are:
    /// (entry id, title), in file order (Claude Code 1.0.x's `summary` lines).
    pub titles: Vec<(String, String)>,
    /// Its own title is no better than its first prompt: one another file gives it wins.
    pub plain: bool,
}

/// A session found, as [`Format::titles_across`] sees it.
pub struct Titling<'a> {
    pub path: &'a Path,
    pub across: &'a Across,
    pub title: &'a mut Option<String>,
}

/// What an agent's session files say beyond their first line, as the agent reads them.
pub trait Describe: Sync {
    /// Session `id`, whose file is at `path`, opens with `first` and reads on in `rest`.
    fn describe(&self, id: &str, path: &Path, first: &[u8], rest: &mut dyn BufRead) -> Described;
}

/// The blocks of a ledger's lines, in order, for one pass (a format may number repeats).
pub trait Blocks: Send {
    /// The line's blocks; `None` when it is not a JSON object.
    fn blocks(&mut self, line: &[u8]) -> Option<Vec<Block>>;

    /// The state the lines so far left, for a pass over lines appended since to go on from.
    fn save(&self) -> serde_json::Value;
}

/// Where a pass's block reader ended, for a pass over lines appended since to go on from: the
/// reader as the pass left it, its state written ([`Blocks::save`]) only when this is (a long
/// session's is megabytes, and a fold keeps it on a thread of its own), or as it was read back.
pub enum BlocksState {
    Reader(Box<dyn Blocks>),
    Saved(serde_json::Value),
}

impl BlocksState {
    /// The reader to go on with (`None`: a state saved that is not one of `format`'s).
    pub fn resume(self, format: &dyn Format) -> Option<Box<dyn Blocks>> {
        match self {
            Self::Reader(reader) => Some(reader),
            Self::Saved(saved) => format.resume_blocks(saved),
        }
    }
}

impl Serialize for BlocksState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Self::Reader(reader) => reader.save().serialize(s),
            Self::Saved(saved) => saved.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for BlocksState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        serde_json::Value::deserialize(d).map(Self::Saved)
    }
}

/// A reader of blocks whose state is plain data, as [`Blocks::save`] saved it.
fn resumed<B>(saved: serde_json::Value) -> Option<Box<dyn Blocks>>
where
    B: Blocks + serde::de::DeserializeOwned + 'static,
{
    let blocks: B = serde_json::from_value(saved).ok()?;
    Some(Box::new(blocks))
}

/// [`Blocks::save`] for a reader whose state is plain data.
fn saved(blocks: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(blocks).expect("a block reader's state serializes")
}

/// The blocks a fresh `B` makes of `lines`, in order (for the agents' tests).
#[cfg(test)]
pub(crate) fn blocks_of_lines<B: Blocks + Default>(lines: &[&str]) -> Vec<Block> {
    let mut reader = B::default();
    lines
        .iter()
        .flat_map(|l| reader.blocks(l.as_bytes()).unwrap())
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_readers_state_written_late_is_the_state_it_saves_and_goes_on_alike() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut went_on = 0;
        for agent in Agent::ALL {
            let dir = fixtures.join(agent.id());
            for file in std::fs::read_dir(&dir).unwrap() {
                let bytes = std::fs::read(file.unwrap().path()).unwrap();
                let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
                let (before, after) = lines.split_at(lines.len() / 2);
                let mut reader = agent.format().blocks();
                before.iter().for_each(|line| drop(reader.blocks(line)));
                let saved = reader.save();
                let state = BlocksState::Reader(reader);
                assert_eq!(
                    serde_json::to_value(&state).unwrap(),
                    saved,
                    "{}",
                    agent.id()
                );
                // As a checkpoint reads it back, and as the pass left it.
                let read_back: BlocksState = serde_json::from_value(saved).unwrap();
                let [mut left, mut read] = [state, read_back].map(|s| s.resume(agent.format()));
                let (left, read) = (left.as_mut().unwrap(), read.as_mut().unwrap());
                for line in after {
                    let blocks = |r: &mut Box<dyn Blocks>| format!("{:?}", r.blocks(line));
                    assert_eq!(blocks(left), blocks(read), "{}", agent.id());
                }
                went_on += 1;
            }
        }
        assert!(went_on >= 8, "{went_on} files");
        let other = BlocksState::Saved(serde_json::json!("not a reader's state"));
        assert!(other.resume(Agent::Codex.format()).is_none());
    }

    #[test]
    fn a_copy_is_like_its_original_but_for_what_the_agent_rewrites() {
        let like = |agent: Agent, line: &str| agent.format().likeness(line.as_bytes());
        // Codex: the time of the copy and its ordinal are not the line's.
        let codex =
            r#"{"timestamp":"2026-01-01T00:00:00Z","type":"event_msg","payload":{"type":"x"}}"#;
        let copy = r#"{"timestamp":"2026-02-02T00:00:00Z","ordinal":7,"type":"event_msg","payload":{"type":"x"}}"#;
        assert_eq!(like(Agent::Codex, codex), like(Agent::Codex, copy));
        assert!(!like(Agent::Codex, codex).aside);
        let meta = r#"{"timestamp":"t","type":"session_meta","payload":{"id":"a"}}"#;
        assert!(like(Agent::Codex, meta).aside);
        // Claude Code: the session's id and slug are not the row's; its uuid is.
        let row = r#"{"parentUuid":null,"sessionId":"a","slug":"s","type":"user","uuid":"u1"}"#;
        let resumed = r#"{"parentUuid":null,"sessionId":"b","type":"user","uuid":"u1"}"#;
        let other = r#"{"parentUuid":null,"sessionId":"b","type":"user","uuid":"u2"}"#;
        assert_eq!(like(Agent::Claude, row), like(Agent::Claude, resumed));
        assert_ne!(like(Agent::Claude, row), like(Agent::Claude, other));
        assert!(!like(Agent::Claude, row).aside);
        let records = r#"{"type":"mode","sessionId":"a"}{"type":"tag","sessionId":"a"}"#;
        assert!(like(Agent::Claude, records).aside);
        // Pi: entries are copied as they are; the header is the fork's own.
        let header = r#"{"type":"session","version":3,"id":"a","timestamp":"t","cwd":"/w"}"#;
        assert_eq!(
            like(Agent::Pi, header),
            Likeness {
                key: None,
                aside: true
            }
        );
        // What is not one JSON object counts as written.
        assert_eq!(like(Agent::Codex, "not json"), Likeness::default());
    }
}
