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
use super::{Describe, Described, Format, Mark, Meta, Titles, Tree};
use crate::blocks::{Block, Entry};

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

    fn describer<'h>(&self, _home: &'h Path, titles: Titles) -> Box<dyn Describe + 'h> {
        Box::new(PiTitles(titles))
    }

    fn title_later(&self, path: &Path, grown: Option<(Option<&str>, u64)>) -> Option<String> {
        if let Some((before, bytes)) = grown
            && let Ok(Some(mut appended)) = crate::input::open_at(path, bytes)
            && let Some(title) = title_after(before, &mut appended)
        {
            return title;
        }
        title(&mut crate::input::open(path).ok()?)
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

    /// A fork writes a header of its own (its id, time and `parentSession`), then copies the
    /// entries of the branch it forks as they are.
    fn likeness(&self, line: &[u8]) -> super::Likeness {
        super::Likeness {
            key: None,
            aside: self.meta(line).is_some(),
        }
    }
}

/// Titles from the session itself: its whole file, so read now or left for later.
struct PiTitles(Titles);

impl Describe for PiTitles {
    fn describe(
        &self,
        _id: &str,
        _path: &Path,
        _first: &[u8],
        rest: &mut dyn BufRead,
    ) -> Described {
        match self.0 {
            Titles::Now => Described {
                title: title(rest),
                ..Described::default()
            },
            Titles::Later => Described {
                title_later: true,
                ..Described::default()
            },
        }
    }
}

/// The last `session_info` name (an entry without one clears it), else the first message from a
/// person.
fn title(rest: &mut dyn BufRead) -> Option<String> {
    let found = TitleLines::read(rest);
    found.name.flatten().or(found.first_user)
}

/// The title of a session whose first bytes had the title `before`, from the lines appended to
/// them (`appended`): `None` when those clear its name, which leaves its first message from a
/// person, wherever it is.
fn title_after(before: Option<&str>, appended: &mut dyn BufRead) -> Option<Option<String>> {
    let found = TitleLines::read(appended);
    match found.name {
        Some(Some(name)) => Some(Some(name)),
        Some(None) => None,
        // A name given before is still the name; else the first message from a person is
        // before's, if it had one.
        None => Some(before.map(String::from).or(found.first_user)),
    }
}

/// What lines say of a title.
#[derive(Default)]
struct TitleLines {
    /// The last `session_info`'s name, if there is one (`Some(None)`: it cleared the name).
    name: Option<Option<String>>,
    first_user: Option<String>,
}

impl TitleLines {
    fn read(lines: &mut dyn BufRead) -> Self {
        let mut found = Self::default();
        let _ = for_each_line(lines, MAX_META_LINE, |line| {
            let info = memmem::find(line, b"\"session_info\"").is_some();
            let user = found.first_user.is_none() && memmem::find(line, b"\"user\"").is_some();
            if !(info || user) {
                return true;
            }
            let mut scratch = Scratch::default();
            let Some(entry) = json::parse::<lines::Line<'_>>(line, &mut scratch) else {
                return true;
            };
            let entry = entry.value;
            match entry.kind.as_deref() {
                Some("session_info") => {
                    found.name = Some(entry.name.as_deref().and_then(title_line))
                }
                Some("message") if found.first_user.is_none() => {
                    if let Some(text) = entry.message.and_then(|m| m.user_text()) {
                        found.first_user = title_line(&text);
                    }
                }
                _ => {}
            }
            true
        });
        found
    }
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
    fn the_title_of_a_grown_session_comes_from_its_appended_lines_and_its_title_before() {
        let user = r#"{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hello there"}]}}"#;
        let later_user =
            r#"{"type":"message","id":"d","message":{"role":"user","content":"later"}}"#;
        let info = r#"{"type":"session_info","id":"b","name":"Named"}"#;
        let cleared = r#"{"type":"session_info","id":"c"}"#;
        let after = |before: Option<&str>, appended: &str| {
            super::title_after(before, &mut appended.as_bytes())
        };
        // Whatever the title before, the lines appended agree with the whole file's title.
        for (first, appended) in [
            (user, info),
            (info, later_user),
            (user, later_user),
            (info, cleared),
            ("{}", later_user),
            (user, ""),
        ] {
            let whole = title(&format!("{first}\n{appended}\n"));
            match after(title(first).as_deref(), &format!("{appended}\n")) {
                Some(title) => assert_eq!(title, whole, "{first} + {appended}"),
                // Cleared: only the whole file can tell.
                None => assert_eq!(appended, cleared),
            }
        }
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
