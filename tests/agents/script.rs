//! What the mock model says: scripted, deterministic turns that make the agents really run
//! commands. A prompt names its scenario (`ctxfold-scenario:<name>`); the reply to a request is
//! the scenario's step numbered by how many tool outputs follow that prompt in the request's
//! input, so the script needs no state of its own and survives a resume or a compaction.
//!
//! A request without tools is a compaction (Codex's and Pi's summarizers send none): it gets a
//! summary. Steps are written once and spoken in each agent's dialect, told apart by the tools
//! the request offers: Codex's `exec_command` (file writes and edits go through its `apply_patch`
//! command), Pi's `bash`, `write` and `edit`. Claude Code speaks the Messages API instead
//! ([`claude_reply`]): its `Bash`, `Write` and `Edit` (absolute paths), and its compaction request
//! still offers the tools, so it is told by its instructions.

use serde_json::{Value, json};

/// Input tokens reported on an ordinary reply: far below every compaction threshold.
const QUIET_TOKENS: u64 = 1_000;
/// Input tokens reported on a step that asks for compaction: over Codex's
/// `model_auto_compact_token_limit` and over Pi's `contextWindow - reserveTokens` (see the
/// agents' configs), under Pi's context window so Pi does not take it for an overflow.
pub const COMPACT_TOKENS: u64 = 38_000;
/// The same for Claude Code, whose smallest auto-compact window (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`)
/// is 100 000 tokens: it compacts before the next turn past 100 000 - 20 000 - 13 000.
pub const CLAUDE_COMPACT_TOKENS: u64 = 70_000;
/// What Claude Code's compaction request asks, in the last user message.
pub const CLAUDE_COMPACT_PROMPT: &str =
    "Your task is to create a detailed summary of the conversation so far";

pub const MARKER: &str = "ctxfold-scenario:";

/// The compaction summary the mock writes.
pub const SUMMARY: &str = "Checkpoint summary (ctxfold mock): app.py was written, broke with a ValueError and was fixed; big.log was read.";

/// The file the `work` scenario writes, breaks and fixes.
pub const APP_PY: &str = "import sys\n\n\ndef checksum(entries):\n    total = 0\n    for entry in entries:\n        total += int(entry, 16)\n    if total % 7 != 0:\n        raise ValueError(f\"ledger checksum mismatch: {total:#x} is not a multiple of 7\")\n    return total\n\n\nprint(checksum(sys.argv[1:] or [\"5eed\", \"f00d\"]))\n";
pub const EDIT_OLD: &str = "    if total % 7 != 0:\n";
pub const EDIT_NEW: &str = "    if total % 2 != 0:\n";

/// The failing command and the error line it prints: what seeds and recall must find.
pub const FAILING_COMMAND: &str = "cat config/ctxfold-missing.toml";
pub const FAILING_ERROR: &str = "cat: config/ctxfold-missing.toml: No such file or directory";
/// The last line of the traceback `python3 app.py` prints before the edit.
pub const TRACEBACK_ERROR: &str =
    "ValueError: ledger checksum mismatch: 0x14efa is not a multiple of 7";
/// What the fixed script prints.
pub const FIXED_OUTPUT: &str = "85754";

/// The large file the harness leaves in the working directory for `cat big.log`.
pub fn big_log() -> String {
    let mut out = String::new();
    for i in 0..3_000u32 {
        let id = i.wrapping_mul(2_654_435_761);
        out.push_str(&format!(
            "2026-11-29T10:{:02}:{:02}Z worker-{} job={id:08x} state=ok bytes={} path=/srv/data/shard-{:03}/part-{i:05}.bin\n",
            (i / 60) % 60,
            i % 60,
            i % 7,
            (i * 7919) % 100_000,
            i % 128
        ));
    }
    out
}

pub enum Step {
    Shell(&'static str),
    Write {
        path: &'static str,
        content: &'static str,
    },
    Edit {
        path: &'static str,
        old: &'static str,
        new: &'static str,
    },
    /// The final answer; `compact` reports enough tokens to make the agent compact.
    Say {
        text: &'static str,
        compact: bool,
    },
}

/// The scenarios by name.
pub fn scenario(name: &str) -> Option<Vec<Step>> {
    use Step::*;
    Some(match name {
        "work" => vec![
            Write {
                path: "app.py",
                content: APP_PY,
            },
            Shell("cat big.log"),
            Shell(FAILING_COMMAND),
            Shell("python3 app.py"),
            Edit {
                path: "app.py",
                old: EDIT_OLD,
                new: EDIT_NEW,
            },
            Shell("python3 app.py"),
            Say {
                text: "Fixed: app.py checks for an even total and prints 85754.",
                compact: true,
            },
        ],
        "followup" => vec![
            Shell("wc -l big.log"),
            Say {
                text: "big.log has 3000 lines.",
                compact: false,
            },
        ],
        "small" => vec![
            Shell("ls"),
            Say {
                text: "The directory holds app.py and big.log.",
                compact: false,
            },
        ],
        "resume" => vec![
            Shell("tail -n 2 big.log"),
            Say {
                text: "Resumed from the restored session.",
                compact: false,
            },
        ],
        _ => return None,
    })
}

/// The prompt that runs a scenario.
pub fn prompt(name: &str) -> String {
    format!("{MARKER}{name} Please do the {name} task.")
}

/// What to answer: the output items and the input tokens to report.
pub struct Reply {
    pub items: Vec<Value>,
    pub input_tokens: u64,
}

/// The steps still to take in a request's conversation: the scenario named by the newest prompt
/// that names one, from the step after the `results` tool results that follow it. `Err` says why
/// there is none.
fn next_step(
    messages: &[Value],
    is_prompt: impl Fn(&Value) -> bool,
    results: impl Fn(&Value) -> usize,
) -> Result<Step, String> {
    let start = messages
        .iter()
        .rposition(|m| is_prompt(m) && text_of(m).contains(MARKER))
        .ok_or("ctxfold mock: no scenario in the prompt")?;
    let prompt = text_of(&messages[start]);
    let name = prompt
        .split(MARKER)
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .next()
        .unwrap_or("");
    let steps = scenario(name).ok_or(format!("ctxfold mock: unknown scenario {name:?}"))?;
    let done: usize = messages[start..].iter().map(results).sum();
    steps
        .into_iter()
        .nth(done)
        .ok_or_else(|| "ctxfold mock: the scenario is over".to_string())
}

pub fn reply(request: &Value, n: u64) -> Reply {
    let tools: Vec<&str> = request["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    if tools.is_empty() {
        return say(
            n,
            "Checkpoint summary (ctxfold mock): app.py was written, broke with a ValueError and was fixed; big.log was read.",
            QUIET_TOKENS,
        );
    }
    let codex = tools.contains(&"exec_command");
    if !codex && !tools.contains(&"bash") {
        return say(
            n,
            &format!("ctxfold mock: no shell tool among {tools:?}"),
            QUIET_TOKENS,
        );
    }
    let input = request["input"].as_array().cloned().unwrap_or_default();
    let step = next_step(
        &input,
        |item| item["role"] == "user",
        |item| usize::from(item["type"] == "function_call_output"),
    );
    match step {
        Err(why) => say(n, &why, QUIET_TOKENS),
        Ok(Step::Say { text, compact }) => say(
            n,
            text,
            if compact {
                COMPACT_TOKENS
            } else {
                QUIET_TOKENS
            },
        ),
        Ok(step) => {
            let (name, arguments) = if codex {
                codex_call(&step)
            } else {
                pi_call(&step)
            };
            let item = json!({
                "type": "function_call",
                "id": format!("fc_{n}"),
                "call_id": format!("call_{n}"),
                "name": name,
                "arguments": arguments.to_string(),
                "status": "completed",
            });
            Reply {
                items: vec![item],
                input_tokens: QUIET_TOKENS,
            }
        }
    }
}

fn say(n: u64, text: &str, input_tokens: u64) -> Reply {
    let item = json!({
        "type": "message",
        "id": format!("msg_{n}"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    });
    Reply {
        items: vec![item],
        input_tokens,
    }
}

/// The text of a message item, whatever its content shape (a string or input_text parts).
fn text_of(item: &Value) -> String {
    match &item["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn codex_call(step: &Step) -> (&'static str, Value) {
    let cmd = match step {
        Step::Shell(cmd) => cmd.to_string(),
        Step::Write { path, content } => {
            let lines: String = content.lines().map(|l| format!("+{l}\n")).collect();
            format!(
                "apply_patch <<'PATCH'\n*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\nPATCH"
            )
        }
        Step::Edit { path, old, new } => {
            let old: String = old.lines().map(|l| format!("-{l}\n")).collect();
            let new: String = new.lines().map(|l| format!("+{l}\n")).collect();
            format!(
                "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: {path}\n@@\n{old}{new}*** End Patch\nPATCH"
            )
        }
        Step::Say { .. } => unreachable!("a Say is a message"),
    };
    ("exec_command", json!({"cmd": cmd, "yield_time_ms": 10000}))
}

fn pi_call(step: &Step) -> (&'static str, Value) {
    match step {
        Step::Shell(cmd) => ("bash", json!({"command": cmd})),
        Step::Write { path, content } => ("write", json!({"path": path, "content": content})),
        Step::Edit { path, old, new } => (
            "edit",
            json!({"path": path, "edits": [{"oldText": old, "newText": new}]}),
        ),
        Step::Say { .. } => unreachable!("a Say is a message"),
    }
}

/// What Claude Code gets: the content blocks of one assistant message, why it stopped, and the
/// input tokens to report.
pub struct ClaudeReply {
    pub blocks: Vec<Value>,
    pub stop_reason: &'static str,
    pub input_tokens: u64,
}

/// The reply to a Messages API request from Claude Code. Its messages may include `system` ones
/// mid-conversation; a prompt is the last text block of a user message.
pub fn claude_reply(request: &Value, n: u64) -> ClaudeReply {
    let say = |text: &str, input_tokens| ClaudeReply {
        blocks: vec![json!({"type": "text", "text": text})],
        stop_reason: "end_turn",
        input_tokens,
    };
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages.iter().rev().find(|m| m["role"] == "user");
    if last_user.is_some_and(|m| text_of(m).contains(CLAUDE_COMPACT_PROMPT)) {
        return say(&format!("<summary>\n{SUMMARY}\n</summary>"), QUIET_TOKENS);
    }
    let tool_results = |m: &Value| match &m["content"] {
        Value::Array(parts) => parts.iter().filter(|p| p["type"] == "tool_result").count(),
        _ => 0,
    };
    match next_step(&messages, |m| m["role"] == "user", tool_results) {
        Err(why) => say(&why, QUIET_TOKENS),
        Ok(Step::Say { text, compact }) => say(
            text,
            if compact {
                CLAUDE_COMPACT_TOKENS
            } else {
                QUIET_TOKENS
            },
        ),
        Ok(step) => {
            let cwd = working_directory(request).unwrap_or_default();
            let (name, input) = claude_call(&step, &cwd);
            ClaudeReply {
                blocks: vec![
                    json!({"type": "tool_use", "id": format!("toolu_{n:04}"), "name": name, "input": input}),
                ],
                stop_reason: "tool_use",
                input_tokens: QUIET_TOKENS,
            }
        }
    }
}

/// The working directory Claude Code states in its environment context (`Primary working
/// directory: …`): its Write and Edit take absolute paths only.
fn working_directory(request: &Value) -> Option<String> {
    const LABEL: &str = "Primary working directory: ";
    let text = request.to_string();
    let at = text.find(LABEL)? + LABEL.len();
    let rest = &text[at..];
    // The JSON text: a path ends at an escaped newline or the string's end.
    let end = rest.find(['\\', '"']).unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

fn claude_call(step: &Step, cwd: &str) -> (&'static str, Value) {
    match step {
        Step::Shell(cmd) => (
            "Bash",
            json!({"command": cmd, "description": format!("Run {}", cmd.split(' ').next().unwrap())}),
        ),
        Step::Write { path, content } => (
            "Write",
            json!({"file_path": format!("{cwd}/{path}"), "content": content}),
        ),
        Step::Edit { path, old, new } => (
            "Edit",
            json!({"file_path": format!("{cwd}/{path}"), "old_string": old, "new_string": new, "replace_all": false}),
        ),
        Step::Say { .. } => unreachable!("a Say is a message"),
    }
}
