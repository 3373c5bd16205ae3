//! The generator of the project's own edge-case fixtures (tests/fixtures, see its README.md):
//! small, deterministic sessions in the shapes Codex, Pi and Claude Code write, every word and byte made up
//! here. tests/fixtures.rs checks that the committed files are exactly what this writes;
//! `CTXFOLD_WRITE_FIXTURES=1 cargo test --test fixtures` rewrites them.

use serde_json::{Value, json};

use crate::common::own;

/// Every generated fixture: its path under tests/fixtures, and its bytes.
pub fn all() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (own::CODEX_UNIFIED_EXEC, codex_unified_exec()),
        (own::CODEX_SHELL_CRLF, codex_shell_crlf()),
        (own::CODEX_MID_TURN, codex_mid_turn()),
        (own::PI_V1_COMPACTION, pi_v1_compaction()),
        (own::PI_V1_MODEL_CHANGES, pi_v1_model_changes()),
        (own::CLAUDE_SESSION, claude::session()),
        (own::CLAUDE_SUBAGENT, claude::subagent()),
        (own::CLAUDE_LEGACY, claude::legacy()),
    ]
}

#[path = "fixture_gen_claude.rs"]
pub mod claude;

/// Marks where raw bytes that are not UTF-8 go once a line is serialised.
const NOT_UTF8: &str = "@@not-utf8@@";

/// JSON lines joined by `eol`, each line ending with it.
fn jsonl(lines: &[Value], eol: &str) -> Vec<u8> {
    let mut out = String::new();
    for line in lines {
        out.push_str(&line.to_string());
        out.push_str(eol);
    }
    out.into_bytes()
}

/// xorshift64*: varied text, the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn hex(&mut self, digits: usize) -> String {
        (0..digits)
            .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap())
            .collect()
    }

    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len() as u64) as usize]
    }
}

const NOUNS: &[&str] = &[
    "widget", "ledger", "note", "queue", "shard", "cursor", "token", "frame", "batch", "entry",
    "record", "span", "chart", "axis", "range", "bucket",
];
const VERBS: &[&str] = &[
    "parse", "render", "merge", "flush", "sync", "scale", "split", "check", "load", "store",
];

/// `cargo test` output: `tests` tests, the ones in `failing` failing with a panic.
fn cargo_test_log(rng: &mut Rng, krate: &str, tests: usize, failing: &[&str]) -> String {
    let mut out = format!(
        "   Compiling {krate} v0.3.1 (/home/dev/{krate})\n    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.{:02}s\n     Running unittests src/lib.rs (target/debug/deps/{krate}-{})\n\nrunning {tests} tests\n",
        rng.below(100),
        rng.hex(16)
    );
    for i in 0..tests {
        let name = format!(
            "{}::{}_{}_{i:03}",
            rng.pick(NOUNS),
            rng.pick(VERBS),
            rng.pick(NOUNS)
        );
        out.push_str(&format!("test {name} ... ok\n"));
    }
    for name in failing {
        out.push_str(&format!("test {name} ... FAILED\n"));
    }
    out.push_str("\nfailures:\n\n");
    for name in failing {
        out.push_str(&format!(
            "---- {name} stdout ----\nthread '{name}' panicked at src/{}.rs:{}:9:\nassertion `left == right` failed\n  left: {}\n right: {}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n",
            rng.pick(NOUNS),
            rng.below(400) + 10,
            rng.below(90),
            rng.below(90)
        ));
    }
    let result = if failing.is_empty() { "ok" } else { "FAILED" };
    out.push_str(&format!(
        "test result: {result}. {tests} passed; {} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.{:02}s\n",
        failing.len(),
        rng.below(100)
    ));
    out
}

/// A source file of `functions` small functions, as `cat` or a read tool returns it.
fn source_file(rng: &mut Rng, functions: usize) -> String {
    let mut out = String::from("use std::collections::BTreeMap;\n\n");
    for i in 0..functions {
        let (verb, noun) = (rng.pick(VERBS), rng.pick(NOUNS));
        out.push_str(&format!(
            "/// {verb} one {noun} into the map, keyed by its {}.\npub fn {verb}_{noun}_{i}(map: &mut BTreeMap<u64, String>, id: u64) -> Option<String> {{\n    let value = format!(\"{noun}-{{id:0{}x}}\");\n    map.insert(id ^ 0x{}, value)\n}}\n\n",
            rng.pick(NOUNS),
            rng.below(8) + 4,
            rng.hex(8)
        ));
    }
    out
}

/// A CSV of `rows` rows.
fn csv(rng: &mut Rng, rows: usize) -> String {
    let mut out = String::from("id,name,region,amount,checksum\n");
    for i in 0..rows {
        out.push_str(&format!(
            "{i},{}-{},{},{}.{:02},{}\n",
            rng.pick(NOUNS),
            rng.pick(NOUNS),
            rng.pick(&["eu-west", "us-east", "ap-south", "sa-east"]),
            rng.below(100_000),
            rng.below(100),
            rng.hex(12)
        ));
    }
    out
}

/// Instructions of our own, long enough to be stored as a field of their own.
fn instructions(rng: &mut Rng) -> String {
    let mut out = String::from(
        "You are a coding agent in a generated test session of ctxfold. These instructions are made up for the project's fixtures.\n\n",
    );
    for i in 1..=40 {
        out.push_str(&format!(
            "{i}. Before you {} a {}, {} the {} it touches and say what changed.\n",
            rng.pick(VERBS),
            rng.pick(NOUNS),
            rng.pick(VERBS),
            rng.pick(NOUNS)
        ));
    }
    out
}

/// A PNG (RGB, `width` x `height`, a gradient) in base64: an image as agents attach them.
fn png_base64(width: u32, height: u32) -> String {
    let mut raw = Vec::new();
    for y in 0..height {
        raw.push(0); // filter: none
        for x in 0..width {
            raw.extend_from_slice(&[(x * 255 / width) as u8, (y * 255 / height) as u8, 0x80]);
        }
    }
    // zlib, stored (uncompressed) deflate blocks.
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut ihdr = width.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(b"IHDR", ihdr), (b"IDAT", zlib), (b"IEND", Vec::new())] {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let start = png.len();
        png.extend_from_slice(kind);
        png.extend_from_slice(&data);
        let crc = crc32(&png[start..]);
        png.extend_from_slice(&crc.to_be_bytes());
    }
    base64(&png)
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A timestamp `seconds` after 10:00:00 on `day`, as both agents write them.
fn at(day: &str, seconds: u64) -> String {
    format!(
        "{day}T{:02}:{:02}:{:02}.{:03}Z",
        10 + seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        seconds * 37 % 1000
    )
}

fn codex(ts: &str, kind: &str, payload: Value) -> Value {
    json!({"timestamp": ts, "type": kind, "payload": payload})
}

fn codex_user(ts: &str, text: &str) -> Value {
    codex(
        ts,
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
    )
}

fn codex_assistant(ts: &str, text: &str) -> Value {
    codex(
        ts,
        "response_item",
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}),
    )
}

fn codex_reasoning(ts: &str, rng: &mut Rng, summary: &str) -> Value {
    codex(
        ts,
        "response_item",
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "content": null,
            "encrypted_content": format!("gAAAAB{}", rng.hex(320))}),
    )
}

fn codex_call(ts: &str, call_id: &str, name: &str, arguments: Value) -> Value {
    codex(
        ts,
        "response_item",
        json!({"type": "function_call", "name": name, "arguments": arguments.to_string(), "call_id": call_id}),
    )
}

fn codex_output(ts: &str, call_id: &str, output: &str) -> Value {
    codex(
        ts,
        "response_item",
        json!({"type": "function_call_output", "call_id": call_id, "output": output}),
    )
}

fn token_count(ts: &str, total: u64) -> Value {
    codex(
        ts,
        "event_msg",
        json!({"type": "token_count", "info": {"total_token_usage": {"input_tokens": total, "output_tokens": total / 20, "total_tokens": total + total / 20},
            "last_token_usage": {"input_tokens": total, "output_tokens": total / 20, "total_tokens": total + total / 20}, "model_context_window": 258_400}}),
    )
}

/// Codex 0.12x (codex-tui) with the unified `exec_command` tool: every `exec_command_end` repeats
/// the command's output in `stdout`, `aggregated_output` and `formatted_output`; `git` among the
/// commands, an `apply_patch` custom tool call, a web search, an image in the second user turn, and
/// no compaction (its seeds are one final record).
fn codex_unified_exec() -> Vec<u8> {
    let mut rng = Rng(0x0f1d_0001);
    let id = "0f1d0000-0000-7000-8000-000000000001";
    let cwd = "/home/dev/widgets";
    let day = "2026-03-02";
    let mut t = 0;
    let mut ts = || {
        t += 3;
        at(day, t)
    };
    let ask = "run the widget tests and fix what fails";
    let mut lines = vec![
        codex(
            &ts(),
            "session_meta",
            json!({"id": id, "timestamp": at(day, 0), "cwd": cwd, "originator": "codex-tui", "cli_version": "0.125.0",
                "source": "cli", "model_provider": "openai", "base_instructions": {"text": instructions(&mut rng)}}),
        ),
        codex_user(
            &ts(),
            &format!(
                "<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n</environment_context>"
            ),
        ),
        codex_user(&ts(), ask),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "user_message", "message": ask, "images": []}),
        ),
        codex(
            &ts(),
            "turn_context",
            json!({"cwd": cwd, "approval_policy": "on-request", "model": "gpt-5.1-codex", "summary": "auto"}),
        ),
        codex_reasoning(
            &ts(),
            &mut rng,
            "**Checking the working tree with git first**",
        ),
    ];
    let commands: [(&str, i64, String); 3] = [
        (
            "git status --short",
            0,
            " M src/widget.rs\n M src/chart.rs\n?? notes.txt\n".into(),
        ),
        (
            "cargo test",
            101,
            cargo_test_log(
                &mut rng,
                "widgets",
                140,
                &["chart::scale_axis_017", "widget::render_range_052"],
            ),
        ),
        (
            "cargo test",
            0,
            cargo_test_log(&mut rng, "widgets", 142, &[]),
        ),
    ];
    for (n, (cmd, code, output)) in commands.iter().enumerate() {
        let call_id = format!("call_{}", rng.hex(24));
        lines.push(codex_call(
            &ts(),
            &call_id,
            "exec_command",
            json!({"cmd": cmd, "workdir": cwd, "yield_time_ms": 1000, "max_output_tokens": 12000}),
        ));
        lines.push(codex_output(
            &ts(),
            &call_id,
            &format!(
                "Chunk ID: {}\nWall time: 1.{:04} seconds\nProcess exited with code {code}\nOriginal token count: {}\nOutput:\n{output}",
                rng.hex(6),
                rng.below(10_000),
                output.len() / 4
            ),
        ));
        lines.push(codex(
            &ts(),
            "event_msg",
            json!({"type": "exec_command_end", "call_id": call_id, "process_id": format!("{}", 40_000 + rng.below(9_999)),
                "command": ["/bin/bash", "-lc", cmd], "cwd": cwd, "source": "unified_exec_startup",
                "stdout": output, "stderr": "", "aggregated_output": output, "exit_code": code,
                "duration": {"secs": 1, "nanos": rng.below(1_000_000_000)}, "formatted_output": output,
                "status": if *code == 0 { "completed" } else { "failed" }}),
        ));
        lines.push(token_count(&ts(), 9_000 + 4_000 * n as u64));
        if n == 1 {
            // The fix, as a patch.
            lines.push(codex_reasoning(
                &ts(),
                &mut rng,
                "**Fixing the axis scale** and the range render",
            ));
            let patch = "*** Begin Patch\n*** Update File: src/chart.rs\n@@\n-    let step = span / ticks;\n+    let step = span / ticks.max(1);\n*** Update File: src/widget.rs\n@@\n-    range.end - range.start\n+    range.end.saturating_sub(range.start)\n*** End Patch";
            let call_id = format!("call_{}", rng.hex(24));
            lines.push(codex(
                &ts(),
                "response_item",
                json!({"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch", "input": patch}),
            ));
            lines.push(codex(
                &ts(),
                "event_msg",
                json!({"type": "patch_apply_end", "call_id": call_id, "stdout": "Success. Updated the following files:\nM src/chart.rs\nM src/widget.rs\n", "stderr": "", "success": true}),
            ));
            lines.push(codex(
                &ts(),
                "response_item",
                json!({"type": "custom_tool_call_output", "call_id": call_id,
                    "output": json!({"output": "Success. Updated the following files:\nM src/chart.rs\nM src/widget.rs\n", "metadata": {"exit_code": 0, "duration_seconds": 0.0}}).to_string()}),
            ));
            lines.push(codex(
                &ts(),
                "response_item",
                json!({"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "rust saturating_sub usize range length"}}),
            ));
        }
    }
    let follow = "the chart still looks off, see the screenshot";
    let image = format!("data:image/png;base64,{}", png_base64(64, 40));
    lines.extend([
        codex_assistant(
            &ts(),
            "Fixed the axis step (no division by zero with no ticks) and the range length; all 142 tests pass. Nothing is committed: git shows src/chart.rs and src/widget.rs modified.",
        ),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "task_complete", "last_agent_message": "all 142 tests pass"}),
        ),
        codex(
            &ts(),
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": follow}, {"type": "input_image", "image_url": image}]}),
        ),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "user_message", "message": follow, "images": [image]}),
        ),
        codex_reasoning(&ts(), &mut rng, "**Reading the screenshot**"),
        codex_assistant(
            &ts(),
            "The gradient runs left to right as it should; the labels are cut because the chart is 40 px high. Make it taller or drop the labels.",
        ),
        token_count(&ts(), 24_000),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "task_complete", "last_agent_message": "make it taller"}),
        ),
    ]);
    jsonl(&lines, "\n")
}

/// A `shell` tool's output as Codex 0.77 writes it: a JSON document inside the output string.
fn shell_output(output: &str, exit_code: i64, seconds: f64) -> String {
    json!({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": seconds}})
        .to_string()
}

/// Codex 0.77 (codex_exec) with the `shell` tool, its outputs JSON strings with
/// `metadata.exit_code` (one of them 101), every line ending in CRLF.
fn codex_shell_crlf() -> Vec<u8> {
    let mut rng = Rng(0x0f1d_0002);
    let id = "0f1d0000-0000-7000-8000-000000000002";
    let cwd = "/home/dev/ledger";
    let day = "2026-01-05";
    let mut t = 0;
    let mut ts = || {
        t += 2;
        at(day, t)
    };
    let ask = "summarize what this repository does and list its failing checks";
    let mut lines = vec![
        codex(
            &ts(),
            "session_meta",
            json!({"id": id, "timestamp": at(day, 0), "cwd": cwd, "originator": "codex_exec", "cli_version": "0.77.0",
                "instructions": "## Skills\nNone are installed in this generated session.", "source": "exec", "model_provider": "openai"}),
        ),
        codex_user(
            &ts(),
            &format!(
                "<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>never</approval_policy>\n</environment_context>"
            ),
        ),
        codex_user(&ts(), ask),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "user_message", "message": ask, "images": []}),
        ),
        codex(
            &ts(),
            "turn_context",
            json!({"cwd": cwd, "approval_policy": "never", "sandbox_policy": {"mode": "read-only"}, "model": "gpt-5.1-codex-max", "summary": "auto"}),
        ),
    ];
    let calls: [(&str, i64, String); 3] = [
        ("ls", 0, "Cargo.toml\nREADME.md\nsrc\ntests\n".into()),
        ("cat src/ledger.rs", 0, source_file(&mut rng, 36)),
        (
            "cargo check",
            101,
            "    Checking ledger v0.1.0 (/home/dev/ledger)\nerror[E0599]: no method named `balance_of` found for struct `Ledger` in the current scope\n  --> src/main.rs:14:20\n   |\n14 |     let b = ledger.balance_of(&account);\n   |                    ^^^^^^^^^^ method not found in `Ledger`\n\nerror: could not compile `ledger` (bin \"ledger\") due to 1 previous error\n".into(),
        ),
    ];
    for (n, (cmd, code, output)) in calls.iter().enumerate() {
        lines.push(codex_reasoning(
            &ts(),
            &mut rng,
            &format!("**Running `{cmd}`**"),
        ));
        let call_id = format!("call_{}", rng.hex(24));
        lines.push(codex_call(
            &ts(),
            &call_id,
            "shell",
            json!({"command": ["bash", "-lc", cmd], "workdir": cwd}),
        ));
        lines.push(codex_output(
            &ts(),
            &call_id,
            &shell_output(output, *code, [0.1, 0.4, 2.3][n]),
        ));
        lines.push(token_count(&ts(), 6_000 + 2_500 * n as u64));
    }
    lines.extend([
        codex(
            &ts(),
            "event_msg",
            json!({"type": "agent_reasoning", "text": "**Summarizing**"}),
        ),
        codex_assistant(
            &ts(),
            "A double-entry ledger library with a small CLI. One check fails: `cargo check` (src/main.rs:14 calls `balance_of`, which `Ledger` does not have).",
        ),
    ]);
    jsonl(&lines, "\r\n")
}

/// Codex Desktop 0.104, its text made up: a turn cut off after a call whose output never came,
/// and no newline after the last line.
fn codex_mid_turn() -> Vec<u8> {
    let mut rng = Rng(0x0f1d_0003);
    let id = "0f1d0000-0000-7000-8000-000000000003";
    let cwd = "/home/dev/syncer";
    let day = "2026-02-20";
    let mut t = 0;
    let mut ts = || {
        t += 4;
        at(day, t)
    };
    let ask = "add a --dry-run flag to the sync command";
    let grep = "src/cli.rs:41:pub fn sync(args: SyncArgs) -> Result<()> {\nsrc/cli.rs:88:fn sync_one(remote: &Remote) -> Result<()> {\n";
    let first = format!("call_{}", rng.hex(24));
    let lines = [
        codex(
            &ts(),
            "session_meta",
            json!({"id": id, "timestamp": at(day, 0), "cwd": cwd, "originator": "Codex Desktop", "cli_version": "0.104.0",
                "source": "vscode", "model_provider": "openai", "base_instructions": {"text": "Generated instructions."},
                "git": {"commit_hash": rng.hex(40), "branch": "main", "repository_url": "https://example.invalid/syncer.git"}}),
        ),
        codex(
            &ts(),
            "response_item",
            json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>workspace-write</permissions instructions>"}]}),
        ),
        codex_user(
            &ts(),
            &format!("<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"),
        ),
        codex_user(&ts(), ask),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "task_started", "turn_id": "0f1d0000-0000-7000-8000-0000000000a3", "model_context_window": 258_400}),
        ),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "user_message", "message": ask, "images": [], "local_images": [], "text_elements": []}),
        ),
        codex(
            &ts(),
            "turn_context",
            json!({"turn_id": "0f1d0000-0000-7000-8000-0000000000a3", "cwd": cwd, "approval_policy": "on-request", "model": "gpt-5.3-codex"}),
        ),
        codex_reasoning(&ts(), &mut rng, "**Finding the sync command**"),
        codex_call(
            &ts(),
            &first,
            "exec_command",
            json!({"cmd": "rg -n \"fn sync\" src", "workdir": cwd}),
        ),
        codex_output(
            &ts(),
            &first,
            &format!("Process exited with code 0\nOutput:\n{grep}"),
        ),
        codex_assistant(
            &ts(),
            "`sync` is in src/cli.rs; I will add the flag to `SyncArgs` and skip the writes in `sync_one`.",
        ),
        codex(
            &ts(),
            "event_msg",
            json!({"type": "agent_message", "message": "Adding the flag to SyncArgs."}),
        ),
        codex_call(
            &ts(),
            &format!("call_{}", rng.hex(24)),
            "exec_command",
            json!({"cmd": "cargo build", "workdir": cwd}),
        ),
    ];
    let mut bytes = jsonl(&lines, "\n");
    bytes.pop();
    bytes
}

/// Pi v1 entries carry no id: a message is its role's fields under `message`.
fn pi_message(ts: &str, message: Value) -> Value {
    json!({"type": "message", "timestamp": ts, "message": message})
}

fn pi_user(ts: &str, ms: u64, content: Value) -> Value {
    pi_message(
        ts,
        json!({"role": "user", "content": content, "timestamp": ms}),
    )
}

fn pi_assistant(ts: &str, ms: u64, model: (&str, &str), content: Value, stop: &str) -> Value {
    let (provider, model) = model;
    let api = if provider == "anthropic" {
        "anthropic-messages"
    } else {
        "openai-responses"
    };
    pi_message(
        ts,
        json!({"role": "assistant", "content": content, "api": api, "provider": provider, "model": model,
            "usage": {"input": 12, "output": 140, "cacheRead": ms % 50_000, "cacheWrite": 900, "totalTokens": 1_052 + ms % 50_000,
                "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": stop, "timestamp": ms}),
    )
}

fn pi_result(ts: &str, ms: u64, call: &str, tool: &str, content: Value, error: bool) -> Value {
    pi_message(
        ts,
        json!({"role": "toolResult", "toolCallId": call, "toolName": tool, "content": content, "isError": error, "timestamp": ms}),
    )
}

fn text(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

fn thinking(rng: &mut Rng, text: &str) -> Value {
    json!({"type": "thinking", "thinking": text, "thinkingSignature": rng.hex(96)})
}

fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments})
}

/// One Pi v1 turn step: the assistant's thinking and call, then the tool's result.
struct Step<'a> {
    thought: &'a str,
    tool: &'a str,
    arguments: Value,
    output: String,
    error: bool,
}

/// The two lines of `step` at second `s`.
fn pi_step(rng: &mut Rng, day: &str, s: u64, model: (&str, &str), step: Step<'_>) -> [Value; 2] {
    let id = format!("toolu_{}", rng.hex(24));
    let ms = 1_767_000_000_000 + s * 1000;
    [
        pi_assistant(
            &at(day, s),
            ms,
            model,
            json!([
                thinking(rng, step.thought),
                tool_call(&id, step.tool, step.arguments)
            ]),
            "toolUse",
        ),
        pi_result(
            &at(day, s + 1),
            ms + 900,
            &id,
            step.tool,
            text(&step.output),
            step.error,
        ),
    ]
}

/// A Pi v1 session: thinking blocks, a thinking-level change, large read and bash outputs, a
/// compaction (by `firstKeptEntryIndex`), and one line holding two JSON objects with no newline
/// between them (an assistant message and its tool result).
fn pi_v1_compaction() -> Vec<u8> {
    let mut rng = Rng(0x0f1d_0004);
    let day = "2026-01-12";
    let model = ("anthropic", "claude-sonnet-4-5");
    let mut lines = vec![
        json!({"type": "session", "id": "0f1d0000-0000-4000-8000-000000000004", "timestamp": at(day, 0), "cwd": "/home/dev/notes-app",
            "provider": model.0, "modelId": model.1, "thinkingLevel": "off"}),
        pi_user(
            &at(day, 1),
            1_767_000_001_000,
            text("why do the notes sync twice after a reconnect?"),
        ),
    ];
    let steps = [
        Step {
            thought: "The reconnect handler probably re-subscribes without dropping the old listener.",
            tool: "read",
            arguments: json!({"path": "src/sync/reconnect.ts"}),
            output: source_file(&mut rng, 40),
            error: false,
        },
        Step {
            thought: "Run the sync tests to see the double delivery.",
            tool: "bash",
            arguments: json!({"command": "npm test -- sync"}),
            output: format!(
                "{}\nnpm ERR! code ELIFECYCLE\nnpm ERR! errno 1\n",
                cargo_test_log(
                    &mut rng,
                    "notes-sync",
                    90,
                    &["sync::deliver_once_after_reconnect"]
                )
            ),
            error: true,
        },
        Step {
            thought: "Drop the old listener before subscribing again.",
            tool: "edit",
            arguments: json!({"path": "src/sync/reconnect.ts", "oldText": "socket.on('note', deliver);", "newText": "socket.off('note', deliver);\nsocket.on('note', deliver);"}),
            output: "Successfully replaced text in src/sync/reconnect.ts.".into(),
            error: false,
        },
    ];
    let mut s = 2;
    for step in steps {
        lines.extend(pi_step(&mut rng, day, s, model, step));
        s += 5;
    }
    lines.push(
        json!({"type": "thinking_level_change", "timestamp": at(day, s), "thinkingLevel": "high"}),
    );
    s += 1;
    let joined_at = lines.len();
    let output = cargo_test_log(&mut rng, "notes-sync", 91, &[]);
    lines.extend(pi_step(
        &mut rng,
        day,
        s,
        model,
        Step {
            thought: "Check the fix against the whole suite.",
            tool: "bash",
            arguments: json!({"command": "npm test"}),
            output,
            error: false,
        },
    ));
    s += 5;
    lines.push(pi_assistant(
        &at(day, s),
        1_767_000_000_000 + s * 1000,
        model,
        json!([thinking(&mut rng, "All green."), {"type": "text", "text": "Fixed: reconnecting removed no listener, so every note was delivered once per connection. The handler now drops the old one first."}]),
        "stop",
    ));
    s += 1;
    let first_kept = lines.len() - 1;
    lines.push(json!({"type": "compaction", "timestamp": at(day, s),
        "summary": "## Goal\nStop notes syncing twice after a reconnect.\n\n## Done\n- src/sync/reconnect.ts drops the old `note` listener before subscribing.\n- `npm test` passes (91 tests).",
        "firstKeptEntryIndex": first_kept, "tokensBefore": 151_208}));
    s += 1;
    lines.push(pi_user(
        &at(day, s),
        1_767_000_000_000 + s * 1000,
        text("now add a test for it"),
    ));
    s += 1;
    for step in [
        Step {
            thought: "A test that reconnects twice and counts deliveries.",
            tool: "write",
            arguments: json!({"path": "test/reconnect.test.ts", "content": source_file(&mut rng, 12)}),
            output: "Successfully wrote 2114 bytes to test/reconnect.test.ts".into(),
            error: false,
        },
        Step {
            thought: "Run it.",
            tool: "bash",
            arguments: json!({"command": "npm test -- reconnect"}),
            output: cargo_test_log(&mut rng, "notes-sync", 3, &[]),
            error: false,
        },
    ] {
        lines.extend(pi_step(&mut rng, day, s, model, step));
        s += 5;
    }
    lines.push(pi_assistant(
        &at(day, s),
        1_767_000_000_000 + s * 1000,
        model,
        text("Added test/reconnect.test.ts: it reconnects twice and expects each note once."),
        "stop",
    ));
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        out.extend_from_slice(line.to_string().as_bytes());
        // The assistant message and its tool result on one line, as a writer once left them.
        if i != joined_at {
            out.push(b'\n');
        }
    }
    out
}

/// A Pi v1 session across models: an aborted request (empty content), a model change and
/// thinking-level changes, a second assistant message aborted mid-answer, a screenshot returned as
/// an image and one pasted by the user, large outputs, and a tool output with bytes that are not
/// UTF-8 inside its string.
fn pi_v1_model_changes() -> Vec<u8> {
    let mut rng = Rng(0x0f1d_0005);
    let day = "2026-01-20";
    let gpt = ("openai", "gpt-5.1-codex");
    let claude = ("anthropic", "claude-opus-4-5");
    let ms = |s: u64| 1_768_000_000_000 + s * 1000;
    let image = png_base64(96, 64);
    let mut lines = vec![
        json!({"type": "session", "id": "0f1d0000-0000-4000-8000-000000000005", "timestamp": at(day, 0), "cwd": "/home/dev/report-gen",
            "provider": gpt.0, "modelId": gpt.1, "thinkingLevel": "off"}),
        pi_user(
            &at(day, 1),
            ms(1),
            text("the monthly report totals are off by a few cents, find out why"),
        ),
        json!({"type": "message", "timestamp": at(day, 2), "message": {"role": "assistant", "content": [], "api": "openai-responses",
            "provider": gpt.0, "model": gpt.1, "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}, "stopReason": "aborted",
            "timestamp": ms(2), "errorMessage": "Request was aborted"}}),
        json!({"type": "model_change", "timestamp": at(day, 3), "provider": claude.0, "modelId": claude.1}),
        json!({"type": "thinking_level_change", "timestamp": at(day, 4), "thinkingLevel": "medium"}),
        pi_user(&at(day, 5), ms(5), text("try again with the other model")),
    ];
    let mut s = 6;
    let steps = [
        Step {
            thought: "Look at the input data first.",
            tool: "bash",
            arguments: json!({"command": "cat data/2026-01.csv"}),
            output: csv(&mut rng, 420),
            error: false,
        },
        Step {
            thought: "The totals are summed as floats; read the aggregation.",
            tool: "read",
            arguments: json!({"path": "src/aggregate.py"}),
            output: source_file(&mut rng, 30),
            error: false,
        },
        Step {
            thought: "What does the cached blob hold?",
            tool: "bash",
            arguments: json!({"command": "head -c 48 cache/totals.bin; echo"}),
            output: format!("TOTALS\u{1}{NOT_UTF8}v2 eu-west 40213.07{NOT_UTF8}\n"),
            error: false,
        },
        Step {
            thought: "Run the report on January.",
            tool: "bash",
            arguments: json!({"command": "python -m report --month 2026-01"}),
            output: csv(&mut rng, 260),
            error: false,
        },
    ];
    for step in steps {
        lines.extend(pi_step(&mut rng, day, s, claude, step));
        s += 5;
    }
    let shot = format!("toolu_{}", rng.hex(24));
    lines.extend([
        pi_assistant(
            &at(day, s),
            ms(s),
            claude,
            json!([thinking(&mut rng, "See how the chart renders the totals."), tool_call(&shot, "screenshot", json!({"url": "http://localhost:8000/report"}))]),
            "toolUse",
        ),
        pi_result(
            &at(day, s + 1),
            ms(s + 1),
            &shot,
            "screenshot",
            json!([{"type": "text", "text": "Captured 96x64 px."}, {"type": "image", "data": image, "mimeType": "image/png"}]),
            false,
        ),
        json!({"type": "thinking_level_change", "timestamp": at(day, s + 2), "thinkingLevel": "off"}),
        pi_user(
            &at(day, s + 3),
            ms(s + 3),
            json!([{"type": "text", "text": "this is what finance sees"}, {"type": "image", "data": png_base64(32, 24), "mimeType": "image/png"}]),
        ),
        pi_assistant(
            &at(day, s + 4),
            ms(s + 4),
            claude,
            text("The totals are summed as binary floats, so cents drift. Summing in integer cents fixes"),
            "aborted",
        ),
        json!({"type": "model_change", "timestamp": at(day, s + 5), "provider": gpt.0, "modelId": gpt.1}),
        pi_user(
            &at(day, s + 6),
            ms(s + 6),
            text("go on, and make the change"),
        ),
    ]);
    s += 7;
    lines.extend(pi_step(
        &mut rng,
        day,
        s,
        gpt,
        Step {
            thought: "Sum integer cents.",
            tool: "edit",
            arguments: json!({"path": "src/aggregate.py", "oldText": "total += float(row['amount'])", "newText": "total += round(float(row['amount']) * 100)"}),
            output: "Successfully replaced text in src/aggregate.py.".into(),
            error: false,
        },
    ));
    s += 5;
    lines.push(pi_assistant(
        &at(day, s),
        ms(s),
        gpt,
        text("Totals are now summed in integer cents and divided once at the end; January matches the ledger to the cent."),
        "stop",
    ));
    let text = String::from_utf8(jsonl(&lines, "\n")).unwrap();
    let mut out = Vec::new();
    for (i, piece) in text.split(NOT_UTF8).enumerate() {
        if i > 0 {
            out.extend_from_slice(b"\xff\xfe");
        }
        out.extend_from_slice(piece.as_bytes());
    }
    out
}
