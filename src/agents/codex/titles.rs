//! Codex titles: the `threads` table of `state_5.sqlite` where it exists, else
//! `session_index.jsonl` (`thread_name`, the last line for an id wins, an empty name clears it),
//! else the first line of the rollout's first message from a person.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::OnceLock;

use memchr::memmem;
use serde::Deserialize;

use super::lines::Line;
use crate::agents::Described;
use crate::agents::json::{self, Scratch, lenient};
use crate::agents::lines::{MAX_META_LINE, for_each_line, title_line};

/// The titles Codex itself keeps, read the first time a session needs one.
pub(super) struct Titles<'h> {
    home: &'h Path,
    by_id: OnceLock<HashMap<String, String>>,
}

impl<'h> Titles<'h> {
    pub(super) fn new(home: &'h Path) -> Self {
        Self {
            home,
            by_id: OnceLock::new(),
        }
    }

    /// What the home holds. A missing, locked or unexpected database or index is not an error:
    /// titles are a convenience, and the rollout's first message is the fallback.
    fn load(home: &Path) -> HashMap<String, String> {
        let mut by_id = HashMap::new();
        read_session_index(&home.join("session_index.jsonl"), &mut by_id);
        // The state database is what Codex shows; it wins over the older index.
        by_id.extend(read_threads(&home.join("state_5.sqlite")));
        by_id
    }
}

impl crate::agents::Describe for Titles<'_> {
    fn describe(&self, id: &str, _path: &Path, _first: &[u8], rest: &mut dyn BufRead) -> Described {
        let by_id = self.by_id.get_or_init(|| Self::load(self.home));
        Described {
            title: by_id.get(id).cloned().or_else(|| first_user_message(rest)),
            ..Described::default()
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct IndexLine<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    thread_name: Option<Cow<'a, str>>,
}

fn read_session_index(path: &Path, by_id: &mut HashMap<String, String>) {
    let Ok(file) = File::open(path) else { return };
    let _ = for_each_line(&mut BufReader::new(file), MAX_META_LINE, |line| {
        let mut scratch = Scratch::default();
        if let Some(entry) = json::parse::<IndexLine<'_>>(line, &mut scratch)
            && let Some(id) = entry.value.id
        {
            match entry.value.thread_name.as_deref().map(str::trim) {
                Some(name) if !name.is_empty() => {
                    by_id.insert(id.into_owned(), name.to_string());
                }
                _ => {
                    by_id.remove(id.as_ref());
                }
            }
        }
        true
    });
}

fn read_threads(path: &Path) -> Vec<(String, String)> {
    use rusqlite::{Connection, OpenFlags};
    if !path.is_file() {
        return Vec::new();
    }
    let read = || -> rusqlite::Result<Vec<(String, String)>> {
        let db = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        db.busy_timeout(std::time::Duration::from_millis(200))?;
        let mut query =
            db.prepare("SELECT id, title FROM threads WHERE title IS NOT NULL AND title != ''")?;
        let rows = query.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?;
        rows.collect()
    };
    read().unwrap_or_default()
}

/// The title from the first message from a person, reading on from where `input` is.
fn first_user_message(input: &mut dyn BufRead) -> Option<String> {
    let mut found = None;
    let _ = for_each_line(input, MAX_META_LINE, |line| {
        let maybe = memmem::find(line, b"\"user_message\"").is_some()
            || memmem::find(line, b"\"item_completed\"").is_some()
            || (memmem::find(line, b"\"response_item\"").is_some()
                && memmem::find(line, b"\"user\"").is_some());
        if maybe {
            let mut scratch = Scratch::default();
            found = json::parse::<Line<'_>>(line, &mut scratch)
                .and_then(|l| l.value.user_message())
                .filter(|m| m.person)
                .and_then(|m| title_line(&m.text));
        }
        found.is_none()
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::Describe as _;

    fn title(text: &str) -> Option<String> {
        first_user_message(&mut text.as_bytes())
    }

    #[test]
    fn the_first_user_message_is_found_in_every_shape() {
        let preamble = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n</environment_context>"}]}}"#;
        let agents = r##"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /x"}]}}"##;
        let classic = r#"{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"fix it\nplease","images":[]}}"#;
        let newest = r#"{"timestamp":"t","ordinal":7,"type":"event_msg","payload":{"type":"item_completed","thread_id":"x","turn_id":"1","item":{"type":"UserMessage","id":"i","content":[{"type":"text","text":"  new shape"}]}}}"#;
        let item = r#"{"timestamp":"t","ordinal":3,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"from the item"}]}}"#;
        assert_eq!(
            title(&format!("{preamble}\n{agents}\n{classic}\n")),
            Some("fix it".into())
        );
        assert_eq!(
            title(&format!("{preamble}\n{newest}\n")),
            Some("new shape".into())
        );
        assert_eq!(
            title(&format!("{agents}\n{item}\n{classic}\n")),
            Some("from the item".into())
        );
        assert_eq!(title(&format!("{preamble}\n")), None);
    }

    #[test]
    fn titles_and_blocks_share_one_rule_for_a_persons_message() {
        // A tag that is not harness context is a person's words, for the title as for the blocks.
        let tagged = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<b>bold</b> request"}]}}"#;
        assert_eq!(title(tagged), Some("<b>bold</b> request".into()));
        let shell = r#"{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<user_shell_command>ls</user_shell_command>"}]}}"#;
        assert_eq!(title(shell), None);
    }

    #[test]
    fn session_index_last_line_wins_and_empty_clears() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("session_index.jsonl"),
            concat!(
                r#"{"id":"a","thread_name":"first","updated_at":"t"}"#,
                "\n",
                r#"{"id":"b","thread_name":"bee","updated_at":"t"}"#,
                "\n",
                r#"{"id":"a","thread_name":"second","updated_at":"t"}"#,
                "\n",
                r#"{"id":"b","thread_name":"","updated_at":"t"}"#,
                "\n",
                "not json\n",
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("state_5.sqlite"), b"not a database").unwrap();
        let titles = Titles::new(dir.path());
        let title = |id| {
            titles
                .describe(id, Path::new("x"), b"", &mut &b""[..])
                .title
        };
        assert_eq!(title("a"), Some("second".into()));
        assert_eq!(title("b"), None);
    }
}
