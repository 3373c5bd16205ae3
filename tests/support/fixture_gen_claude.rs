//! Claude Code transcripts for the generated fixtures: a 2.1.x session with every line type ctxfold
//! reads (and the side records it passes over), its subagent's transcript, and a 1.0.x session
//! that opens with a `summary` line. Shapes as /work/shared/spec/claude-code.md and Claude Code
//! 2.1.332's own runs show them; every word is made up here.

use serde_json::{Value, json};

use super::{Rng, at, cargo_test_log, png_base64, source_file};

pub const SESSION: &str = "0f1d0000-0000-4000-8000-00000000c001";
pub const LEGACY: &str = "0f1d0000-0000-4000-8000-00000000c002";
pub const AGENT: &str = "a0f1d00000000c0a1";
const CWD: &str = "/home/dev/shop";

/// One line: the fields in the order given (Claude Code writes the envelope in a fixed order; the
/// nested objects' order does not matter to anything).
fn line(fields: &[(&str, Value)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::from(*k)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// A uuid from the generator: the same on every run.
fn uuid(rng: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-8{}-{}",
        rng.hex(8),
        rng.hex(4),
        rng.hex(3),
        rng.hex(3),
        rng.hex(12)
    )
}

/// Writes a 2.1.x session's rows, chaining each tree row to the one before it.
struct Writer {
    rng: Rng,
    lines: Vec<String>,
    parent: Option<String>,
    seconds: u64,
    session: &'static str,
    /// A subagent's rows name it and are sidechain rows.
    agent: Option<&'static str>,
    prompt_id: String,
}

impl Writer {
    fn new(seed: u64, session: &'static str, agent: Option<&'static str>) -> Self {
        let mut rng = Rng(seed);
        let prompt_id = uuid(&mut rng);
        Self {
            rng,
            lines: Vec::new(),
            parent: None,
            seconds: 0,
            session,
            agent,
            prompt_id,
        }
    }

    fn ts(&mut self) -> String {
        self.seconds += 3;
        at("2026-11-28", self.seconds)
    }

    fn envelope(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("userType", json!("external")),
            ("entrypoint", json!("cli")),
            ("cwd", json!(CWD)),
            ("sessionId", json!(self.session)),
            ("version", json!("2.1.30")),
            ("gitBranch", json!("main")),
        ]
    }

    /// A tree row of `kind` with `body` fields; returns its uuid.
    fn row(&mut self, kind: &str, body: Vec<(&'static str, Value)>) -> String {
        let id = uuid(&mut self.rng);
        let ts = self.ts();
        let mut fields = vec![
            ("parentUuid", json!(self.parent)),
            ("isSidechain", json!(self.agent.is_some())),
        ];
        if let Some(agent) = self.agent {
            fields.push(("agentId", json!(agent)));
        }
        fields.extend(body);
        fields.push(("type", json!(kind)));
        fields.push(("uuid", json!(id)));
        fields.push(("timestamp", json!(ts)));
        fields.extend(self.envelope());
        self.lines.push(line(&fields));
        self.parent = Some(id.clone());
        id
    }

    /// A side record: no uuid, the session named.
    fn record(&mut self, kind: &str, body: Vec<(&'static str, Value)>) {
        let mut fields = vec![("type", json!(kind))];
        fields.extend(body);
        fields.push(("sessionId", json!(self.session)));
        self.lines.push(line(&fields));
    }

    fn prompt(&mut self, text: &str) -> String {
        self.prompt_id = uuid(&mut self.rng);
        self.record(
            "queue-operation",
            vec![
                ("operation", json!("enqueue")),
                ("timestamp", json!(at("2026-11-28", self.seconds + 1))),
                ("content", json!(text)),
            ],
        );
        let id = self.row(
            "user",
            vec![
                ("promptId", json!(self.prompt_id)),
                ("message", json!({"role": "user", "content": text})),
                ("promptSource", json!("typed")),
            ],
        );
        self.record(
            "last-prompt",
            vec![
                ("lastPrompt", json!(text.replace('\n', " "))),
                ("leafUuid", json!(id)),
            ],
        );
        id
    }

    fn attachment(&mut self, attachment: Value, rendered: &str) {
        self.row(
            "attachment",
            vec![
                ("attachment", attachment),
                ("rendered", json!([{"content": rendered}])),
                ("renderedRole", json!("system")),
            ],
        );
    }

    /// One assistant row (Claude Code writes one content block per row).
    fn assistant(&mut self, message: &str, block: Value, input_tokens: u64) -> String {
        let request = format!("req_{}", self.rng.hex(24));
        self.row(
            "assistant",
            vec![(
                "message",
                json!({"id": message, "type": "message", "role": "assistant", "model": "claude-sonnet-5",
                    "content": [block], "stop_reason": null, "stop_sequence": null,
                    "usage": {"input_tokens": 6, "cache_creation_input_tokens": input_tokens / 10,
                        "cache_read_input_tokens": input_tokens, "output_tokens": 180, "service_tier": "standard"}}),
            ),
            ("requestId", json!(request))],
        )
    }

    /// A tool call and its result; `is_error` as Claude Code sets it (failed Bash commands only).
    fn call(
        &mut self,
        name: &str,
        input: Value,
        content: Value,
        is_error: bool,
        tool_use_result: Value,
    ) -> String {
        let message = format!("msg_{}", self.rng.hex(24));
        let tokens = 9_000 + self.seconds * 40;
        let call_id = format!("toolu_{}", self.rng.hex(24));
        let assistant = self.assistant(
            &message,
            json!({"type": "tool_use", "id": call_id, "name": name, "input": input}),
            tokens,
        );
        let mut result = json!({"tool_use_id": call_id, "type": "tool_result", "content": content});
        if is_error {
            result["is_error"] = json!(true);
        }
        self.row(
            "user",
            vec![
                ("promptId", json!(self.prompt_id)),
                ("message", json!({"role": "user", "content": [result]})),
                ("toolUseResult", tool_use_result),
                ("sourceToolAssistantUUID", json!(assistant)),
            ],
        )
    }

    fn bash(&mut self, command: &str, output: &str, exit: Option<u32>) -> String {
        let input = json!({"command": command, "description": format!("Run {}", command.split(' ').next().unwrap())});
        match exit {
            None => self.call(
                "Bash",
                input,
                json!(output),
                false,
                json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}),
            ),
            Some(code) => {
                let text = format!("Exit code {code}\n{output}");
                self.call("Bash", input, json!(text), true, json!(format!("Error: {text}")))
            }
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = self.lines.join("\n");
        out.push('\n');
        out.into_bytes()
    }
}

/// A large log, as `cat` prints it: too long for the transcript, whose result keeps a preview.
fn job_log(rng: &mut Rng, lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "2026-11-28T10:{:02}:{:02}Z worker-{} job={} state=ok bytes={} path=/srv/data/shard-{:03}/part-{i:05}.bin\n",
                i / 60 % 60,
                i % 60,
                i % 4,
                rng.hex(8),
                rng.below(90_000),
                i % 17
            )
        })
        .collect()
}

/// Claude Code 2.1.x: the main session of a project, with every line type ctxfold reads.
///
/// A person's prompt; attachments; thinking, text and tool calls one block per row; a failing
/// `cargo test` (exit 101), a `cat` whose whole output Claude Code saved to `tool-results/`, a
/// Python traceback, a Write, an Edit, a Read returning an image; the API request records, cost and
/// mode records; a person's `!` command; a manual `/compact` (boundary with a preserved segment,
/// summary, the command's rows); a background subagent launched and its task notification; a
/// `custom-title` and `agent-name` (`/rename`); and one line holding two objects.
pub fn session() -> Vec<u8> {
    let mut w = Writer::new(0x0f1d_c001, SESSION, None);
    let mut rng = Rng(0x0f1d_c0f1);
    w.prompt("Run the ledger tests and fix what fails.\nKeep the public API as it is.");
    w.attachment(
        json!({"type": "environment", "snapshot": {"workingDirectory": CWD, "isGitRepo": true, "platform": "linux"}}),
        "<system-reminder>\n# Environment\n - Primary working directory: /home/dev/shop\n - Is a git repository: true\n</system-reminder>",
    );
    w.attachment(
        json!({"type": "date", "date": "2026-11-28"}),
        "<system-reminder>Today's date is 2026-11-28.</system-reminder>",
    );
    let shape = rng.hex(16);
    w.record(
        "api-request-shape",
        vec![
            ("shapeHash", json!(shape)),
            (
                "shape",
                json!({"tools": ["Agent", "Bash", "Edit", "Read", "Write"], "system": rng.hex(64)}),
            ),
        ],
    );
    w.record(
        "api-request-blob",
        vec![
            ("hash", json!(rng.hex(16))),
            ("blob", json!({"role": "user", "content": [{"type": "text", "text": "Run the ledger tests and fix what fails.\nKeep the public API as it is."}]})),
        ],
    );
    w.record(
        "api-request",
        vec![
            ("id", json!(uuid(&mut rng))),
            ("shapeHash", json!(shape)),
            ("tail", json!([rng.hex(16), rng.hex(16)])),
        ],
    );
    w.record("atis-latch", vec![("atis", json!(false))]);
    let thought = format!("msg_{}", rng.hex(24));
    w.assistant(
        &thought,
        json!({"type": "thinking", "thinking": "The ledger crate has a test suite; run it first and read the failures before touching code.", "signature": rng.hex(120)}),
        8_800,
    );
    w.assistant(
        &thought,
        json!({"type": "text", "text": "I'll run the test suite first."}),
        8_800,
    );
    let log = cargo_test_log(
        &mut rng,
        "ledger",
        40,
        &["ledger::balance_after_refund", "ledger::empty_ledger_total"],
    );
    w.bash("cargo test -p ledger", &log, Some(101));
    let big = job_log(&mut rng, 400);
    let saved =
        format!("/home/dev/.claude/projects/-home-dev-shop/{SESSION}/tool-results/b7k2x9q1.txt");
    let preview = format!(
        "<persisted-output>\nOutput too large ({:.1}KB). Full output saved to: {saved}\n\nPreview (first 2KB):\n{}\n...\n</persisted-output>",
        big.len() as f64 / 1024.0,
        &big[..2048]
    );
    w.call(
        "Bash",
        json!({"command": "cat logs/jobs.log", "description": "Show the job log"}),
        json!(preview),
        false,
        json!({"stdout": &big[..big.len() / 2], "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false,
            "persistedOutputPath": saved, "persistedOutputSize": big.len()}),
    );
    let traceback = "Traceback (most recent call last):\n  File \"/home/dev/shop/tools/reconcile.py\", line 41, in <module>\n    main()\n  File \"/home/dev/shop/tools/reconcile.py\", line 37, in main\n    total = sum(int(row[\"amount\"]) for row in rows)\nKeyError: 'amount'";
    w.bash(
        "python3 tools/reconcile.py --since 2026-11-01",
        traceback,
        Some(1),
    );
    let helper = source_file(&mut rng, 6);
    w.call(
        "Write",
        json!({"file_path": "/home/dev/shop/src/refund.rs", "content": helper}),
        json!("File created successfully at: /home/dev/shop/src/refund.rs"),
        false,
        json!({"type": "create", "filePath": "/home/dev/shop/src/refund.rs", "content": helper, "structuredPatch": [], "originalFile": null}),
    );
    w.call(
        "Edit",
        json!({"file_path": "/home/dev/shop/src/ledger.rs", "old_string": "self.total - refund", "new_string": "self.total.saturating_sub(refund)", "replace_all": false}),
        json!("The file /home/dev/shop/src/ledger.rs has been updated successfully."),
        false,
        json!({"filePath": "/home/dev/shop/src/ledger.rs", "oldString": "self.total - refund", "newString": "self.total.saturating_sub(refund)",
            "originalFile": "fn total(&self) -> u64 { self.total - refund }\n", "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
            "lines": ["-fn total(&self) -> u64 { self.total - refund }", "+fn total(&self) -> u64 { self.total.saturating_sub(refund) }"]}], "userModified": false, "replaceAll": false}),
    );
    let png = png_base64(24, 12);
    w.call(
        "Read",
        json!({"file_path": "/home/dev/shop/docs/balance-chart.png"}),
        json!([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]),
        false,
        json!({"type": "image", "file": {"base64": png, "type": "image/png", "originalSize": 1_204}}),
    );
    w.bash(
        "cargo test -p ledger",
        "test result: ok. 42 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.31s",
        None,
    );
    let done = format!("msg_{}", rng.hex(24));
    let last = w.assistant(
        &done,
        json!({"type": "text", "text": "Both failures came from `total` underflowing on a refund; it saturates now and all 42 tests pass."}),
        14_200,
    );
    // The end of a turn: two records on one line, as an append to a line without its `\n` left
    // them.
    w.record(
        "last-prompt",
        vec![
            (
                "lastPrompt",
                json!("Run the ledger tests and fix what fails. Keep the public API as it is."),
            ),
            ("leafUuid", json!(last)),
        ],
    );
    w.record("mode", vec![("mode", json!("normal"))]);
    let mode = w.lines.pop().unwrap();
    w.lines.last_mut().unwrap().push_str(&mode);
    w.record(
        "cost-state",
        vec![
            ("totalCostUSD", json!(0.4182)),
            ("totalAPIDuration", json!(48_211)),
            (
                "modelUsage",
                json!({"claude-sonnet-5": {"inputTokens": 91_000, "outputTokens": 2_140}}),
            ),
        ],
    );

    // A person's `!` command and its output.
    w.row(
        "user",
        vec![(
            "message",
            json!({"role": "user", "content": "<bash-input>git status --short</bash-input>"}),
        )],
    );
    w.row(
        "user",
        vec![("message", json!({"role": "user", "content": "<bash-stdout> M src/ledger.rs\n?? src/refund.rs</bash-stdout><bash-stderr></bash-stderr>"}))],
    );

    // `/compact`: the boundary, the summary, then the command's own rows.
    let before = w.parent.clone();
    let boundary_id = uuid(&mut w.rng);
    let summary_id = uuid(&mut w.rng);
    let ts = w.ts();
    let mut boundary = vec![
        ("parentUuid", json!(null)),
        ("logicalParentUuid", json!(before)),
        ("isSidechain", json!(false)),
        ("type", json!("system")),
        ("subtype", json!("compact_boundary")),
        ("content", json!("Conversation compacted")),
        ("level", json!("info")),
        (
            "compactMetadata",
            json!({"trigger": "manual", "preTokens": 48_211, "postTokens": 3_050,
                "preservedSegment": {"headUuid": last, "anchorUuid": summary_id, "tailUuid": before},
                "preservedMessages": {"anchorUuid": summary_id, "uuids": [last], "allUuids": [last]}}),
        ),
        ("uuid", json!(boundary_id)),
        ("timestamp", json!(ts)),
    ];
    boundary.extend(w.envelope());
    w.lines.push(line(&boundary));
    w.parent = Some(boundary_id);
    w.attachment(
        json!({"type": "date", "date": "2026-11-28"}),
        "<system-reminder>Today's date is 2026-11-28.</system-reminder>",
    );
    let ts = w.ts();
    let mut summary = vec![
        ("parentUuid", json!(w.parent)),
        ("isSidechain", json!(false)),
        ("type", json!("user")),
        (
            "message",
            json!({"role": "user", "content": "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n1. The ledger tests failed on refunds: `total` underflowed.\n2. src/ledger.rs now saturates; src/refund.rs was added.\n3. tools/reconcile.py fails with KeyError: 'amount' (not fixed)."}),
        ),
        ("isVisibleInTranscriptOnly", json!(true)),
        ("isCompactSummary", json!(true)),
        ("uuid", json!(summary_id)),
        ("timestamp", json!(ts)),
    ];
    summary.extend(w.envelope());
    w.lines.push(line(&summary));
    w.parent = Some(summary_id);
    w.row(
        "user",
        vec![
            ("message", json!({"role": "user", "content": "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages.</local-command-caveat>"})),
            ("isMeta", json!(true)),
        ],
    );
    w.row(
        "user",
        vec![("message", json!({"role": "user", "content": "<command-name>/compact</command-name>\n<command-message>compact</command-message>\n<command-args></command-args>"}))],
    );
    w.row(
        "user",
        vec![("message", json!({"role": "user", "content": "<local-command-stdout>Compacted (ctrl+o to see full summary)</local-command-stdout>"}))],
    );

    // A subagent, in the background, and its notification.
    w.prompt("Have an agent list what the reconcile tool reads");
    let output = format!("/tmp/claude-1000/-home-dev-shop/{SESSION}/tasks/{AGENT}.output");
    w.call(
        "Agent",
        json!({"description": "List reconcile inputs", "prompt": "List the files tools/reconcile.py reads.", "subagent_type": "general-purpose"}),
        json!([{"type": "text", "text": format!("Async agent launched successfully.\nagentId: {AGENT}\noutput_file: {output}")}]),
        false,
        json!({"isAsync": true, "status": "async_launched", "agentId": AGENT, "description": "List reconcile inputs", "outputFile": output}),
    );
    w.row(
        "user",
        vec![("message", json!({"role": "user", "content": format!("<task-notification>\n<task-id>{AGENT}</task-id>\n<status>completed</status>\n<result>tools/reconcile.py reads data/payments.csv.</result>\n</task-notification>")}))],
    );
    let reply = format!("msg_{}", rng.hex(24));
    w.assistant(
        &reply,
        json!({"type": "text", "text": "The reconcile tool reads data/payments.csv only."}),
        4_100,
    );
    w.record(
        "custom-title",
        vec![("customTitle", json!("Ledger refund fixes"))],
    );
    w.record(
        "agent-name",
        vec![("agentName", json!("Ledger refund fixes"))],
    );
    w.bytes()
}

/// The subagent [`session`] launched: its rows are sidechain rows naming it, under the parent's
/// `sessionId`.
pub fn subagent() -> Vec<u8> {
    let mut w = Writer::new(0x0f1d_c0a1, SESSION, Some(AGENT));
    w.row(
        "user",
        vec![(
            "message",
            json!({"role": "user", "content": "List the files tools/reconcile.py reads."}),
        )],
    );
    w.bash(
        "grep -n open tools/reconcile.py",
        "12:    with open(\"data/payments.csv\") as f:",
        None,
    );
    let message = format!("msg_{}", w.rng.hex(24));
    w.assistant(
        &message,
        json!({"type": "text", "text": "tools/reconcile.py reads data/payments.csv."}),
        2_300,
    );
    w.bytes()
}

/// Claude Code 1.0.x: a `summary` line first (the title), rows with the envelope first, an
/// assistant message of several blocks, a `progress` row the next row hangs from, an inline
/// sidechain, and a `file-history-snapshot`.
pub fn legacy() -> Vec<u8> {
    let mut rng = Rng(0x0f1d_c002);
    let cwd = "/home/dev/queue";
    let ids: Vec<String> = (0..7).map(|_| uuid(&mut rng)).collect();
    let row = |i: usize,
               parent: Option<&str>,
               sidechain: bool,
               kind: &str,
               rest: Vec<(&'static str, Value)>| {
        let mut fields = vec![
            ("parentUuid", json!(parent)),
            ("isSidechain", json!(sidechain)),
            ("userType", json!("external")),
            ("cwd", json!(cwd)),
            ("sessionId", json!(LEGACY)),
            ("version", json!("1.0.17")),
            ("gitBranch", json!("")),
            ("type", json!(kind)),
        ];
        fields.extend(rest);
        fields.push(("uuid", json!(ids[i])));
        fields.push(("timestamp", json!(at("2025-06-10", i as u64 * 5))));
        line(&fields)
    };
    let call = format!("toolu_{}", rng.hex(24));
    let test_log = cargo_test_log(&mut rng, "queue", 12, &["queue::drains_in_order"]);
    let lines = [
        line(&[
            ("type", json!("summary")),
            ("summary", json!("Flaky queue drain test")),
            ("leafUuid", json!(ids[5])),
        ]),
        row(
            0,
            None,
            false,
            "user",
            vec![(
                "message",
                json!({"role": "user", "content": "why does queue::drains_in_order fail one run in ten?"}),
            )],
        ),
        row(
            1,
            Some(&ids[0]),
            false,
            "assistant",
            vec![
                (
                    "message",
                    json!({"id": format!("msg_{}", rng.hex(24)), "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
                "content": [{"type": "text", "text": "Let me run it a few times."},
                    {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "for i in 1 2 3; do cargo test -q queue::drains_in_order; done", "description": "Run the test three times"}}],
                "stop_reason": null, "usage": {"input_tokens": 4, "cache_creation_input_tokens": 2_100, "cache_read_input_tokens": 11_000, "output_tokens": 95}}),
                ),
                ("requestId", json!(format!("req_{}", rng.hex(24)))),
            ],
        ),
        row(
            2,
            Some(&ids[1]),
            false,
            "progress",
            vec![(
                "data",
                json!({"type": "bash_progress", "output": "running 1 test", "elapsedTimeSeconds": 3}),
            )],
        ),
        row(
            3,
            Some(&ids[2]),
            false,
            "user",
            vec![
                (
                    "message",
                    json!({"role": "user", "content": [{"tool_use_id": call, "type": "tool_result", "content": format!("Exit code 101\n{test_log}"), "is_error": true}]}),
                ),
                (
                    "toolUseResult",
                    json!(format!("Error: Exit code 101\n{test_log}")),
                ),
            ],
        ),
        row(
            4,
            Some(&ids[3]),
            true,
            "user",
            vec![(
                "message",
                json!({"role": "user", "content": "Find where the queue spawns its drain thread."}),
            )],
        ),
        row(
            5,
            Some(&ids[3]),
            false,
            "assistant",
            vec![(
                "message",
                json!({"id": format!("msg_{}", rng.hex(24)), "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
                "content": [{"type": "text", "text": "The drain thread races the final push: join it before asserting the order."}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 4, "cache_read_input_tokens": 13_400, "output_tokens": 40}}),
            )],
        ),
        line(&[
            ("type", json!("file-history-snapshot")),
            ("messageId", json!(ids[5])),
            (
                "snapshot",
                json!({"messageId": ids[5], "trackedFileBackups": {}, "timestamp": at("2025-06-10", 40)}),
            ),
            ("isSnapshotUpdate", json!(false)),
        ]),
    ];
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}
