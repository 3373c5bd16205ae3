//! A rollout as a ledger: the line skeleton (compactions, token counts) and the context-fold
//! extension's block model mapped onto response items. The rules are spelled out in
//! `ctxfold-extract-seeds(1)`; a reader elsewhere recomputes every span from them.

use std::collections::HashMap;

use super::lines::{Head, Line, Part, Payload};
use crate::agents::Meta;
use crate::agents::content::{Content, Part as _, text_of};
use crate::agents::json::{self, Scratch};
use crate::blocks::{Block, BlockKind, Call, Entry, EntryKind, Outcome};

pub(super) fn skeleton(line: &[u8], index: usize) -> Option<(Entry, Option<Meta>)> {
    let mut scratch = Scratch::default();
    let head = json::parse::<Head<'_>>(line, &mut scratch)?.value;
    let payload = head.payload.unwrap_or_default();
    let mut meta = None;
    let kind = match head.kind.as_deref().unwrap_or_default() {
        "session_meta" => {
            meta = Some(payload.meta());
            EntryKind::Other
        }
        "response_item" => EntryKind::Message { tokens: None },
        "compacted" => EntryKind::Compaction {
            first_kept: None,
            tokens: None,
        },
        "event_msg" if payload.kind.as_deref() == Some("token_count") => {
            let info = payload.info.unwrap_or_default();
            let tokens = info.last_token_usage.and_then(|u| u.total_tokens);
            match tokens {
                Some(tokens) => EntryKind::Usage {
                    tokens,
                    window: info.model_context_window,
                },
                None => EntryKind::Other,
            }
        }
        _ => EntryKind::Other,
    };
    let entry = Entry {
        id: None,
        parent: index.checked_sub(1),
        timestamp: head.timestamp.unwrap_or_default().into_owned(),
        kind,
    };
    Some((entry, meta))
}

/// The response items that carry a tool's output.
const CALL_OUTPUT_TYPES: &[&str] = &["function_call_output", "custom_tool_call_output"];

/// The parts of a tool's output that hold its text.
const OUTPUT_TEXT_TYPES: &[&str] = &["input_text", "output_text", "text"];

/// Block state across one pass: anchors used so far (to number repeats) and call names by id.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Blocks {
    anchors: HashMap<String, u32>,
    call_names: HashMap<String, String>,
}

impl crate::agents::Blocks for Blocks {
    fn blocks(&mut self, line: &[u8]) -> Option<Vec<Block>> {
        let mut scratch = Scratch::default();
        let line = json::parse::<Line<'_>>(line, &mut scratch)?.value;
        Some(self.of(&line))
    }

    fn save(&self) -> serde_json::Value {
        crate::agents::saved(self)
    }
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

    fn of(&mut self, line: &Line<'_>) -> Vec<Block> {
        let timestamp = line.timestamp.as_deref().unwrap_or_default();
        let Some(payload) = &line.payload else {
            return Vec::new();
        };
        match line.kind.as_deref() {
            Some("compacted") => {
                let message = payload.message.as_deref().unwrap_or_default();
                if message.is_empty() {
                    return Vec::new();
                }
                vec![Block::new(
                    format!("s:{timestamp}"),
                    BlockKind::Summary,
                    message.into(),
                )]
            }
            Some("response_item") => self.item_blocks(line, payload, timestamp),
            _ => Vec::new(),
        }
    }

    fn item_blocks(&mut self, line: &Line<'_>, item: &Payload<'_>, timestamp: &str) -> Vec<Block> {
        let anchor = || {
            item.id
                .as_deref()
                .map(str::to_string)
                .unwrap_or_else(|| format!("t{timestamp}"))
        };
        let kind = item.kind.as_deref().unwrap_or_default();
        match kind {
            "message" => match item.role.as_deref() {
                Some("user") => {
                    let Some(message) = line.user_message() else {
                        return Vec::new();
                    };
                    let id = self.unique(format!("u:{timestamp}"));
                    let kind = if message.person {
                        BlockKind::User
                    } else {
                        BlockKind::Context
                    };
                    vec![Block::new(id, kind, message.text)]
                }
                Some("assistant") => {
                    let anchor = self.unique(anchor());
                    numbered(item.content.as_ref().map(Content::parts), &[])
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
                numbered(
                    item.summary.as_deref(),
                    item.content
                        .as_ref()
                        .map(Content::parts)
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
                let call_id = item
                    .call_id
                    .as_deref()
                    .or(item.id.as_deref())
                    .unwrap_or_default()
                    .to_string();
                let name = match kind {
                    "local_shell_call" => "local_shell".to_string(),
                    _ => item.name.as_deref().unwrap_or("tool").to_string(),
                };
                let args = match kind {
                    "function_call" => item
                        .arguments
                        .as_deref()
                        .and_then(|a| serde_json::from_str(a).ok())
                        .unwrap_or_else(|| serde_json::json!({})),
                    "custom_tool_call" => {
                        serde_json::json!({ "input": item.input.as_deref().unwrap_or_default() })
                    }
                    _ => item.action.clone().unwrap_or_else(|| serde_json::json!({})),
                };
                self.call_names.insert(call_id.clone(), name.clone());
                let mut block =
                    Block::new(format!("m:c{call_id}"), BlockKind::ToolCall, String::new());
                block.call = Some(Call { name, args });
                vec![block]
            }
            _ if CALL_OUTPUT_TYPES.contains(&kind) => {
                let Some(call_id) = item.call_id.as_deref() else {
                    return Vec::new();
                };
                let (text, image) = match &item.output {
                    Some(Content::Nested(inner)) => text_of(inner.as_deref(), OUTPUT_TEXT_TYPES),
                    other => text_of(other.as_ref(), OUTPUT_TEXT_TYPES),
                };
                let mut block = Block::new(format!("r:{call_id}"), BlockKind::ToolResult, text);
                block.tool = Some(
                    self.call_names
                        .get(call_id)
                        .cloned()
                        .unwrap_or_else(|| "tool".into()),
                );
                block.has_image = image;
                (block.outcome, block.shown) = outcome_of(&block.text);
                vec![block]
            }
            _ => Vec::new(),
        }
    }
}

/// How many lines of a tool output's head may say how the command ended.
const HEADER_LINES: usize = 8;

/// How a call ended, from its output as Codex writes it: a JSON string
/// `{"output":…,"metadata":{"exit_code":N}}` (whose `output` is what a person reads), or a text
/// whose head says `Process exited with code N` (unified exec) or `Exit code: N` (shell_command).
fn outcome_of(text: &str) -> (Option<Outcome>, Option<String>) {
    #[derive(serde::Deserialize)]
    struct Wrapped {
        output: Option<String>,
        metadata: Option<Metadata>,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        exit_code: Option<i64>,
    }
    if text.starts_with('{')
        && let Ok(wrapped) = serde_json::from_str::<Wrapped>(text)
    {
        let exit = wrapped.metadata.and_then(|m| m.exit_code);
        return (exit.map(Outcome::exited), wrapped.output);
    }
    let exit = text.lines().take(HEADER_LINES).find_map(|line| {
        let code = line
            .strip_prefix("Process exited with code ")
            .or_else(|| line.strip_prefix("Exit code: "))?;
        code.trim().parse().ok()
    });
    (exit.map(Outcome::exited), None)
}

/// `(j, type, text)` for each part of `first` then of `then`, `j` counting every part.
fn numbered<'p>(
    first: Option<&'p [Part<'p>]>,
    then: &'p [Part<'p>],
) -> impl Iterator<Item = (usize, &'p str, &'p str)> {
    first
        .unwrap_or_default()
        .iter()
        .chain(then)
        .enumerate()
        .map(|(j, part)| (j, part.kind(), part.text().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> Vec<Block> {
        crate::agents::blocks_of_lines::<Blocks>(lines)
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
        assert_eq!(blocks[4].outcome, None);
        assert_eq!(blocks[1].text, "plan");
    }

    #[test]
    fn outcomes_come_from_each_shape_of_output() {
        let (outcome, shown) =
            outcome_of(r#"{"output":"a\nb","metadata":{"exit_code":101,"duration_seconds":0.1}}"#);
        assert_eq!(outcome, Some(Outcome::exited(101)));
        assert_eq!(shown.as_deref(), Some("a\nb"));
        let unified =
            "Chunk ID: x\nWall time: 1 seconds\nProcess exited with code 2\nOutput:\nboom";
        assert_eq!(outcome_of(unified), (Some(Outcome::exited(2)), None));
        assert_eq!(
            outcome_of("Exit code: 0\nWall time: 0 seconds\nOutput:\nok").0,
            Some(Outcome::exited(0))
        );
        assert_eq!(
            outcome_of("Process running with session ID 4\nOutput:\n").0,
            None
        );
        assert!(Outcome::exited(1).failed && !Outcome::exited(0).failed);
    }
}
