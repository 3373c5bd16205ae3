//! The block: one typed slice of one message, named by a durable blockId, and the facts a span
//! records about it (`code`, `log.bytes`, `log.lines`, `sha256`), computed exactly as the
//! context-fold extension computes them so that a span means the same bytes to both.

use crate::digest::Digest;

/// What a block is; decides whether it gets a span and which lexicons read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A person's message: counts a turn, gives a `userMessages` entry, never a span.
    User,
    /// A user-role message that is harness context (Codex `<environment_context>`, AGENTS.md):
    /// a block, but no turn and no `userMessages` entry.
    Context,
    Thinking,
    Text,
    /// A tool call: read for commands and files, never a span.
    ToolCall,
    ToolResult,
    /// A compaction or branch summary.
    Summary,
}

impl BlockKind {
    /// Its name in JSON (`ctxfold show --json`).
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::User => "user",
            BlockKind::Context => "context",
            BlockKind::Thinking => "thinking",
            BlockKind::Text => "text",
            BlockKind::ToolCall => "tool_call",
            BlockKind::ToolResult => "tool_result",
            BlockKind::Summary => "summary",
        }
    }
}

/// A tool call's name and arguments, for the command and file lexicons.
#[derive(Debug, Clone)]
pub struct Call {
    pub name: String,
    pub args: serde_json::Value,
}

#[derive(Debug, Clone)]
pub struct Block {
    pub id: String,
    pub kind: BlockKind,
    pub text: String,
    /// The tool name of a result.
    pub tool: Option<String>,
    pub full_output_path: Option<String>,
    /// A result that holds an image gets no span.
    pub has_image: bool,
    pub call: Option<Call>,
    /// How the tool call ended, on a result (or on a call that carries its own result), when the
    /// ledger says. Not part of the block model: for people reading the session.
    pub outcome: Option<Outcome>,
    /// What a person reads of the block when it is not its text (a tool output the agent wrapped
    /// in JSON). Not part of the block model either.
    pub shown: Option<String>,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The command's exit code, when the ledger records one.
    pub exit: Option<i64>,
    /// Whether the call failed (a non-zero exit, a tool error, an abort).
    pub failed: bool,
}

impl Outcome {
    /// A command that exited with `code`.
    pub fn exited(code: i64) -> Self {
        Self {
            exit: Some(code),
            failed: code != 0,
        }
    }
}

impl Block {
    pub fn new(id: String, kind: BlockKind, text: String) -> Self {
        Self {
            id,
            kind,
            text,
            tool: None,
            full_output_path: None,
            has_image: false,
            call: None,
            outcome: None,
            shown: None,
        }
    }

    /// What a person reads of the block.
    pub fn shown_text(&self) -> &str {
        self.shown.as_deref().unwrap_or(&self.text)
    }

    /// Whether a compact record gives this block a span (fold events narrow this further).
    pub fn spannable(&self) -> bool {
        // Positional ids (`m:…`, a message with no anchor) are not durable: never folded.
        if self.id.starts_with("m:") {
            return false;
        }
        match self.kind {
            BlockKind::User | BlockKind::Context | BlockKind::ToolCall => false,
            BlockKind::ToolResult => !self.has_image,
            BlockKind::Thinking | BlockKind::Text | BlockKind::Summary => true,
        }
    }

    /// The span's `tool`: the tool name of a result, else `thinking` or `text`.
    pub fn tool_label(&self) -> &str {
        match self.kind {
            BlockKind::ToolResult => self.tool.as_deref().unwrap_or("tool"),
            BlockKind::Thinking => "thinking",
            _ => "text",
        }
    }
}

/// `log.bytes`: the UTF-8 length of the text.
pub fn log_bytes(text: &str) -> u64 {
    text.len() as u64
}

/// `log.lines`: 0 for an empty text, else the number of `\n` plus one.
pub fn log_lines(text: &str) -> u64 {
    if text.is_empty() {
        0
    } else {
        memchr::memchr_iter(b'\n', text.as_bytes()).count() as u64 + 1
    }
}

/// `sha256`: the hex sha256 of the UTF-8 text.
pub fn sha256_hex(text: &str) -> String {
    Digest::of(text.as_bytes()).to_hex()
}

/// `code`: FNV-1a 32-bit over the UTF-16 code units of the blockId, in base 36, left-padded with
/// `0` to 6 characters, the last 6 kept.
pub fn code(block_id: &str) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for unit in block_id.encode_utf16() {
        hash ^= u32::from(unit);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(digits[(hash % 36) as usize]);
        hash /= 36;
        if hash == 0 {
            break;
        }
    }
    while out.len() < 6 {
        out.push(b'0');
    }
    out.truncate(6);
    out.reverse();
    String::from_utf8(out).expect("base-36 digits are ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_values_computed_independently() {
        // Expected values from a python3 FNV-1a over UTF-16LE code units, base 36, padded to 6.
        for (id, expected) in [
            ("r:call_abc123", "5xehmi"),
            ("u:1763681581544", "p0cm39"),
            ("a:msg_011CdzhhRan57jCnpcgps9rd:p0", "dny02h"),
            ("r:call_x|fc_y", "t3nxa1"),
            ("a:t1786622042861:p2:edit:e5f6a7b8", "kduf93"),
            ("s:é😀", "bfk7by"),
        ] {
            assert_eq!(code(id), expected, "{id}");
        }
    }

    #[test]
    fn log_lines_count_newlines_plus_one_except_empty() {
        assert_eq!(log_lines(""), 0);
        assert_eq!(log_lines("a"), 1);
        assert_eq!(log_lines("a\n"), 2);
        assert_eq!(log_lines("a\nb"), 2);
        assert_eq!(log_bytes("é"), 2);
    }
}
