//! Codex rollouts: where Codex keeps them and what names them.
//!
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` are active; `archived_sessions/rollout-*.jsonl`
//! and `rollout-*.jsonl.zst` are archived. A title comes from the `threads` table of
//! `state_5.sqlite` where it exists, else from `session_index.jsonl` (`thread_name`, the last line
//! for an id wins, an empty name clears it), else from the first user message of the rollout.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use memchr::memmem;
use serde_json::Value;

use super::joined_texts;

use super::lines::{MAX_META_LINE, for_each_line, title_line};

/// The titles Codex itself keeps, by thread id.
#[derive(Debug, Default)]
pub struct Titles {
    by_id: HashMap<String, String>,
}

impl Titles {
    /// Read what `codex_home` holds. A missing, locked or unexpected database or index is not an
    /// error: titles are a convenience, and the rollout's first user message is the fallback.
    pub fn load(codex_home: &Path) -> Self {
        let mut by_id = HashMap::new();
        read_session_index(&codex_home.join("session_index.jsonl"), &mut by_id);
        // The state database is what Codex shows; it wins over the older index.
        for (id, title) in read_threads(&codex_home.join("state_5.sqlite")) {
            by_id.insert(id, title);
        }
        Self { by_id }
    }

    pub fn get(&self, id: &str) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }
}

fn read_session_index(path: &Path, by_id: &mut HashMap<String, String>) {
    let Ok(file) = File::open(path) else { return };
    let _ = for_each_line(&mut BufReader::new(file), MAX_META_LINE, |line| {
        if let Ok(entry) = serde_json::from_slice::<Value>(line)
            && let Some(id) = entry.get("id").and_then(Value::as_str)
        {
            match entry
                .get("thread_name")
                .and_then(Value::as_str)
                .map(str::trim)
            {
                Some(name) if !name.is_empty() => {
                    by_id.insert(id.to_string(), name.to_string());
                }
                _ => {
                    by_id.remove(id);
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

/// True for a file name Codex gives a rollout, plain or compressed.
pub fn is_rollout_name(name: &str) -> bool {
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

/// The thread id in a rollout's file name (`rollout-<local time>-<uuid>.jsonl`): its last 36 characters.
pub fn id_from_name(stem: &str) -> Option<&str> {
    let rest = stem.strip_prefix("rollout-")?;
    let at = rest.len().checked_sub(36)?;
    rest.is_char_boundary(at)
        .then(|| &rest[at..])
        .filter(|id| id.matches('-').count() == 4)
}

/// `session_meta` (always the first line): the thread id and working directory.
pub fn meta(first: &Value) -> Option<(Option<String>, Option<String>)> {
    if first.get("type")?.as_str()? != "session_meta" {
        return None;
    }
    let payload = first.get("payload")?;
    let text = |key| payload.get(key).and_then(Value::as_str).map(str::to_string);
    Some((text("id"), text("cwd")))
}

/// The title from the first user message, reading on from where `input` is.
pub fn first_user_message(input: &mut dyn std::io::BufRead) -> Option<String> {
    let mut found = None;
    let _ = for_each_line(input, MAX_META_LINE, |line| {
        let maybe = memmem::find(line, b"\"user_message\"").is_some()
            || memmem::find(line, b"\"item_completed\"").is_some()
            || (memmem::find(line, b"\"response_item\"").is_some()
                && memmem::find(line, b"\"user\"").is_some());
        if maybe {
            found = serde_json::from_slice::<Value>(line)
                .ok()
                .as_ref()
                .and_then(user_text)
                .and_then(|t| title_line(&t));
        }
        found.is_none()
    });
    found
}

/// The user's words in one rollout line, in any of the shapes Codex has written them: an
/// `event_msg` `user_message`, a newer `event_msg` `item_completed` holding a `UserMessage` item, or
/// a `response_item` message with role `user` that is not the AGENTS.md / environment preamble.
fn user_text(line: &Value) -> Option<String> {
    let payload = line.get("payload")?;
    let payload_type = payload.get("type").and_then(Value::as_str);
    match (line.get("type")?.as_str()?, payload_type?) {
        ("event_msg", "user_message") => payload.get("message")?.as_str().map(str::to_string),
        ("event_msg", "item_completed") => {
            let item = payload.get("item")?;
            let kind = item
                .get("type")?
                .as_str()?
                .replace('_', "")
                .to_ascii_lowercase();
            (kind == "usermessage").then(|| joined_texts(item.get("content")?))?
        }
        ("response_item", "message") if payload.get("role")?.as_str()? == "user" => {
            let text = joined_texts(payload.get("content")?)?;
            let start = text.trim_start();
            let preamble = start.starts_with('<') || start.starts_with("# AGENTS.md");
            (!preamble).then_some(text)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn ids_come_from_rollout_names() {
        assert_eq!(
            id_from_name("rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799"),
            Some("019e1625-789d-76c0-80ab-3724b5ddb799")
        );
        assert_eq!(id_from_name("rollout-short"), None);
        assert!(is_rollout_name("rollout-x.jsonl.zst") && !is_rollout_name("history.jsonl"));
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
        let titles = Titles::load(dir.path());
        assert_eq!(titles.get("a"), Some("second"));
        assert_eq!(titles.get("b"), None);
    }
}
