//! Codex rollouts: the line skeleton (compactions, token counts) and the extension's block model
//! mapped onto response items. The rules are spelled out in `ctxfold-extract-seeds(1)`; a reader
//! elsewhere recomputes every span from them.

use std::collections::HashMap;

use serde_json::Value;

use super::{Block, BlockKind, Call, Entry, EntryKind, text_of};

pub(super) fn skeleton(
    value: &Value,
    index: usize,
    session_id: &mut Option<String>,
    cwd: &mut Option<String>,
) -> Entry {
    let timestamp = value
        .get("timestamp")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let payload = value.get("payload");
    let payload_str = |key: &str| payload.and_then(|p| p.get(key)).and_then(Value::as_str);
    let kind = match value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "session_meta" => {
            if session_id.is_none() {
                *session_id = payload_str("id")
                    .or_else(|| payload_str("session_id"))
                    .map(str::to_string);
                *cwd = payload_str("cwd").map(str::to_string);
            }
            EntryKind::Other
        }
        "response_item" => EntryKind::Message { tokens: None },
        "compacted" => EntryKind::Compaction {
            first_kept: None,
            tokens: None,
        },
        "event_msg" if payload_str("type") == Some("token_count") => {
            let info = payload.and_then(|p| p.get("info"));
            let tokens = info
                .and_then(|i| i.pointer("/last_token_usage/total_tokens"))
                .and_then(Value::as_u64);
            let window = info
                .and_then(|i| i.get("model_context_window"))
                .and_then(Value::as_u64);
            match tokens {
                Some(tokens) => EntryKind::Usage { tokens, window },
                None => EntryKind::Other,
            }
        }
        _ => EntryKind::Other,
    };
    Entry {
        id: None,
        parent: index.checked_sub(1),
        timestamp,
        kind,
    }
}

/// User-role messages Codex writes as harness context rather than as a person's words.
const CONTEXT_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<turn_aborted>",
    "<user_shell_command>",
];

/// The response items that carry a tool's output.
const CALL_OUTPUT_TYPES: &[&str] = &["function_call_output", "custom_tool_call_output"];

/// Block state across one pass: anchors used so far (to number repeats) and call names by id.
#[derive(Default)]
pub(super) struct Blocks {
    anchors: HashMap<String, u32>,
    call_names: HashMap<String, String>,
}

impl Blocks {
    /// `base`, or `base~k` for its k-th use in the file (k ≥ 2): rollout items rarely carry ids and
    /// several share a timestamp.
    fn unique(&mut self, base: String) -> String {
        let uses = self.anchors.entry(base.clone()).or_insert(0);
        *uses += 1;
        if *uses == 1 {
            base
        } else {
            format!("{base}~{uses}")
        }
    }

    pub(super) fn blocks(&mut self, value: &Value) -> Vec<Block> {
        let timestamp = value
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(payload) = value.get("payload") else {
            return Vec::new();
        };
        let field = |key: &str| payload.get(key).and_then(Value::as_str);
        match value.get("type").and_then(Value::as_str) {
            Some("compacted") => {
                let message = field("message").unwrap_or_default();
                if message.is_empty() {
                    return Vec::new();
                }
                vec![Block::new(
                    format!("s:{timestamp}"),
                    BlockKind::Summary,
                    message.into(),
                )]
            }
            Some("response_item") => self.item_blocks(payload, timestamp),
            _ => Vec::new(),
        }
    }

    fn item_blocks(&mut self, item: &Value, timestamp: &str) -> Vec<Block> {
        let field = |key: &str| item.get(key).and_then(Value::as_str);
        let anchor = || {
            field("id")
                .map(str::to_string)
                .unwrap_or_else(|| format!("t{timestamp}"))
        };
        let kind = field("type").unwrap_or_default();
        match kind {
            "message" => match field("role") {
                Some("user") => {
                    let (text, _) = text_of(item.get("content"), &["input_text", "text"]);
                    let id = self.unique(format!("u:{timestamp}"));
                    let context = CONTEXT_PREFIXES
                        .iter()
                        .any(|p| text.trim_start().starts_with(p));
                    vec![Block::new(
                        id,
                        if context {
                            BlockKind::Context
                        } else {
                            BlockKind::User
                        },
                        text,
                    )]
                }
                Some("assistant") => {
                    let anchor = self.unique(anchor());
                    parts(item.get("content"), &[])
                        .filter(|(_, kind, text)| {
                            matches!(*kind, "output_text" | "text") && !text.is_empty()
                        })
                        .map(|(j, _, text)| {
                            Block::new(format!("a:{anchor}:p{j}"), BlockKind::Text, text.into())
                        })
                        .collect()
                }
                _ => Vec::new(),
            },
            "reasoning" => {
                // Summary parts, then readable reasoning parts; never `encrypted_content`.
                let anchor = self.unique(anchor());
                parts(
                    item.get("summary"),
                    item.get("content")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default(),
                )
                .filter(|(_, kind, text)| {
                    matches!(*kind, "summary_text" | "reasoning_text" | "text") && !text.is_empty()
                })
                .map(|(j, _, text)| {
                    Block::new(format!("a:{anchor}:p{j}"), BlockKind::Thinking, text.into())
                })
                .collect()
            }
            "function_call" | "custom_tool_call" | "local_shell_call" => {
                let call_id = field("call_id")
                    .or_else(|| field("id"))
                    .unwrap_or_default()
                    .to_string();
                let name = match kind {
                    "local_shell_call" => "local_shell".to_string(),
                    _ => field("name").unwrap_or("tool").to_string(),
                };
                let args = match kind {
                    // `arguments` is a JSON document inside a string.
                    "function_call" => field("arguments")
                        .and_then(|a| serde_json::from_str(a).ok())
                        .unwrap_or_else(|| serde_json::json!({})),
                    "custom_tool_call" => {
                        serde_json::json!({ "input": field("input").unwrap_or_default() })
                    }
                    _ => item
                        .get("action")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({})),
                };
                self.call_names.insert(call_id.clone(), name.clone());
                let mut block =
                    Block::new(format!("m:c{call_id}"), BlockKind::ToolCall, String::new());
                block.call = Some(Call { name, args });
                vec![block]
            }
            _ if CALL_OUTPUT_TYPES.contains(&kind) => {
                let Some(call_id) = field("call_id") else {
                    return Vec::new();
                };
                let (text, image) = match item.get("output") {
                    Some(Value::Object(o)) => {
                        text_of(o.get("content"), &["input_text", "output_text", "text"])
                    }
                    other => text_of(other, &["input_text", "output_text", "text"]),
                };
                let mut block = Block::new(format!("r:{call_id}"), BlockKind::ToolResult, text);
                block.tool = Some(
                    self.call_names
                        .get(call_id)
                        .cloned()
                        .unwrap_or_else(|| "tool".into()),
                );
                block.has_image = image;
                vec![block]
            }
            _ => Vec::new(),
        }
    }
}

/// `(j, type, text)` for each part of `first` then of `then`, `j` counting every part.
fn parts<'a>(
    first: Option<&'a Value>,
    then: &'a [Value],
) -> impl Iterator<Item = (usize, &'a str, &'a str)> {
    let first = first
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    first.iter().chain(then).enumerate().map(|(j, part)| {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
        (j, kind, text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> Vec<Block> {
        let mut state = Blocks::default();
        lines
            .iter()
            .flat_map(|l| state.blocks(&serde_json::from_str(l).unwrap()))
            .collect()
    }

    #[test]
    fn items_map_onto_the_block_model() {
        let blocks = run(&[
            r#"{"timestamp":"T1","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#,
            r#"{"timestamp":"T1","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"plan"}],"content":null,"encrypted_content":"gAAAAB"}}"#,
            r#"{"timestamp":"T1","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}}"#,
            r#"{"timestamp":"T2","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_1"}}"#,
            r#"{"timestamp":"T3","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"a\nb"}}"#,
            r#"{"timestamp":"T4","type":"compacted","payload":{"message":"summary","replacement_history":[]}}"#,
        ]);
        let ids: Vec<_> = blocks.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "u:T1",
                "a:tT1:p0",
                "a:tT1~2:p0",
                "m:ccall_1",
                "r:call_1",
                "s:T4"
            ]
        );
        assert_eq!(blocks[4].tool.as_deref(), Some("exec_command"));
        assert_eq!(blocks[1].text, "plan");
    }
}
