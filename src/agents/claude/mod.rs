//! Claude Code transcripts: where Claude Code keeps them and what names them, what their lines
//! say (id, cwd), their titles, whether one is being written, their place for restore, and how
//! they read as a ledger. `../shared/spec/claude-code.md` describes the format.
//!
//! The config dir (`$CLAUDE_CONFIG_DIR`, default `~/.claude`) holds
//! `projects/<project>/<session id>.jsonl`, `<project>` the session's cwd with every character
//! but `[A-Za-z0-9]` made `-` (cut, with a hash, past 200 characters). A session's own folder
//! beside it, `projects/<project>/<session id>/`, holds its subagents' transcripts
//! (`subagents/[…/]agent-<agent id>.jsonl`, with a `.meta.json` each) and the whole output of
//! tool calls too large for the transcript (`tool-results/<name>.txt`); `projects/<project>/memory/`
//! is not about sessions.
//!
//! Subagents are sessions of their own, with id `agent-<agent id>` (their lines carry the parent's
//! `sessionId` and their own `agentId`): found, folded, titled (by the task they were given) and
//! restored like the others, so that folding a project keeps everything Claude Code would delete
//! after `cleanupPeriodDays`. Claude Code 2.0 wrote them beside the sessions
//! (`projects/<project>/agent-<agent id>.jsonl`): the same. The `tool-results` files are not
//! JSON Lines and not part of a session's ledger: a span over a result whose output was saved
//! there names the file as its `fullOutputPath`, and `fold --remove-source` leaves the session's
//! folder in place and says so.

mod blocks;
mod lines;
mod marks;
mod titles;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use super::json::{self, Scratch};
use super::place::shaped;
use super::{Describe, Format, Meta, Titles, Tree};
use crate::blocks::{Block, Entry};

pub use titles::ACTIVE_WINDOW;

/// Claude Code transcripts.
pub struct Claude;

const PROJECTS: &str = "projects";
const SUBAGENTS: &str = "subagents";

const UUID_SHAPE: &str = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

/// `<session uuid>` or `agent-<agent id>`: the stem of a transcript's file name, and its id.
fn is_session_stem(stem: &str) -> bool {
    shaped(stem, UUID_SHAPE) || is_agent_stem(stem)
}

fn is_agent_stem(stem: &str) -> bool {
    stem.strip_prefix("agent-")
        .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// A project folder's name: what Claude Code makes of a cwd (`[A-Za-z0-9-]`), or the
/// `CLAUDE_CODE_PROJECT_DIR_NAME` it may be given instead (`[A-Za-z0-9_-]`).
fn is_project_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// What discovery takes under `projects/`: `<project>/<name>.jsonl`, and subagent transcripts
/// `<project>/<session id>/subagents/[…/]agent-<id>.jsonl`.
fn holds(rel: &Path) -> bool {
    let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
    let Some(stem) = parts.last().and_then(|f| f.strip_suffix(".jsonl")) else {
        return false;
    };
    match parts.as_slice() {
        [_, _] => true,
        [_, session, sub, .., _] => {
            *sub == SUBAGENTS && shaped(session, UUID_SHAPE) && is_agent_stem(stem)
        }
        _ => false,
    }
}

impl Format for Claude {
    fn name(&self) -> &'static str {
        "Claude Code"
    }

    fn home(&self) -> (&'static str, &'static str) {
        ("CLAUDE_CONFIG_DIR", ".claude")
    }

    fn trees(&self) -> &'static [Tree] {
        &[Tree {
            dir: PROJECTS,
            archived: false,
            depth: None,
            holds,
        }]
    }

    /// Any line Claude Code writes (a row, or a side record naming its session); a `summary` or
    /// `file-history-snapshot` opening names no session: the file name does.
    fn meta(&self, first: &[u8]) -> Option<Meta> {
        let object = *lines::objects(first).first()?;
        let mut scratch = Scratch::default();
        let head = json::parse::<lines::Head<'_>>(object, &mut scratch)?.value;
        head.is_claude().then(|| head.meta())
    }

    fn id_from_name<'n>(&self, stem: &'n str) -> Option<&'n str> {
        is_session_stem(stem).then_some(stem)
    }

    fn describer<'h>(&self, home: &'h Path, _: Titles) -> Box<dyn Describe + 'h> {
        Box::new(titles::Describer::new(home))
    }

    fn describes_itself(&self) -> bool {
        false
    }

    fn titles_across(&self, sessions: &mut [super::Titling<'_>]) {
        titles::across(sessions)
    }

    /// `…/projects/<project>/<id>.jsonl`, or a subagent's
    /// `…/projects/<project>/<session uuid>/subagents/[…/]agent-<id>.jsonl`.
    fn place(&self, parts: &[&str], id: &str) -> Option<PathBuf> {
        let (file, dirs) = parts.split_last()?;
        if file.strip_suffix(".jsonl") != Some(id) || !is_session_stem(id) {
            return None;
        }
        if let [.., tree, project] = dirs
            && *tree == PROJECTS
            && is_project_name(project)
        {
            return Some([PROJECTS, project, file].iter().collect());
        }
        // A subagent: the last `subagents` folder, under a session folder of a project.
        let at = dirs.iter().rposition(|d| *d == SUBAGENTS)?;
        let [.., tree, project, session] = &dirs[..at] else {
            return None;
        };
        (is_agent_stem(id)
            && *tree == PROJECTS
            && is_project_name(project)
            && shaped(session, UUID_SHAPE))
        .then(|| {
            [PROJECTS, project, session]
                .into_iter()
                .chain(dirs[at..].iter().copied())
                .chain([*file])
                .collect()
        })
    }

    fn objects<'l>(&self, line: &'l [u8]) -> Vec<&'l [u8]> {
        lines::objects(line)
    }

    fn skeleton(
        &self,
        line: &[u8],
        index: usize,
        ids: &HashMap<String, usize>,
    ) -> Option<(Entry, Option<Meta>)> {
        blocks::skeleton(line, index, ids)
    }

    fn blocks(&self) -> Box<dyn super::Blocks> {
        Box::<blocks::Blocks>::default()
    }

    fn resume_blocks(&self, saved: serde_json::Value) -> Option<Box<dyn super::Blocks>> {
        super::resumed::<blocks::Blocks>(saved)
    }

    fn marks(&self, line: &[u8]) -> Vec<super::Mark> {
        marks::of(line)
    }

    /// A resume copies the rows it goes on from into the new file, each with the new
    /// `sessionId` and without its `slug`, and leaves side records (`file-history-snapshot`)
    /// out: a row (one with a `uuid`) is an entry, a line of side records only is aside.
    fn likeness(&self, line: &[u8]) -> super::Likeness {
        let objects = lines::objects(line);
        let each: Vec<super::Likeness> = (objects.iter())
            .map(|object| {
                super::Likeness::without(object, &["sessionId", "slug"], |object| {
                    !object.contains_key("uuid")
                })
            })
            .collect();
        let keys: Option<Vec<Vec<u8>>> = each.iter().map(|l| l.key.clone()).collect();
        super::Likeness {
            key: keys.map(|keys| keys.join(&b'\n')),
            aside: !each.is_empty() && each.iter().all(|l| l.aside),
        }
    }

    fn edited(&self, _line: &[u8], _content: &RawValue, _edit_id: &str) -> Vec<Block> {
        // Claude Code appends no edits of earlier rows: the skeleton never makes one.
        Vec::new()
    }

    /// The session's own folder (`<id>/` beside `<id>.jsonl`), when there is one.
    fn companion(&self, session_file: &Path) -> Option<PathBuf> {
        let dir = session_file.with_extension("");
        dir.is_dir().then_some(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "aaaaaaaa-0000-4000-8000-000000000001";

    fn place(path: &str, id: &str) -> Option<PathBuf> {
        let parts: Vec<&str> = path.split('/').collect();
        Claude.place(&parts, id)
    }

    #[test]
    fn discovery_takes_sessions_and_subagents_only() {
        for (rel, held) in [
            (format!("-w-x/{ID}.jsonl"), true),
            ("-w-x/agent-a1b2.jsonl".to_string(), true),
            (format!("-w-x/{ID}/subagents/agent-a1b2.jsonl"), true),
            (format!("-w-x/{ID}/subagents/team/agent-a1b2.jsonl"), true),
            (format!("-w-x/{ID}/subagents/agent-a1b2.meta.json"), false),
            (format!("-w-x/{ID}/tool-results/b95.txt"), false),
            (format!("-w-x/{ID}/tool-results/x.jsonl"), false),
            ("-w-x/memory/notes.jsonl".to_string(), false),
            (format!("{ID}.jsonl"), false),
        ] {
            assert_eq!(holds(Path::new(&rel)), held, "{rel}");
        }
    }

    #[test]
    fn places_are_claude_codes_own_shapes_only() {
        assert_eq!(
            place(&format!("/h/.claude/projects/-w-x/{ID}.jsonl"), ID),
            Some(PathBuf::from(format!("projects/-w-x/{ID}.jsonl")))
        );
        let agent = format!("/h/c/projects/-w-x/{ID}/subagents/agent-a32.jsonl");
        assert_eq!(
            place(&agent, "agent-a32"),
            Some(PathBuf::from(format!(
                "projects/-w-x/{ID}/subagents/agent-a32.jsonl"
            )))
        );
        assert_eq!(
            place("/h/c/projects/-w-x/agent-a32.jsonl", "agent-a32"),
            Some(PathBuf::from("projects/-w-x/agent-a32.jsonl"))
        );
        for (path, id) in [
            (format!("/h/c/projects/-w-x/{ID}.jsonl"), "agent-a32"),
            (format!("/h/c/projects/-w x/{ID}.jsonl"), ID),
            (format!("/h/c/projects/-w-x/sub/{ID}.jsonl"), ID),
            (format!("/h/c/elsewhere/-w-x/{ID}.jsonl"), ID),
            (format!("/h/c/projects/{ID}.jsonl"), ID),
            ("/h/c/projects/-w-x/notes.jsonl".into(), "notes"),
            (
                "/h/c/projects/-w-x/x/subagents/agent-a32.jsonl".into(),
                "agent-a32",
            ),
            (format!("/h/c/projects/-w-x/{ID}/subagents/{ID}.jsonl"), ID),
        ] {
            assert_eq!(place(&path, id), None, "{path}");
        }
    }

    #[test]
    fn openings_are_any_line_claude_code_writes() {
        let meta = |line: &str| Claude.meta(line.as_bytes());
        assert_eq!(
            meta(r#"{"type":"queue-operation","operation":"enqueue","sessionId":"s1"}"#)
                .unwrap()
                .id
                .as_deref(),
            Some("s1")
        );
        let summary = meta(r#"{"type":"summary","summary":"Fix it","leafUuid":"u"}"#).unwrap();
        assert_eq!(summary.id, None);
        // Two objects on the first line: the first one opens.
        let joined =
            r#"{"type":"mode","mode":"normal","sessionId":"s2"}{"type":"mode","sessionId":"s3"}"#;
        assert_eq!(meta(joined).unwrap().id.as_deref(), Some("s2"));
        for other in [
            r#"{"type":"session","id":"pi","cwd":"/w"}"#,
            r#"{"type":"user","message":"no session"}"#,
            r#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#,
            r#"{"type":"summary","summary":"no leaf"}"#,
        ] {
            assert_eq!(meta(other), None, "{other}");
        }
        assert_eq!(Claude.id_from_name(ID), Some(ID));
        assert_eq!(Claude.id_from_name("agent-a3f"), Some("agent-a3f"));
        assert_eq!(Claude.id_from_name("notes"), None);
    }
}
