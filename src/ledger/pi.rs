//! Pi sessions (v1, v2, v3): the entry skeleton (tree, compactions, `context_edit`s) and the block
//! model of the context-fold extension, to the byte.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Block, BlockKind, Call, Entry, EntryKind, text_of, timestamp_text};

pub(super) fn skeleton(
    value: &Value,
    index: usize,
    ids: &HashMap<String, usize>,
    session_id: &mut Option<String>,
    cwd: &mut Option<String>,
) -> Entry {
    let str_field = |key: &str| value.get(key).and_then(Value::as_str);
    let kind_name = str_field("type").unwrap_or_default();
    let timestamp = timestamp_text(value.get("timestamp")).unwrap_or_default();
    if kind_name == "session" && index == 0 {
        *session_id = str_field("id").map(str::to_string);
        *cwd = str_field("cwd").map(str::to_string);
        return Entry {
            id: None,
            parent: None,
            timestamp,
            kind: EntryKind::Other,
        };
    }
    let id = str_field("id").map(str::to_string);
    // v2+ entries name their parent; v1 sessions are linear (the header is no parent).
    let parent = match value.get("parentId") {
        Some(parent) => parent.as_str().and_then(|p| ids.get(p).copied()),
        None => index.checked_sub(1).filter(|&p| p > 0),
    };
    let kind = match kind_name {
        "message" => {
            let usage = value.pointer("/message/usage");
            let tokens = usage
                .and_then(|u| u.get("totalTokens"))
                .and_then(Value::as_u64);
            EntryKind::Message { tokens }
        }
        "branch_summary" => EntryKind::Message { tokens: None },
        "compaction" => {
            let first_kept = match str_field("firstKeptEntryId") {
                Some(kept) => ids.get(kept).copied(),
                // v1: an index among the parsed entries, the header being 0.
                None => value
                    .get("firstKeptEntryIndex")
                    .and_then(Value::as_u64)
                    .map(|i| i as usize),
            };
            EntryKind::Compaction {
                first_kept,
                tokens: value.get("tokensBefore").and_then(Value::as_u64),
            }
        }
        "context_edit" => EntryKind::Edit {
            target: str_field("targetId").and_then(|t| ids.get(t).copied()),
            replacement: value
                .get("replacement")
                .and_then(|r| r.get("content"))
                .cloned(),
        },
        _ => EntryKind::Other,
    };
    Entry {
        id,
        parent,
        timestamp,
        kind,
    }
}

/// The blocks of one entry. `line` is the entry's raw text, read again to keep each tool call's
/// arguments exactly as written (key order and number spelling, as `JSON.stringify` gave them).
pub(super) fn blocks(value: &Value, line: &[u8]) -> Vec<Block> {
    match value.get("type").and_then(Value::as_str) {
        Some("message") => match value.get("message") {
            Some(message) => message_blocks(message, &raw_arguments(line)),
            None => Vec::new(),
        },
        Some("compaction" | "branch_summary") => {
            let summary = value
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match timestamp_text(value.get("timestamp")) {
                Some(ts) if !summary.is_empty() => {
                    vec![Block::new(
                        format!("s:{ts}"),
                        BlockKind::Summary,
                        summary.into(),
                    )]
                }
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// The blocks of the entry as a `context_edit` replaced its content, ids suffixed `:edit:<editId>`.
pub(super) fn edited_blocks(value: &Value, content: &Value, edit_id: &str) -> Vec<Block> {
    let Some(message) = value.get("message") else {
        return Vec::new();
    };
    let mut message = message.clone();
    let content = match content {
        Value::String(text) => serde_json::json!([{ "type": "text", "text": text }]),
        other => other.clone(),
    };
    message["content"] = content;
    let mut blocks = message_blocks(&message, &[]);
    for block in &mut blocks {
        block.id = format!("{}:edit:{edit_id}", block.id);
        block.full_output_path = None;
    }
    blocks
}

fn message_blocks(message: &Value, raw_args: &[Option<String>]) -> Vec<Block> {
    let field = |key: &str| message.get(key).and_then(Value::as_str);
    let ts = timestamp_text(message.get("timestamp"));
    match field("role").unwrap_or_default() {
        "user" => {
            let (text, _) = text_of(message.get("content"), &["text"]);
            let id = ts.map(|t| format!("u:{t}")).unwrap_or_else(|| "m:u".into());
            vec![Block::new(id, BlockKind::User, text)]
        }
        "assistant" => {
            let anchor = field("responseId")
                .map(str::to_string)
                .or_else(|| ts.map(|t| format!("t{t}")));
            let parts = message
                .get("content")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut out = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                let id = match &anchor {
                    Some(a) => format!("a:{a}:p{j}"),
                    None => format!("m:p{j}"),
                };
                let text_field = |key: &str| {
                    part.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                match part.get("type").and_then(Value::as_str) {
                    Some("thinking")
                        if part.get("redacted").and_then(Value::as_bool) != Some(true) =>
                    {
                        let text = text_field("thinking");
                        if !text.is_empty() {
                            out.push(Block::new(id, BlockKind::Thinking, text));
                        }
                    }
                    Some("text") => {
                        let text = text_field("text");
                        if !text.is_empty() {
                            out.push(Block::new(id, BlockKind::Text, text));
                        }
                    }
                    Some("toolCall") => {
                        let name = text_field("name");
                        let args = part
                            .get("arguments")
                            .cloned()
                            .unwrap_or_else(|| serde_json::json!({}));
                        let spelled = match raw_args.get(j) {
                            Some(Some(raw)) => raw.clone(),
                            _ => serde_json::to_string(&args).expect("a JSON value serializes"),
                        };
                        let mut block =
                            Block::new(id, BlockKind::ToolCall, format!("{name} {spelled}"));
                        block.call = Some(Call { name, args });
                        out.push(block);
                    }
                    _ => {}
                }
            }
            out
        }
        "toolResult" => {
            let (text, image) = text_of(message.get("content"), &["text"]);
            let id = field("toolCallId")
                .map(|c| format!("r:{c}"))
                .unwrap_or_else(|| "m:r".into());
            let mut block = Block::new(id, BlockKind::ToolResult, text);
            block.tool = Some(
                field("toolName")
                    .filter(|n| !n.is_empty())
                    .unwrap_or("tool")
                    .to_string(),
            );
            block.has_image = image;
            block.full_output_path = message
                .pointer("/details/fullOutputPath")
                .and_then(Value::as_str)
                .map(str::to_string);
            vec![block]
        }
        // A person's `!` command: no block of the extension's, but a command that ran.
        "bashExecution" => {
            let command = field("command").unwrap_or_default().to_string();
            let id = ts
                .map(|t| format!("m:x{t}"))
                .unwrap_or_else(|| "m:x".into());
            let mut block = Block::new(id, BlockKind::ToolCall, command.clone());
            block.call = Some(Call {
                name: "bash".into(),
                args: serde_json::json!({ "command": command }),
            });
            vec![block]
        }
        _ => match (field("summary"), ts) {
            (Some(summary), Some(ts)) if !summary.is_empty() => {
                vec![Block::new(
                    format!("s:{ts}"),
                    BlockKind::Summary,
                    summary.into(),
                )]
            }
            _ => Vec::new(),
        },
    }
}

#[derive(Deserialize)]
struct RawLine<'a> {
    #[serde(borrow)]
    message: Option<RawMessage<'a>>,
}

// Only assistant lines (whose content is an array) are read this way; any other shape fails to
// parse and falls back to the parsed value.
#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    content: Option<Vec<RawPart<'a>>>,
}

#[derive(Deserialize)]
struct RawPart<'a> {
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
}

/// Each content part's `arguments` as spelled in the line (None where a part has none).
fn raw_arguments(line: &[u8]) -> Vec<Option<String>> {
    if memchr::memmem::find(line, b"\"toolCall\"").is_none() {
        return Vec::new();
    }
    match serde_json::from_slice::<RawLine<'_>>(line) {
        Ok(RawLine {
            message: Some(RawMessage {
                content: Some(parts),
            }),
        }) => parts
            .into_iter()
            .map(|p| p.arguments.map(|a| a.get().to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_parts_are_numbered_over_every_part() {
        let line = br#"{"type":"message","id":"a1","parentId":null,"timestamp":"x","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"s"},{"type":"image","data":"AAAA"},{"type":"text","text":"hi"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"z":1,"command":"ls -la","a":2.50}}],"timestamp":17,"responseId":"resp_1"}}"#;
        let value: Value = serde_json::from_slice(line).unwrap();
        let blocks = blocks(&value, line);
        let ids: Vec<_> = blocks.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["a:resp_1:p2", "a:resp_1:p3"]);
        assert_eq!(
            blocks[1].text,
            r#"bash {"z":1,"command":"ls -la","a":2.50}"#
        );
    }

    #[test]
    fn results_join_text_parts_and_note_images() {
        let line = br#"{"type":"message","message":{"role":"toolResult","toolCallId":"call_x|fc_y","toolName":"read","content":[{"type":"text","text":"a"},{"type":"image","data":"QQ=="},{"type":"text","text":"b"}],"details":{"fullOutputPath":"/tmp/o.txt"},"timestamp":5}}"#;
        let value: Value = serde_json::from_slice(line).unwrap();
        let block = &blocks(&value, line)[0];
        assert_eq!(
            (block.id.as_str(), block.text.as_str(), block.has_image),
            ("r:call_x|fc_y", "a\nb", true)
        );
        assert!(!block.spannable());
        assert_eq!(block.full_output_path.as_deref(), Some("/tmp/o.txt"));
    }
}
