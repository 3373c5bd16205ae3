//! A Claude Code transcript as a ledger: the skeleton (the uuid tree, compaction boundaries,
//! usage) and the block model mapped onto its rows. The rules are spelled out in
//! `ctxfold-extract-seeds(1)`; a reader elsewhere recomputes every span from them.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use super::lines::{Head, Line, Part, TREE_ROWS};
use crate::agents::Meta;
use crate::agents::content::text_of;
use crate::agents::json::{self, Parsed, Scratch};
use crate::blocks::{Block, BlockKind, Call, Entry, EntryKind};

/// One object of a line (see `lines::objects`) as a skeleton entry.
///
/// A tree row's parent is its `parentUuid`, or for a compaction boundary (whose `parentUuid` is
/// null) its `logicalParentUuid`, so that the active branch runs through compactions as it does in
/// Pi. A side record has no place in the tree: a `last-prompt` hangs from the leaf it names (the
/// row Claude Code resumes from), any other from the object before it, so that the branch from the
/// file's last object is the conversation Claude Code would resume.
pub(super) fn skeleton(
    object: &[u8],
    index: usize,
    ids: &HashMap<String, usize>,
) -> Option<(Entry, Option<Meta>)> {
    let mut scratch = Scratch::default();
    let head = json::parse::<Head<'_>>(object, &mut scratch)?.value;
    let kind_name = head.kind.as_deref().unwrap_or_default();
    let by_id = |id: &Option<Cow<'_, str>>| id.as_deref().and_then(|id| ids.get(id).copied());
    let before = index.checked_sub(1);
    let (id, parent) = if TREE_ROWS.contains(&kind_name) && head.uuid.is_some() {
        let parent = match &head.parent_uuid {
            Some(_) => by_id(&head.parent_uuid),
            None => by_id(&head.logical_parent_uuid),
        };
        (head.uuid.as_deref().map(str::to_string), parent)
    } else if kind_name == "last-prompt" {
        (None, by_id(&head.leaf_uuid).or(before))
    } else {
        (None, before)
    };
    let kind = match kind_name {
        "assistant" => EntryKind::Message {
            tokens: head
                .message
                .as_ref()
                .and_then(|m| m.usage.as_ref())
                .and_then(|u| u.context_tokens()),
        },
        "user" => EntryKind::Message { tokens: None },
        "system" if head.subtype.as_deref() == Some("compact_boundary") => {
            let metadata = head.compact_metadata.as_ref();
            let head_uuid = metadata
                .and_then(|m| m.preserved_segment.as_ref())
                .map(|s| s.head_uuid.clone());
            EntryKind::Compaction {
                first_kept: head_uuid.and_then(|h| by_id(&h)),
                tokens: metadata.and_then(|m| m.pre_tokens),
            }
        }
        _ => EntryKind::Other,
    };
    let meta = head.is_claude().then(|| head.meta());
    let entry = Entry {
        id,
        parent,
        timestamp: head.timestamp.map(Cow::into_owned).unwrap_or_default(),
        kind,
    };
    Some((entry, meta))
}

/// Block state across one pass: the tool name of each tool_use id seen so far.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Blocks {
    call_names: HashMap<String, String>,
}

impl crate::agents::Blocks for Blocks {
    fn blocks(&mut self, object: &[u8]) -> Option<Vec<Block>> {
        let mut scratch = Scratch::default();
        let parsed = json::parse::<Line<'_>>(object, &mut scratch)?;
        Some(self.of(&parsed))
    }

    fn save(&self) -> serde_json::Value {
        crate::agents::saved(self)
    }
}

impl Blocks {
    fn of<'a>(&mut self, parsed: &Parsed<'a, Line<'a>>) -> Vec<Block> {
        let line = &parsed.value;
        let Some(uuid) = line.uuid.as_deref() else {
            return Vec::new();
        };
        match line.kind.as_deref() {
            Some("user") => self.user_blocks(line, uuid),
            Some("assistant") => self.assistant_blocks(parsed, uuid),
            _ => Vec::new(),
        }
    }

    fn user_blocks(&self, line: &Line<'_>, uuid: &str) -> Vec<Block> {
        if let Some(prompt) = line.prompt() {
            let id = format!("u:{uuid}");
            if line.is_compact_summary == Some(true) {
                if prompt.text.is_empty() {
                    return Vec::new();
                }
                return vec![Block::new(
                    format!("s:{uuid}"),
                    BlockKind::Summary,
                    prompt.text,
                )];
            }
            // A person's `!` command: a command that ran, as Pi's bash executions.
            if let Some(command) = bash_input(&prompt.text) {
                let mut block = Block::new(id, BlockKind::ToolCall, command.clone());
                block.call = Some(Call {
                    name: "bash".into(),
                    args: serde_json::json!({ "command": command }),
                });
                return vec![block];
            }
            let kind = if prompt.person {
                BlockKind::User
            } else {
                BlockKind::Context
            };
            return vec![Block::new(id, kind, prompt.text)];
        }
        // Tool results: one block each.
        let parts = match line.message.as_ref().and_then(|m| m.content.as_ref()) {
            Some(content) => content.parts(),
            None => return Vec::new(),
        };
        let persisted = line
            .tool_use_result
            .as_ref()
            .and_then(|r| r.persisted_output_path.as_deref());
        parts
            .iter()
            .filter(|p| p.kind.as_deref() == Some("tool_result"))
            .filter_map(|part| {
                let call_id = part.tool_use_id.as_deref()?;
                let (text, image) = text_of(part.content.as_ref(), &["text"]);
                let mut block = Block::new(format!("r:{call_id}"), BlockKind::ToolResult, text);
                block.tool = Some(
                    self.call_names
                        .get(call_id)
                        .cloned()
                        .unwrap_or_else(|| "tool".into()),
                );
                block.has_image = image;
                block.full_output_path = persisted.map(str::to_string);
                Some(block)
            })
            .collect()
    }

    fn assistant_blocks<'a>(&mut self, parsed: &Parsed<'a, Line<'a>>, uuid: &str) -> Vec<Block> {
        let parts = match parsed
            .value
            .message
            .as_ref()
            .and_then(|m| m.content.as_ref())
        {
            Some(content) => content.parts(),
            None => return Vec::new(),
        };
        let mut out = Vec::new();
        for (j, part) in parts.iter().enumerate() {
            let id = format!("a:{uuid}:p{j}");
            let text =
                |field: &Option<Cow<'_, str>>| field.as_deref().unwrap_or_default().to_string();
            match part.kind.as_deref() {
                Some("thinking") => {
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
                Some("tool_use") => out.push(self.call(id, part, |raw| parsed.as_written(raw))),
                _ => {}
            }
        }
        out
    }

    /// A tool_use: `<name> <input as written>`, its name remembered for its result.
    fn call<'a>(
        &mut self,
        id: String,
        part: &Part<'a>,
        spelled: impl Fn(&'a RawValue) -> &'a str,
    ) -> Block {
        let name = part.name.as_deref().unwrap_or("tool").to_string();
        if let Some(call_id) = part.id.as_deref() {
            self.call_names.insert(call_id.to_string(), name.clone());
        }
        let (args, spelled) = match part.input {
            Some(raw) => (
                json::value(raw.get()).unwrap_or_else(|| serde_json::json!({})),
                spelled(raw).to_string(),
            ),
            None => (serde_json::json!({}), "{}".to_string()),
        };
        let mut block = Block::new(id, BlockKind::ToolCall, format!("{name} {spelled}"));
        block.call = Some(Call { name, args });
        block
    }
}

/// The command of a person's `!` command row (`<bash-input>cmd</bash-input>`).
fn bash_input(text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix("<bash-input>")?;
    let (command, _) = rest.split_once("</bash-input>")?;
    Some(command.trim().to_string()).filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> Vec<Block> {
        crate::agents::blocks_of_lines::<Blocks>(lines)
    }

    #[test]
    fn rows_map_onto_the_block_model() {
        let blocks = run(&[
            r#"{"parentUuid":null,"type":"user","message":{"role":"user","content":"fix the build\nplease"},"uuid":"u1","timestamp":"T1","sessionId":"s"}"#,
            r#"{"parentUuid":"u1","type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"thinking","thinking":"plan","signature":"x"}]},"uuid":"a1","sessionId":"s"}"#,
            r#"{"parentUuid":"a1","type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"thinking","thinking":"","signature":"x"},{"type":"redacted_thinking","data":"zz"}]},"uuid":"a2","sessionId":"s"}"#,
            r#"{"parentUuid":"a2","type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cat x","description":"Run cat","n":2.50}}]},"uuid":"a3","sessionId":"s"}"#,
            r#"{"parentUuid":"a3","type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Exit code 1\ncat: x: No such file or directory","is_error":true,"tool_use_id":"toolu_1"}]},"uuid":"r1","toolUseResult":"Error: Exit code 1","sessionId":"s"}"#,
            r#"{"parentUuid":"r1","type":"user","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"a"},{"type":"image","source":{}},{"type":"text","text":"b"}],"tool_use_id":"toolu_9"}]},"uuid":"r2","toolUseResult":{"persistedOutputPath":"/h/p/s/tool-results/x.txt"},"sessionId":"s"}"#,
            r#"{"parentUuid":"r2","type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"text","text":"done"}]},"uuid":"a4","sessionId":"s"}"#,
            r#"{"parentUuid":null,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"b1","sessionId":"s"}"#,
            r#"{"parentUuid":"b1","type":"user","message":{"role":"user","content":"This session is being continued"},"isCompactSummary":true,"uuid":"c1","sessionId":"s"}"#,
            r#"{"parentUuid":"c1","type":"user","message":{"role":"user","content":"<local-command-caveat>Caveat</local-command-caveat>"},"isMeta":true,"uuid":"m1","sessionId":"s"}"#,
            r#"{"parentUuid":"m1","type":"user","message":{"role":"user","content":"<command-name>/compact</command-name>"},"uuid":"m2","sessionId":"s"}"#,
            r#"{"parentUuid":"m2","type":"user","message":{"role":"user","content":"<bash-input>git status</bash-input>"},"uuid":"m3","sessionId":"s"}"#,
            r#"{"parentUuid":"m3","type":"attachment","attachment":{"type":"date"},"uuid":"t1","sessionId":"s"}"#,
            r#"{"type":"last-prompt","lastPrompt":"fix the build please","leafUuid":"t1","sessionId":"s"}"#,
            r#"{"type":"summary","summary":"Build fix","leafUuid":"t1"}"#,
        ]);
        let ids: Vec<_> = blocks.iter().map(|b| (b.id.as_str(), b.kind)).collect();
        assert_eq!(
            ids,
            [
                ("u:u1", BlockKind::User),
                ("a:a1:p0", BlockKind::Thinking),
                ("a:a3:p0", BlockKind::ToolCall),
                ("r:toolu_1", BlockKind::ToolResult),
                ("r:toolu_9", BlockKind::ToolResult),
                ("a:a4:p0", BlockKind::Text),
                ("s:c1", BlockKind::Summary),
                ("u:m1", BlockKind::Context),
                ("u:m2", BlockKind::Context),
                ("u:m3", BlockKind::ToolCall),
            ]
        );
        assert_eq!(
            blocks[2].text,
            r#"Bash {"command":"cat x","description":"Run cat","n":2.50}"#
        );
        assert_eq!(blocks[3].tool.as_deref(), Some("Bash"));
        assert_eq!(
            blocks[3].text,
            "Exit code 1\ncat: x: No such file or directory"
        );
        let image = &blocks[4];
        assert_eq!((image.text.as_str(), image.has_image), ("a\nb", true));
        assert_eq!(image.tool.as_deref(), Some("tool"));
        assert_eq!(
            image.full_output_path.as_deref(),
            Some("/h/p/s/tool-results/x.txt")
        );
        assert_eq!(
            blocks[9].call.as_ref().unwrap().args["command"],
            "git status"
        );
    }

    #[test]
    fn the_skeleton_follows_the_tree_through_compactions_and_records() {
        let lines = [
            r#"{"type":"queue-operation","operation":"enqueue","timestamp":"T0","sessionId":"s"}"#,
            r#"{"parentUuid":null,"type":"user","message":{"content":"hi"},"uuid":"u1","timestamp":"T1","cwd":"/w","sessionId":"s"}"#,
            r#"{"parentUuid":"u1","type":"assistant","message":{"usage":{"input_tokens":10,"cache_creation_input_tokens":5,"cache_read_input_tokens":100,"output_tokens":7}},"uuid":"a1","timestamp":"T2","sessionId":"s"}"#,
            r#"{"type":"last-prompt","lastPrompt":"hi","leafUuid":"a1","sessionId":"s"}"#,
            r#"{"parentUuid":null,"logicalParentUuid":"a1","type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":900,"preservedSegment":{"headUuid":"a1"}},"uuid":"b1","timestamp":"T3","sessionId":"s"}"#,
            r#"{"type":"cost-state","sessionId":"s"}"#,
        ];
        let mut ids = HashMap::new();
        let mut entries = Vec::new();
        let mut metas = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let (entry, meta) = skeleton(line.as_bytes(), i, &ids).unwrap();
            if let Some(id) = &entry.id {
                ids.insert(id.clone(), i);
            }
            entries.push(entry);
            metas.push(meta.unwrap());
        }
        let parents: Vec<_> = entries.iter().map(|e| e.parent).collect();
        assert_eq!(parents, [None, None, Some(1), Some(2), Some(2), Some(4)]);
        assert!(matches!(
            entries[2].kind,
            EntryKind::Message { tokens: Some(115) }
        ));
        assert!(matches!(
            entries[4].kind,
            EntryKind::Compaction {
                first_kept: Some(2),
                tokens: Some(900)
            }
        ));
        assert_eq!(metas[0].id.as_deref(), Some("s"));
        assert_eq!(metas[1].cwd.as_deref(), Some("/w"));
        let subagent = r#"{"parentUuid":null,"isSidechain":true,"agentId":"a32","type":"user","message":{"content":"task"},"uuid":"x","sessionId":"s"}"#;
        let (_, meta) = skeleton(subagent.as_bytes(), 0, &HashMap::new()).unwrap();
        assert_eq!(meta.unwrap().id.as_deref(), Some("agent-a32"));
    }
}
