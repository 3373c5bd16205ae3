//! A Claude Code transcript line as typed values, read leniently (see `agents::json`): [`Head`]
//! holds what the ledger skeleton and the opening need, [`Line`] what blocks and titles need;
//! everything else (the API request records, attachments' rendered text, usage details, tool
//! results' structured copies) is skipped unread. Here too are the one rule for what a person's
//! prompt is, and the reading of a line that holds more than one object.
//!
//! Not for: what the blocks are (`blocks`), titles (`titles`) or where files live (the module
//! root).

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

use crate::agents::Meta;
use crate::agents::content::{self, Content, text_of};
use crate::agents::json::{Object, lenient, raw};

/// Every line type Claude Code 2.1.332's transcript loader knows (its routing table), and the
/// legacy `progress`: what makes a line with a `sessionId` Claude Code's.
const TYPES: &[&str] = &[
    "user",
    "assistant",
    "attachment",
    "system",
    "progress",
    "summary",
    "custom-title",
    "ended-by-model",
    "continued-in",
    "ai-title",
    "last-prompt",
    "tag",
    "relocated",
    "agent-name",
    "agent-color",
    "agent-setting",
    "pr-link",
    "frame-link",
    "artifact-comment-monitor",
    "artifact-autoreact-ledger",
    "bridge-session",
    "history-suppression",
    "file-history-snapshot",
    "file-history-delta",
    "attribution-snapshot",
    "mode",
    "permission-mode",
    "isolation-latch",
    "session-owner",
    "dev-mods",
    "memory-mode",
    "atis-latch",
    "tools-used",
    "data-flow-records",
    "data-flow-incomplete",
    "derived-from",
    "worktree-state",
    "cost-state",
    "queue-operation",
    "content-replacement",
    "api-request-shape",
    "api-request-blob",
    "api-request",
    "api-request-resumed",
    "fork-context-ref",
    "observer-ref",
    "resume-head-vouch",
];

/// The rows of the conversation tree (`uuid`, `parentUuid`); every other type is a side record.
pub const TREE_ROWS: &[&str] = &["user", "assistant", "attachment", "system", "progress"];

/// What the skeleton and the opening read of a line.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Head<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub subtype: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub parent_uuid: Option<Cow<'a, str>>,
    /// A compaction boundary's link to the last row before the cut (its `parentUuid` is null).
    #[serde(borrow, deserialize_with = "lenient")]
    pub logical_parent_uuid: Option<Cow<'a, str>>,
    /// A `last-prompt` record's resume point; a `summary` line's conversation.
    #[serde(borrow, deserialize_with = "lenient")]
    pub leaf_uuid: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub session_id: Option<Cow<'a, str>>,
    /// A subagent's rows (and records) name their agent; `sessionId` is then the parent's.
    #[serde(borrow, deserialize_with = "lenient")]
    pub agent_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub timestamp: Option<Cow<'a, str>>,
    /// A `file-history-snapshot`'s user message (it has no `sessionId`).
    #[serde(borrow, deserialize_with = "lenient")]
    pub message_id: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    pub message: Option<HeadMessage>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub compact_metadata: Option<CompactMetadata<'a>>,
}

impl Head<'_> {
    /// Whether the line is one Claude Code writes: a type it knows, and its session named (a
    /// `summary` line names a conversation's leaf instead, a `file-history-snapshot` a message).
    pub fn is_claude(&self) -> bool {
        let Some(kind) = self.kind.as_deref() else {
            return false;
        };
        TYPES.contains(&kind)
            && (self.session_id.is_some()
                || (kind == "summary" && self.leaf_uuid.is_some())
                || (kind == "file-history-snapshot" && self.message_id.is_some()))
    }

    /// The session the line belongs to (a subagent's: `agent-<agentId>`) and its cwd.
    pub fn meta(&self) -> Meta {
        let id = match (&self.agent_id, &self.session_id) {
            (Some(agent), _) if !agent.is_empty() => Some(format!("agent-{agent}")),
            (_, session) => session.as_deref().map(str::to_string),
        };
        Meta {
            id,
            cwd: self.cwd.as_deref().map(str::to_string),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct HeadMessage {
    #[serde(deserialize_with = "lenient")]
    pub usage: Option<Usage>,
}

impl<'de> Object<'de> for HeadMessage {}

/// An API response's usage: the context it filled is input plus cache writes plus cache reads, as
/// Claude Code counts it.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Usage {
    #[serde(deserialize_with = "lenient")]
    pub input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub cache_read_input_tokens: Option<u64>,
}

impl<'de> Object<'de> for Usage {}

impl Usage {
    pub fn context_tokens(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct CompactMetadata<'a> {
    #[serde(deserialize_with = "lenient")]
    pub pre_tokens: Option<u64>,
    /// 2.1.x keeps the last rows before the cut verbatim (they stay where they are, before the
    /// boundary): from `headUuid` on, nothing is compacted.
    #[serde(borrow, deserialize_with = "lenient")]
    pub preserved_segment: Option<PreservedSegment<'a>>,
}

impl<'de> Object<'de> for CompactMetadata<'de> {}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct PreservedSegment<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    pub head_uuid: Option<Cow<'a, str>>,
}

impl<'de> Object<'de> for PreservedSegment<'de> {}

/// What blocks and titles read of a line.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Line<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub uuid: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    pub is_meta: Option<bool>,
    #[serde(deserialize_with = "lenient")]
    pub is_compact_summary: Option<bool>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub message: Option<Message<'a>>,
    /// The structured result of a tool call (a string on errors: then it reads as absent).
    #[serde(borrow, deserialize_with = "lenient")]
    pub tool_use_result: Option<ToolUseResult<'a>>,
    /// `summary` lines, and the conversation's last row they title.
    #[serde(borrow, deserialize_with = "lenient")]
    pub summary: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub leaf_uuid: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub custom_title: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub ai_title: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub agent_name: Option<Cow<'a, str>>,
    /// A `last-prompt` record's latest prompt (newlines made spaces, cut by Claude Code).
    #[serde(borrow, deserialize_with = "lenient")]
    pub last_prompt: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Message<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    pub role: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub content: Option<Content<'a, Part<'a>>>,
}

impl<'de> Object<'de> for Message<'de> {}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct ToolUseResult<'a> {
    /// Where Claude Code saved a Bash output too large for the transcript (`tool-results/`).
    #[serde(borrow, deserialize_with = "lenient")]
    pub persisted_output_path: Option<Cow<'a, str>>,
}

impl<'de> Object<'de> for ToolUseResult<'de> {}

/// A content block of a message: text, thinking, tool_use, tool_result, image, ….
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct Part<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub text: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub thinking: Option<Cow<'a, str>>,
    /// A tool_use's id.
    #[serde(borrow, deserialize_with = "lenient")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub name: Option<Cow<'a, str>>,
    /// A tool_use's input as written.
    #[serde(borrow, deserialize_with = "raw")]
    pub input: Option<&'a RawValue>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub tool_use_id: Option<Cow<'a, str>>,
    /// A tool_result's content: a string, or text and image blocks.
    #[serde(borrow, deserialize_with = "lenient")]
    pub content: Option<Content<'a, ResultPart<'a>>>,
}

impl<'de> Object<'de> for Part<'de> {}

impl content::Part for Part<'_> {
    fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }
    fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// A block of a tool_result's content: text or image.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct ResultPart<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub text: Option<Cow<'a, str>>,
}

impl<'de> Object<'de> for ResultPart<'de> {}

impl content::Part for ResultPart<'_> {
    fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }
    fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// A user row's text, and whether a person wrote it.
pub struct Prompt {
    pub text: String,
    pub person: bool,
}

impl Line<'_> {
    /// The text of a user row that is no tool result: its content string, or its text blocks
    /// joined by `\n`. A person wrote it unless Claude Code marks it (`isMeta`, a compaction
    /// summary), or it opens with a tag (`<command-name>`, `<local-command-stdout>`,
    /// `<system-reminder>`, `<task-notification>`, …) or is an interruption notice: Claude Code's
    /// own rule for the prompt its resume picker shows.
    pub fn prompt(&self) -> Option<Prompt> {
        if self.kind.as_deref() != Some("user") {
            return None;
        }
        let content = self.message.as_ref()?.content.as_ref()?;
        if content
            .parts()
            .iter()
            .any(|p| p.kind.as_deref() == Some("tool_result"))
        {
            return None;
        }
        let text = text_of(Some(content), &["text"]).0;
        let person = self.is_meta != Some(true)
            && self.is_compact_summary != Some(true)
            && !is_harness_text(&text);
        Some(Prompt { text, person })
    }
}

/// `^\s*<[a-z][\w-]*[\s>]` or `[Request interrupted by user…]`: Claude Code's test for text that
/// it, not a person, put in a user row.
pub fn is_harness_text(text: &str) -> bool {
    let text = text.trim_start();
    if let Some(tag) = text.strip_prefix('<') {
        let mut chars = tag.chars();
        if chars.next().is_some_and(|c| c.is_ascii_lowercase()) {
            let rest = chars.as_str();
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            return rest[end..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c.is_whitespace());
        }
    }
    text.strip_prefix("[Request interrupted by user")
        .is_some_and(|rest| rest.contains(']'))
}

/// The JSON objects on one line: the line itself when it holds one. Claude Code versions that
/// appended to a file whose last line had no `\n` left two objects on one line (2.1.x seals such a
/// tail first, and its own readers re-read a line from its last object): each complete object is
/// read on its own, and after a torn one, reading picks up at the next row or record that starts
/// at the top level (`{"type":` or `{"parentUuid":` not inside another value).
pub fn objects(line: &[u8]) -> Vec<&[u8]> {
    if serde_json::from_slice::<IgnoredAny>(line).is_ok() || !line.contains(&b'{') {
        return vec![line];
    }
    let mut found = Vec::new();
    let mut at = 0;
    while at < line.len() {
        let rest = &line[at..];
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<IgnoredAny>();
        loop {
            let before = stream.byte_offset();
            match stream.next() {
                None => return found,
                Some(Ok(_)) => found.push(rest[before..stream.byte_offset()].trim_ascii_start()),
                Some(Err(_)) => break,
            }
        }
        // A torn object: on from the next one, past the torn one's own opening brace.
        let from = (stream.byte_offset() + 1).min(rest.len());
        match next_top_level_object(&rest[from..]) {
            Some(next) => at += from + next,
            None => break,
        }
    }
    found
}

/// Where the next top-level Claude Code object starts in `text`.
fn next_top_level_object(text: &[u8]) -> Option<usize> {
    let finder = |needle: &'static [u8]| memchr::memmem::find_iter(text, needle);
    finder(b"{\"type\":")
        .chain(finder(b"{\"parentUuid\":"))
        .filter(|&at| at == 0 || !b":,[".contains(&text[at - 1]))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<&str> {
        objects(line.as_bytes())
            .into_iter()
            .map(|o| std::str::from_utf8(o).unwrap())
            .collect()
    }

    #[test]
    fn a_line_reads_as_the_objects_written_on_it() {
        let a = r#"{"type":"mode","sessionId":"s"}"#;
        let b = r#"{"parentUuid":"p","type":"user","message":{"content":"x"},"uuid":"u","sessionId":"s"}"#;
        assert_eq!(texts(a), [a]);
        assert_eq!(texts(&format!("{a}{b}")), [a, b]);
        assert_eq!(texts(&format!("{a} {b}")), [a, b]);
        // Torn, then whole: the torn one is dropped, even when it holds a nested opening.
        let torn = r#"{"parentUuid":"q","type":"user","message":{"content":[{"type":"text","te"#;
        assert_eq!(texts(&format!("{torn}{b}")), [b]);
        assert_eq!(texts(&format!("{a}{torn}{b}")), [a, b]);
        // Whole, then torn at the end of the file.
        assert_eq!(texts(&format!("{a}{torn}")), [a]);
        assert!(texts(torn).is_empty());
        // Not JSON at all: the line, for the caller to pass over.
        assert_eq!(texts("not json"), ["not json"]);
    }

    #[test]
    fn harness_text_is_claude_codes_own_rule() {
        for text in [
            "<command-name>/compact</command-name>",
            "  <local-command-stdout>ok</local-command-stdout>",
            "<system-reminder>\nx",
            "<task-notification>",
            "[Request interrupted by user for tool use]",
        ] {
            assert!(is_harness_text(text), "{text}");
        }
        for text in [
            "fix <b>this</b>",
            "<B>bold</B>",
            "<3 thanks",
            "< spaced",
            "[Request interrupted by user",
            "",
        ] {
            assert!(!is_harness_text(text), "{text}");
        }
    }
}
