//! A Pi v3 session built from formats.md: a branched tree, responseIds (and one message without),
//! a `context_edit` with a replacement and one with null, two compactions, a tool call id with `|`,
//! an image result, and a large tool output with planted needles among a flood of `ERROR` lines.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub const SESSION_ID: &str = "pi-v3-fixture";
pub const CWD: &str = "/work/proj";

/// Needles planted in the large output of `r:c1`.
pub const HEX_ID: &str = "9f86d081884c7d65";
pub const VERSION: &str = "7.3.19";
pub const NEEDLE_ERRORS: &[&str] = &[
    "npm ERR! code ELIFECYCLE",
    "Traceback (most recent call last):",
    "ZeroDivisionError: division by zero",
    "Segmentation fault (core dumped)",
    "cat: /work/proj/missing.txt: No such file or directory",
];
pub const NOT_AN_ERROR: &str = "10 passed, 0 failed";

/// The text of `r:c1`.
pub fn large_output() -> String {
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
        "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra",
        "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "amber", "basil",
        "cedar", "dune",
    ];
    let mut lines = Vec::new();
    for i in 0..3000 {
        lines.push(format!("INFO step {i} ok"));
        if i % 40 == 0 {
            let w = words[(i / 40) % words.len()];
            let v = words[(i / 40 + 7) % words.len()];
            lines.push(format!("ERROR {w} queue {v} overflowed"));
        }
        match i {
            1000 => lines.push(format!("resolved lodash@{VERSION} integrity {HEX_ID}")),
            1500 => lines.extend(NEEDLE_ERRORS.iter().map(|e| format!("  {e}"))),
            1600 => lines.push(NOT_AN_ERROR.into()),
            _ => {}
        }
    }
    lines.join("\n")
}

fn entry(id: &str, parent: Option<&str>, ts: &str, rest: Value) -> Value {
    let mut value = json!({"type": "message", "id": id, "parentId": parent, "timestamp": ts});
    for (k, v) in rest.as_object().unwrap() {
        value[k] = v.clone();
    }
    value
}

fn user(id: &str, parent: Option<&str>, ms: u64, text: &str) -> Value {
    entry(
        id,
        parent,
        "2026-08-01T10:00:00.000Z",
        json!({"message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms}}),
    )
}

fn assistant(id: &str, parent: &str, ms: u64, response_id: Option<&str>, content: Value) -> Value {
    let mut message = json!({"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
        "model": "claude", "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1200 + ms},
        "stopReason": "toolUse", "timestamp": ms});
    if let Some(r) = response_id {
        message["responseId"] = r.into();
    }
    entry(
        id,
        Some(parent),
        "2026-08-01T10:00:01.000Z",
        json!({"message": message}),
    )
}

fn result(id: &str, parent: &str, ms: u64, call: &str, tool: &str, content: Value) -> Value {
    entry(
        id,
        Some(parent),
        "2026-08-01T10:00:02.000Z",
        json!({"message": {"role": "toolResult", "toolCallId": call,
        "toolName": tool, "content": content, "isError": false, "timestamp": ms}}),
    )
}

/// The session's entries, one JSON value per line.
pub fn entries() -> Vec<Value> {
    vec![
        json!({"type": "session", "version": 3, "id": SESSION_ID, "timestamp": "2026-08-01T09:59:59.000Z", "cwd": CWD}),
        user("e0000001", None, 1000, "build the thing\nwith care"),
        assistant(
            "e0000002",
            "e0000001",
            1001,
            Some("resp_1"),
            json!([
            {"type": "thinking", "thinking": "let me run the tests", "thinkingSignature": "c2lnbmF0dXJl"},
            {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "npm test", "timeout": 60}}]),
        ),
        result(
            "e0000003",
            "e0000002",
            1002,
            "c1",
            "bash",
            json!([{"type": "text", "text": large_output()}]),
        ),
        assistant(
            "e0000004",
            "e0000003",
            1003,
            None,
            json!([{"type": "text", "text": "the tests fail"}]),
        ),
        user("e0000005", Some("e0000004"), 1004, "fix src/lib.rs please"),
        assistant(
            "e0000006",
            "e0000005",
            1005,
            Some("resp_2"),
            json!([
            {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "/work/proj/src/lib.rs"}}]),
        ),
        result(
            "e0000007",
            "e0000006",
            1006,
            "c2",
            "read",
            json!([{"type": "text", "text": "fn main() {}\nerror[E0308]: mismatched types"}]),
        ),
        json!({"type": "context_edit", "id": "e0000008", "parentId": "e0000007", "timestamp": "2026-08-01T10:00:03.000Z",
            "targetId": "e0000007", "replacement": {"content": "[read of src/lib.rs trimmed] PLACEHOLDER_RESULT_42"}}),
        json!({"type": "context_edit", "id": "e0000009", "parentId": "e0000008", "timestamp": "2026-08-01T10:00:04.000Z",
            "targetId": "e0000004", "replacement": null}),
        json!({"type": "compaction", "id": "e0000010", "parentId": "e0000009", "timestamp": "2026-08-01T10:00:05.000Z",
            "summary": "summary one: tests were run", "firstKeptEntryId": "e0000005", "tokensBefore": 50000,
            "details": {"readFiles": ["src/lib.rs"], "modifiedFiles": []}}),
        // An abandoned branch off the compaction.
        user("e0000011", Some("e0000010"), 1011, "try another way"),
        assistant(
            "e0000012",
            "e0000011",
            1012,
            Some("resp_3"),
            json!([{"type": "text", "text": "abandoned branch reply"}]),
        ),
        // The active branch, from the compaction again.
        user("e0000013", Some("e0000010"), 1013, "second try"),
        assistant(
            "e0000014",
            "e0000013",
            1014,
            Some("resp_4"),
            json!([
            {"type": "thinking", "thinking": "", "redacted": true, "thinkingSignature": "b3BhcXVl"},
            {"type": "thinking", "thinking": "consider the image"},
            {"type": "toolCall", "id": "call_x|fc_y", "name": "bash", "arguments": {"command": "cargo build --release"}},
            {"type": "toolCall", "id": "c4", "name": "screenshot", "arguments": {}}]),
        ),
        result(
            "e0000015",
            "e0000014",
            1015,
            "call_x|fc_y",
            "bash",
            json!([{"type": "text", "text": "Compiling ctxfold v0.1.0\nerror: could not compile `ctxfold`"}]),
        ),
        result(
            "e0000016",
            "e0000015",
            1016,
            "c4",
            "screenshot",
            json!([{"type": "text", "text": "a screenshot"}, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]),
        ),
        json!({"type": "compaction", "id": "e0000017", "parentId": "e0000016", "timestamp": "2026-08-01T10:00:06.000Z",
            "summary": "summary two", "firstKeptEntryId": "e0000013", "tokensBefore": 90000}),
        user("e0000018", Some("e0000017"), 1018, "continue"),
        assistant(
            "e0000019",
            "e0000018",
            1019,
            Some("resp_5"),
            json!([{"type": "text", "text": "done"}]),
        ),
    ]
}

pub fn write(dir: &Path) -> PathBuf {
    let path = dir.join(format!("2026-08-01T09-59-59-000Z_{SESSION_ID}.jsonl"));
    let text: String = entries()
        .iter()
        .map(|e| format!("{}\n", serde_json::to_string(e).unwrap()))
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// The text of the block `id` as the compat rules give it, for the blocks tests check by hand.
pub fn block_text(id: &str) -> Option<String> {
    Some(match id {
        "r:c1" => large_output(),
        "a:resp_1:p0" => "let me run the tests".into(),
        "a:t1003:p0" => "the tests fail".into(),
        "r:c2" => "fn main() {}\nerror[E0308]: mismatched types".into(),
        "r:c2:edit:e0000008" => "[read of src/lib.rs trimmed] PLACEHOLDER_RESULT_42".into(),
        "r:call_x|fc_y" => "Compiling ctxfold v0.1.0\nerror: could not compile `ctxfold`".into(),
        "a:resp_3:p0" => "abandoned branch reply".into(),
        "s:2026-08-01T10:00:05.000Z" => "summary one: tests were run".into(),
        _ => return None,
    })
}
