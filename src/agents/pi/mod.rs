//! Pi sessions: where Pi keeps them and what names them, what their header says, their titles,
//! their place for restore, and how they read as a ledger.
//!
//! The agent dir (`$PI_CODING_AGENT_DIR`, default `~/.pi/agent`) holds
//! `sessions/--<cwd>--/<time>_<id>.jsonl`, `<time>` the UTC creation time with `:` and `.` made
//! `-`. Pi lists every `*.jsonl` of a cwd's folder, whatever its name. The title is the last
//! `session_info` name, else the first message from a person.
//!
//! Beside the sessions, the context-fold extension keeps
//! `--<cwd>--/context-fold/<session-id>/seed-index.jsonl`: not a session, but an index that
//! discovery finds and fold carries into the store.

mod blocks;
mod lines;
mod marks;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use memchr::memmem;
use serde_json::value::RawValue;

use super::json::{self, Scratch};
use super::lines::{MAX_META_LINE, for_each_line, title_line};
use super::place::shaped;
use super::{Describe, Described, Format, Mark, Meta, Tree};
use crate::ledger::{Block, Entry};

/// Pi coding agent sessions.
pub struct Pi;

const SESSIONS: &str = "sessions";

/// The time a Pi file name starts with (`2025-12-09T00-52-54-397Z`).
const TIME_SHAPE: &str = "9999-99-99T99-99-99-999Z";

/// Pi reads every `*.jsonl` exactly one folder down (deeper files, such as subagent artifacts,
/// are not sessions).
fn holds(rel: &Path) -> bool {
    rel.components().count() == 2 && rel.extension().is_some_and(|e| e == "jsonl")
}

/// The folder Pi names after a cwd: `--<cwd with its separators made ->--`.
fn is_cwd_folder(name: &str) -> bool {
    name.len() >= 4 && name.starts_with("--") && name.ends_with("--")
}

impl Format for Pi {
    fn name(&self) -> &'static str {
        "Pi"
    }

    fn home(&self) -> (&'static str, &'static str) {
        ("PI_CODING_AGENT_DIR", ".pi/agent")
    }

    fn trees(&self) -> &'static [Tree] {
        // Deep enough for the context-fold seed indexes beside the sessions.
        &[Tree {
            dir: SESSIONS,
            archived: false,
            depth: Some(4),
            holds,
        }]
    }

    /// The header (`{"type":"session","id":…,"cwd":…}`).
    fn meta(&self, first: &[u8]) -> Option<Meta> {
        let mut scratch = Scratch::default();
        let head = json::parse::<lines::Head<'_>>(first, &mut scratch)?.value;
        (head.kind.as_deref() == Some("session")).then(|| Meta {
            id: head.id.map(|id| id.into_owned()),
            cwd: head.cwd.map(|cwd| cwd.into_owned()),
        })
    }

    /// `<time>_<id>`.
    fn id_from_name<'n>(&self, stem: &'n str) -> Option<&'n str> {
        let (time, id) = stem.split_once('_')?;
        (shaped(time, TIME_SHAPE) && !id.is_empty()).then_some(id)
    }

    fn describer<'h>(&self, _home: &'h Path) -> Box<dyn Describe + 'h> {
        Box::new(PiTitles)
    }

    /// `…/sessions/--<cwd>--/<time>_<id>.jsonl`.
    fn place(&self, parts: &[&str], id: &str) -> Option<PathBuf> {
        let [.., tree, folder, file] = parts else {
            return None;
        };
        let stem = file.strip_suffix(".jsonl")?;
        (*tree == SESSIONS && is_cwd_folder(folder) && self.id_from_name(stem) == Some(id))
            .then(|| [SESSIONS, *folder, *file].iter().collect())
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
        Box::new(blocks::Blocks)
    }

    fn resume_blocks(&self, saved: serde_json::Value) -> Option<Box<dyn super::Blocks>> {
        super::resumed::<blocks::Blocks>(saved)
    }

    fn edited(&self, line: &[u8], content: &RawValue, edit_id: &str) -> Vec<Block> {
        blocks::edited(line, content, edit_id)
    }

    fn marks(&self, line: &[u8]) -> Vec<Mark> {
        marks::of(line)
    }
}

/// Titles from the session itself.
struct PiTitles;

impl Describe for PiTitles {
    fn describe(
        &self,
        _id: &str,
        _path: &Path,
        _first: &[u8],
        rest: &mut dyn BufRead,
    ) -> Described {
        Described {
            title: title(rest),
            ..Described::default()
        }
    }
}

/// The last `session_info` name (an entry without one clears it), else the first message from a
/// person.
fn title(rest: &mut dyn BufRead) -> Option<String> {
    let mut name: Option<String> = None;
    let mut first_user: Option<String> = None;
    let _ = for_each_line(rest, MAX_META_LINE, |line| {
        let info = memmem::find(line, b"\"session_info\"").is_some();
        let user = first_user.is_none() && memmem::find(line, b"\"user\"").is_some();
        if !(info || user) {
            return true;
        }
        let mut scratch = Scratch::default();
        let Some(entry) = json::parse::<lines::Line<'_>>(line, &mut scratch) else {
            return true;
        };
        let entry = entry.value;
        match entry.kind.as_deref() {
            Some("session_info") => name = entry.name.as_deref().and_then(title_line),
            Some("message") if first_user.is_none() => {
                if let Some(text) = entry.message.and_then(|m| m.user_text()) {
                    first_user = title_line(&text);
                }
            }
            _ => {}
        }
        true
    });
    name.or(first_user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title(text: &str) -> Option<String> {
        super::title(&mut text.as_bytes())
    }

    #[test]
    fn session_info_wins_over_the_first_user_message() {
        let user = r#"{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hello there"}]}}"#;
        let info = r#"{"type":"session_info","id":"b","name":"Named"}"#;
        let cleared = r#"{"type":"session_info","id":"c"}"#;
        assert_eq!(title(&format!("{user}\n{info}\n")), Some("Named".into()));
        assert_eq!(
            title(&format!("{info}\n{user}\n{cleared}\n")),
            Some("hello there".into())
        );
        let plain = r#"{"type":"message","message":{"role":"user","content":"plain text"}}"#;
        assert_eq!(title(plain), Some("plain text".into()));
    }

    #[test]
    fn ids_come_from_pi_names() {
        assert_eq!(
            Pi.id_from_name("2025-12-09T00-52-54-397Z_d97339c6"),
            Some("d97339c6")
        );
        assert_eq!(Pi.id_from_name("session"), None);
        assert_eq!(Pi.id_from_name("notes_d97339c6"), None);
    }

    #[test]
    fn places_are_pis_own_shape_only() {
        let place = |path: &str, id: &str| {
            let parts: Vec<&str> = path.split('/').collect();
            Pi.place(&parts, id)
        };
        let file = "2025-12-09T00-52-54-397Z_d97339c6.jsonl";
        assert_eq!(
            place(&format!("h/sessions/--x--/{file}"), "d97339c6"),
            Some(PathBuf::from(format!("sessions/--x--/{file}")))
        );
        for (path, id) in [
            (format!("h/sessions/--x--/{file}"), "other"),
            (format!("h/sessions/x/{file}"), "d97339c6"),
            (format!("h/sessions/--x--/sub/{file}"), "d97339c6"),
            (format!("h/other/--x--/{file}"), "d97339c6"),
            ("h/sessions/--x--/session.jsonl".into(), "d97339c6"),
        ] {
            assert_eq!(place(&path, id), None, "{path}");
        }
    }
}
