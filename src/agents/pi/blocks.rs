//! A Pi session (v1, v2, v3) as a ledger: the entry skeleton (tree, compactions, `context_edit`s)
//! and the block model of the context-fold extension, to the byte.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use super::lines::{Head, Line, Message, Part};
use crate::agents::Meta;
use crate::agents::content::{Content, text_of};
use crate::agents::json::{self, Scratch};
use crate::blocks::{Block, BlockKind, Call, Entry, EntryKind, Outcome};

pub(super) fn skeleton(
    line: &[u8],
    index: usize,
    ids: &HashMap<String, usize>,
) -> Option<(Entry, Option<Meta>)> {
    let mut scratch = Scratch::default();
    let head = json::parse::<Head<'_>>(line, &mut scratch)?.value;
    let kind_name = head.kind.as_deref().unwrap_or_default();
    let timestamp = head.timestamp.map(|t| t.0.into_owned()).unwrap_or_default();
    if kind_name == "session" && index == 0 {
        let meta = Meta {
            id: head.id.map(Cow::into_owned),
            cwd: head.cwd.map(Cow::into_owned),
        };
        let entry = Entry {
            id: None,
            parent: None,
            timestamp,
            kind: EntryKind::Other,
        };
        return Some((entry, Some(meta)));
    }
    let by_id = |id: Option<Cow<'_, str>>| id.and_then(|id| ids.get(id.as_ref()).copied());
    // v2+ entries name their parent; v1 sessions are linear (the header is no parent).
    let parent = match head.parent_id {
        Some(parent) => by_id(parent),
        None => index.checked_sub(1).filter(|&p| p > 0),
    };
    let kind = match kind_name {
        "message" => EntryKind::Message {
            tokens: head
                .message
                .and_then(|m| m.usage)
                .and_then(|u| u.total_tokens),
        },
        "branch_summary" => EntryKind::Message { tokens: None },
        "compaction" => EntryKind::Compaction {
            first_kept: match head.first_kept_entry_id {
                Some(kept) => by_id(Some(kept)),
                None => head.first_kept_entry_index.map(|i| i as usize),
            },
            tokens: head.tokens_before,
        },
        "context_edit" => EntryKind::Edit {
            target: by_id(head.target_id),
            replacement: head
                .replacement
                .and_then(|r| r.content)
                .map(RawValue::to_owned),
        },
        _ => EntryKind::Other,
    };
    let entry = Entry {
        id: head.id.map(Cow::into_owned),
        parent,
        timestamp,
        kind,
    };
    Some((entry, None))
}

/// Pi's blocks need no state across lines.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Blocks;

impl crate::agents::Blocks for Blocks {
    fn blocks(&mut self, line: &[u8]) -> Option<Vec<Block>> {
        let mut scratch = Scratch::default();
        let parsed = json::parse::<Line<'_>>(line, &mut scratch)?;
        let entry = &parsed.value;
        let blocks = match entry.kind.as_deref() {
            // Each tool call's arguments as the line spells them (key order and number
            // spelling, as `JSON.stringify` gave them).
            Some("message") => match &entry.message {
                Some(message) => message_blocks(message, |raw| parsed.as_written(raw)),
                None => Vec::new(),
            },
            Some("compaction" | "branch_summary") => {
                let summary = entry.summary.as_deref().unwrap_or_default();
                match &entry.timestamp {
                    Some(ts) if !summary.is_empty() => vec![Block::new(
                        format!("s:{}", ts.0),
                        BlockKind::Summary,
                        summary.into(),
                    )],
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        };
        Some(blocks)
    }

    fn save(&self) -> serde_json::Value {
        crate::agents::saved(self)
    }
}

/// The blocks of the entry at `line` as a `context_edit` replaced its content with `content`, ids
/// suffixed `:edit:<editId>`.
pub(super) fn edited(line: &[u8], content: &RawValue, edit_id: &str) -> Vec<Block> {
    let mut scratch = Scratch::default();
    let Some(Line {
        message: Some(message),
        ..
    }) = json::parse::<Line<'_>>(line, &mut scratch).map(|p| p.value)
    else {
        return Vec::new();
    };
    // A string becomes one text part.
    let content = match json::lenient_from::<Content<'_, Part<'_>>>(content.get()) {
        Some(Content::Text(text)) => Some(Content::Parts(vec![Part {
            kind: Some("text".into()),
            text: Some(text),
            ..Part::default()
        }])),
        other => other,
    };
    let message = Message { content, ..message };
    // The replacement's tool calls as the edit spells them.
    let mut blocks = message_blocks(&message, RawValue::get);
    for block in &mut blocks {
        block.id = format!("{}:edit:{edit_id}", block.id);
        block.full_output_path = None;
    }
    blocks
}

fn message_blocks<'a>(
    message: &Message<'a>,
    spelled: impl Fn(&'a RawValue) -> &'a str,
) -> Vec<Block> {
    let ts = message.timestamp.as_ref().map(|t| t.0.as_ref());
    match message.role.as_deref().unwrap_or_default() {
        "user" => {
            let text = message.user_text().unwrap_or_default();
            let id = ts.map(|t| format!("u:{t}")).unwrap_or_else(|| "m:u".into());
            vec![Block::new(id, BlockKind::User, text)]
        }
        "assistant" => {
            let anchor = message
                .response_id
                .as_deref()
                .map(str::to_string)
                .or_else(|| ts.map(|t| format!("t{t}")));
            let parts = message
                .content
                .as_ref()
                .map(Content::parts)
                .unwrap_or_default();
            let mut out = Vec::new();
            for (j, part) in parts.iter().enumerate() {
                let id = match &anchor {
                    Some(a) => format!("a:{a}:p{j}"),
                    None => format!("m:p{j}"),
                };
                let text =
                    |field: &Option<Cow<'_, str>>| field.as_deref().unwrap_or_default().to_string();
                match part.kind.as_deref() {
                    Some("thinking") if part.redacted != Some(true) => {
                        let text = text(&part.thinking);
                        if !text.is_empty() {
                            out.push(Block::new(id, BlockKind::Thinking, text));
                        }
                    }
                    Some("text") => {
                        let text = text(&part.text);
                        if !text.is_empty() {
                            out.push(Block::new(id, BlockKind::Text, text));
                        }
                    }
                    Some("toolCall") => {
                        let name = text(&part.name);
                        let (args, spelled) = match part.arguments {
                            Some(raw) => (
                                json::value(raw.get()).unwrap_or_else(|| serde_json::json!({})),
                                spelled(raw).to_string(),
                            ),
                            None => (serde_json::json!({}), "{}".to_string()),
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
            let (text, image) = text_of(message.content.as_ref(), &["text"]);
            let id = message
                .tool_call_id
                .as_deref()
                .map(|c| format!("r:{c}"))
                .unwrap_or_else(|| "m:r".into());
            let mut block = Block::new(id, BlockKind::ToolResult, text);
            block.tool = Some(
                message
                    .tool_name
                    .as_deref()
                    .filter(|n| !n.is_empty())
                    .unwrap_or("tool")
                    .to_string(),
            );
            block.has_image = image;
            block.outcome = result_outcome(message.is_error, &block.text);
            block.full_output_path = message
                .details
                .as_ref()
                .and_then(|d| d.full_output_path.as_deref())
                .map(str::to_string);
            vec![block]
        }
        // A person's `!` command: no block of the extension's, but a command that ran.
        "bashExecution" => {
            let command = message.command.as_deref().unwrap_or_default().to_string();
            let id = ts
                .map(|t| format!("m:x{t}"))
                .unwrap_or_else(|| "m:x".into());
            let mut block = Block::new(id, BlockKind::ToolCall, command.clone());
            block.call = Some(Call {
                name: "bash".into(),
                args: serde_json::json!({ "command": command }),
            });
            block.outcome = match (message.exit_code, message.cancelled) {
                (_, Some(true)) => Some(Outcome {
                    exit: None,
                    failed: true,
                }),
                (Some(code), _) => Some(Outcome::exited(code as i64)),
                _ => None,
            };
            vec![block]
        }
        _ => match (message.summary.as_deref(), ts) {
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

/// How a tool result ended: `isError`, with the exit code Pi's bash tool appends to a failed
/// command's output (`Command exited with code N`).
fn result_outcome(is_error: Option<bool>, text: &str) -> Option<Outcome> {
    let failed = is_error?;
    let last = text.trim_end().rsplit('\n').next().unwrap_or_default();
    let exit = last
        .strip_prefix("Command exited with code ")
        .and_then(|code| code.trim().parse().ok());
    Some(Outcome { exit, failed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::Blocks as _;

    fn blocks_of(line: &[u8]) -> Vec<Block> {
        Blocks.blocks(line).unwrap()
    }

    #[test]
    fn assistant_parts_are_numbered_over_every_part() {
        let line = br#"{"type":"message","id":"a1","parentId":null,"timestamp":"x","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"s"},{"type":"image","data":"AAAA"},{"type":"text","text":"hi"},{"type":"toolCall","id":"c1","name":"bash","arguments":{"z":1,"command":"ls -la","a":2.50}}],"timestamp":17,"responseId":"resp_1"}}"#;
        let blocks = blocks_of(line);
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
        let block = &blocks_of(line)[0];
        assert_eq!(
            (block.id.as_str(), block.text.as_str(), block.has_image),
            ("r:call_x|fc_y", "a\nb", true)
        );
        assert!(!block.spannable());
        assert_eq!(block.outcome, None);
        assert_eq!(
            result_outcome(Some(true), "boom\n\n\nCommand exited with code 2"),
            Some(Outcome {
                exit: Some(2),
                failed: true
            })
        );
        assert_eq!(
            result_outcome(Some(false), "fine"),
            Some(Outcome {
                exit: None,
                failed: false
            })
        );
        assert_eq!(block.full_output_path.as_deref(), Some("/tmp/o.txt"));
    }

    #[test]
    fn edits_replace_the_content_and_spell_tool_calls_as_the_edit_does() {
        let line = br#"{"type":"message","id":"m1","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"long"}],"details":{"fullOutputPath":"/tmp/o"},"timestamp":5}}"#;
        let text: Box<RawValue> = serde_json::from_str(r#""short""#).unwrap();
        let blocks = edited(line, &text, "e1");
        assert_eq!(
            (blocks[0].id.as_str(), blocks[0].text.as_str()),
            ("r:c1:edit:e1", "short")
        );
        assert_eq!(blocks[0].full_output_path, None);
        let call =
            br#"{"type":"message","message":{"role":"assistant","content":[],"timestamp":9}}"#;
        let parts: Box<RawValue> = serde_json::from_str(
            r#"[{"type":"toolCall","name":"bash","arguments":{"z":1,"a":2.50}}]"#,
        )
        .unwrap();
        assert_eq!(
            edited(call, &parts, "e2")[0].text,
            r#"bash {"z":1,"a":2.50}"#
        );
    }
}
