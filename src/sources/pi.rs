//! Pi sessions: `<agent dir>/sessions/--<cwd>--/<time>_<id>.jsonl`, where the agent dir is
//! `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. The header line names the session and its cwd; the
//! title is the last `session_info` name, else the first user message.
//!
//! Beside the sessions, the context-fold extension keeps
//! `--<cwd>--/context-fold/<session-id>/seed-index.jsonl`: not a session, but an index that fold
//! carries into the store.

use memchr::memmem;
use serde_json::Value;

use super::lines::{MAX_META_LINE, for_each_line, title_line};

/// The header (`{"type":"session","id":…,"cwd":…}`): the session id and working directory.
pub fn meta(first: &Value) -> Option<(Option<String>, Option<String>)> {
    if first.get("type")?.as_str()? != "session" {
        return None;
    }
    let text = |key| first.get(key).and_then(Value::as_str).map(str::to_string);
    Some((text("id"), text("cwd")))
}

/// The id in a Pi file name (`<time>_<id>.jsonl`): what follows the first `_`.
pub fn id_from_name(stem: &str) -> Option<&str> {
    stem.split_once('_')
        .map(|(_, id)| id)
        .filter(|id| !id.is_empty())
}

/// The title from the lines after the header: the last `session_info` name (an entry without one
/// clears it), else the first user message.
pub fn title(input: &mut dyn std::io::BufRead) -> Option<String> {
    let mut name: Option<String> = None;
    let mut first_user: Option<String> = None;
    let _ = for_each_line(input, MAX_META_LINE, |line| {
        let info = memmem::find(line, b"\"session_info\"").is_some();
        let user = first_user.is_none() && memmem::find(line, b"\"user\"").is_some();
        if !(info || user) {
            return true;
        }
        let Ok(entry) = serde_json::from_slice::<Value>(line) else {
            return true;
        };
        match entry.get("type").and_then(Value::as_str) {
            Some("session_info") => {
                name = entry
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(title_line);
            }
            Some("message") if first_user.is_none() => {
                let message = entry.get("message");
                if message.and_then(|m| m.get("role")).and_then(Value::as_str) == Some("user") {
                    first_user = message
                        .and_then(|m| m.get("content"))
                        .and_then(content_text)
                        .and_then(|t| title_line(&t));
                }
            }
            _ => {}
        }
        true
    });
    name.or(first_user)
}

/// A user message's text: a plain string, or its text blocks joined.
fn content_text(content: &Value) -> Option<String> {
    if let Some(text) = content.as_str() {
        return Some(text.to_string());
    }
    super::joined_texts(content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_info_wins_over_the_first_user_message() {
        let user = r#"{"type":"message","id":"a","message":{"role":"user","content":[{"type":"text","text":"hello there"}]}}"#;
        let info = r#"{"type":"session_info","id":"b","name":"Named"}"#;
        let cleared = r#"{"type":"session_info","id":"c"}"#;
        assert_eq!(
            title(&mut format!("{user}\n{info}\n").as_bytes()),
            Some("Named".into())
        );
        assert_eq!(
            title(&mut format!("{info}\n{user}\n{cleared}\n").as_bytes()),
            Some("hello there".into())
        );
        let plain = r#"{"type":"message","message":{"role":"user","content":"plain text"}}"#;
        assert_eq!(title(&mut plain.as_bytes()), Some("plain text".into()));
    }

    #[test]
    fn ids_come_from_pi_names() {
        assert_eq!(
            id_from_name("2025-12-09T00-52-54-397Z_d97339c6"),
            Some("d97339c6")
        );
        assert_eq!(id_from_name("session"), None);
    }
}
