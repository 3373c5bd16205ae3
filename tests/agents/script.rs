//! What the mock model says: scripted, deterministic turns that make the agents really run
//! commands. A prompt names its scenario (`ctxfold-scenario:<name>`); the reply to a request is
//! the scenario's step numbered by how many tool outputs follow that prompt in the request's
//! input, so the script needs no state of its own and survives a resume or a compaction.
//!
//! A request without tools is a compaction (Codex's and Pi's summarizers send none): it gets a
//! summary. Steps are written once and spoken in each agent's dialect, told apart by the tools
//! the request offers: Codex's `exec_command` (file writes and edits go through its `apply_patch`
//! command), Pi's `bash`, `write` and `edit`.

use serde_json::{Value, json};

/// Input tokens reported on an ordinary reply: far below every compaction threshold.
const QUIET_TOKENS: u64 = 1_000;
/// Input tokens reported on a step that asks for compaction: over Codex's
/// `model_auto_compact_token_limit` and over Pi's `contextWindow - reserveTokens` (see the
/// agents' configs), under Pi's context window so Pi does not take it for an overflow.
pub const COMPACT_TOKENS: u64 = 38_000;

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
    let Some(start) = input
        .iter()
        .rposition(|item| item["role"] == "user" && text_of(item).contains(MARKER))
    else {
        return say(n, "ctxfold mock: no scenario in the prompt", QUIET_TOKENS);
    };
    let prompt = text_of(&input[start]);
    let name = prompt
        .split(MARKER)
        .nth(1)
        .unwrap_or("")
        .split_whitespace()
        .next()
        .unwrap_or("");
    let Some(steps) = scenario(name) else {
        return say(
            n,
            &format!("ctxfold mock: unknown scenario {name:?}"),
            QUIET_TOKENS,
        );
    };
    let done = input[start..]
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .count();
    match steps.get(done) {
        None => say(n, "ctxfold mock: the scenario is over", QUIET_TOKENS),
        Some(Step::Say { text, compact }) => say(
            n,
            text,
            if *compact {
                COMPACT_TOKENS
            } else {
                QUIET_TOKENS
            },
        ),
        Some(step) => {
            let (name, arguments) = if codex {
                codex_call(step)
            } else {
                pi_call(step)
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
