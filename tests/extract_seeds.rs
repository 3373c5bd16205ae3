//! ctxfold-extract-seeds and ctxfold-verify-span over the fixtures (own, and public when present)
//! and a Pi v3 session built from formats.md: every span written is found and verified, from the raw file and from the store
//! alone once the source is gone; the records follow the block model, caps and lexicon rules.

mod common;
#[path = "support/pi_v3.rs"]
mod pi_v3;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use common::{Env, fixture_files, own, own_fixture};
use ctxfold::ledger::{FileSource, Ledger};
use serde_json::Value;

fn records(env: &Env, args: &[&str]) -> Vec<Value> {
    let run = env.run("ctxfold-extract-seeds", args).ok();
    run.stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `(blockId, sha256)` of every span of `records`, once each.
fn spans(records: &[Value]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for r in records {
        for s in r["spans"].as_array().unwrap() {
            out.insert((
                s["blockId"].as_str().unwrap().into(),
                s["sha256"].as_str().unwrap().into(),
            ));
        }
    }
    out
}

fn batch_input(spans: &BTreeSet<(String, String)>) -> Vec<u8> {
    spans
        .iter()
        .map(|(id, sha)| format!("{id}\t{sha}\n"))
        .collect::<String>()
        .into_bytes()
}

/// Fold `file` into the store with the plumbing, as session `id`.
fn fold(env: &Env, file: &Path, id: &str) {
    let parts = env
        .run("ctxfold-split", [OsArg::from("--write"), file.into()])
        .ok();
    let source = file.to_str().unwrap();
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", id, "--source", source],
        &parts.stdout,
    )
    .ok();
}

type OsArg = std::ffi::OsString;

/// Every ledger the tests read: the fixtures, a `.zst` copy of one, and the Pi v3 session.
fn ledgers(env: &Env) -> Vec<PathBuf> {
    let mut files = fixture_files();
    let codex = own_fixture(own::CODEX_SHELL_CRLF);
    let packed = env.path("rollout-packed.jsonl.zst");
    std::fs::write(
        &packed,
        zstd::encode_all(&std::fs::read(&codex).unwrap()[..], 3).unwrap(),
    )
    .unwrap();
    files.push(packed);
    files.push(pi_v3::write(env.dir.path()));
    files
}

#[test]
fn every_span_verifies_from_the_raw_file_and_from_the_store_alone() {
    let env = Env::new();
    for (n, original) in ledgers(&env).into_iter().enumerate() {
        let name = original.to_str().unwrap();
        let written = records(&env, &["--final", name]);
        let spans = spans(&written);
        assert!(!spans.is_empty(), "{name}: no spans");
        let run = env
            .run_with_stdin(
                "ctxfold-verify-span",
                ["--batch", name],
                &batch_input(&spans),
            )
            .ok();
        assert_eq!(
            run.stdout_text()
                .lines()
                .filter(|l| l.ends_with("\tverified"))
                .count(),
            spans.len(),
            "{name}"
        );

        // Fold a copy, remove it, and verify from the store alone.
        let copy = env.path(&format!("copy-{n}.jsonl"));
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut ctxfold::input::open(&original).unwrap(), &mut bytes)
            .unwrap();
        std::fs::write(&copy, &bytes).unwrap();
        let id = format!("session-{n}");
        fold(&env, &copy, &id);
        std::fs::remove_file(&copy).unwrap();
        let run = env
            .run_with_stdin(
                "ctxfold-verify-span",
                ["--batch", "--session", &id],
                &batch_input(&spans),
            )
            .ok();
        assert_eq!(
            run.stdout_text()
                .lines()
                .filter(|l| l.ends_with("\tverified"))
                .count(),
            spans.len(),
            "{name}"
        );
        let from_store = env
            .run("ctxfold-extract-seeds", ["--final", "--session", &id])
            .ok();
        let from_file = env.run("ctxfold-extract-seeds", ["--final", name]).ok();
        assert_eq!(
            from_store.stdout, from_file.stdout,
            "{name}: the same records from the store"
        );
    }
}

/// The porcelain way: `fold --apply --remove-source --allow-active` indexes each session into the
/// store and removes its source; every span of the store's index then verifies from the store alone.
#[test]
fn fold_indexes_every_session_and_its_spans_verify_from_the_store_alone() {
    let env = Env::new();
    let sources = env.path("sources");
    std::fs::create_dir_all(&sources).unwrap();
    let mut copies = Vec::new();
    // The `.zst` copy shares its id with the fixture it was made from: one of the two is enough.
    let ledgers = ledgers(&env)
        .into_iter()
        .filter(|l| !ctxfold::input::is_zstd(l));
    for (n, original) in ledgers.enumerate() {
        let name = original.file_name().unwrap().to_string_lossy().into_owned();
        let copy = sources.join(format!("{n}-{name}"));
        std::fs::copy(&original, &copy).unwrap();
        copies.push(copy);
    }
    let run = env
        .run(
            "ctxfold",
            [
                OsArg::from("fold"),
                "--apply".into(),
                "--remove-source".into(),
                "--allow-active".into(),
                "--json".into(),
                sources.clone().into(),
            ],
        )
        .ok();
    let reports: Vec<Value> = run
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let folded: Vec<&Value> = reports.iter().filter(|r| r["action"] == "fold").collect();
    assert_eq!(folded.len(), copies.len(), "{}", run.stdout_text());
    for copy in &copies {
        assert!(!copy.exists(), "{} was not removed", copy.display());
    }
    for report in folded {
        let id = report["id"].as_str().unwrap();
        assert!(
            report["seed_records"].as_u64().unwrap() >= 1,
            "{id}: nothing indexed"
        );
        let written: Vec<Value> = env
            .stored_seed_index(&env.store, id)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let spans = spans(&written);
        assert!(!spans.is_empty(), "{id}: no spans");
        let run = env
            .run_with_stdin(
                "ctxfold-verify-span",
                ["--batch", "--session", id],
                &batch_input(&spans),
            )
            .ok();
        let verified = run
            .stdout_text()
            .lines()
            .filter(|l| l.ends_with("\tverified"))
            .count();
        assert_eq!(verified, spans.len(), "{id}");
    }
    // A second fold finds nothing to do and indexes nothing twice.
    let before = Env::snapshot(&env.store.join("seeds"));
    env.run(
        "ctxfold",
        [OsArg::from("fold"), "--apply".into(), sources.into()],
    )
    .ok();
    assert_eq!(Env::snapshot(&env.store.join("seeds")), before);
}

#[test]
fn identifiers_and_errors_appear_verbatim_in_their_records_spans() {
    let env = Env::new();
    for file in ledgers(&env) {
        let name = file.to_str().unwrap();
        for record in records(&env, &["--final", name]) {
            let ids: HashSet<String> = record["spans"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["blockId"].as_str().unwrap().into())
                .collect();
            let source = FileSource(file.clone());
            let ledger = Ledger::scan(&source).unwrap();
            let blocks = ledger.resolve(&ids).unwrap();
            // Resolved keeping some: every block found, the others' without their text.
            let even = |text: &str| text.len().is_multiple_of(2);
            let kept = ledger.resolve_where(&ids, &|b| even(&b.text)).unwrap();
            assert_eq!(kept.len(), blocks.len());
            for (id, block) in &kept {
                let text = block.as_ref().map(|b| &b.text);
                assert_eq!(text, even(&blocks[id].text).then_some(&blocks[id].text));
            }
            let texts: Vec<&str> = blocks.values().map(|b| b.text.as_str()).collect();
            let fields = record["identifiers"]
                .as_array()
                .unwrap()
                .iter()
                .chain(record["errors"].as_array().unwrap());
            for value in fields {
                let value = value.as_str().unwrap();
                assert!(
                    texts.iter().any(|t| t.contains(value)),
                    "{name}: {value:?} is in no span of its record"
                );
            }
            assert!(record["identifiers"].as_array().unwrap().len() <= 64);
            assert!(record["errors"].as_array().unwrap().len() <= 24);
            for e in record["errors"].as_array().unwrap() {
                assert!(e.as_str().unwrap().chars().count() <= 240);
            }
            for u in record["userMessages"].as_array().unwrap() {
                assert!(u["firstLine"].as_str().unwrap().chars().count() <= 200);
            }
        }
    }
}

fn span_ids(record: &Value) -> Vec<&str> {
    record["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["blockId"].as_str().unwrap())
        .collect()
}

#[test]
fn pi_v3_records_follow_the_branch_the_edits_and_the_compactions() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let name = file.to_str().unwrap();
    let all = records(&env, &["--final", name]);
    assert_eq!(all.len(), 3);
    let (first, second, last) = (&all[0], &all[1], &all[2]);
    assert_eq!(
        (first["seq"].as_u64(), first["trigger"].as_str()),
        (Some(1), Some("compact"))
    );
    assert_eq!(first["at"], "2026-08-01T10:00:05.000Z");
    assert_eq!(first["usage"]["tokens"], 50000);
    assert_eq!(first["session"], pi_v3::SESSION_ID);
    assert_eq!(first["v"], 2);
    // Before the first kept entry, with the null edit omitting a:t1003:p0.
    assert_eq!(span_ids(first), ["a:resp_1:p0", "r:c1"]);
    assert_eq!(first["userMessages"][0]["firstLine"], "build the thing");
    assert_eq!(first["userMessages"][0]["turn"], 1);
    assert_eq!(first["commands"], serde_json::json!(["npm test"]));
    let c1 = &first["spans"][1];
    assert_eq!(c1["tool"], "bash");
    assert_eq!(c1["code"], "0qq769");
    assert_eq!(c1["turn"], 1);
    assert_eq!(c1["log"]["bytes"], pi_v3::large_output().len());
    assert_eq!(c1["log"]["lines"], pi_v3::large_output().lines().count());
    // The second compaction re-extracts from the start, the replacement in place of the original.
    assert_eq!(
        span_ids(second),
        [
            "a:resp_1:p0",
            "r:c1",
            "r:c2:edit:e0000008",
            "s:2026-08-01T10:00:05.000Z"
        ]
    );
    assert_eq!(second["usage"]["tokens"], 90000);
    assert!(
        second["files"]
            .as_array()
            .unwrap()
            .contains(&"src/lib.rs".into()),
        "{}",
        second["files"]
    );
    // The final record: the active branch only (no abandoned reply), no span for an image result.
    let ids = span_ids(last);
    assert!(
        ids.contains(&"r:call_x|fc_y")
            && ids.contains(&"a:resp_4:p1")
            && ids.contains(&"a:resp_5:p0")
    );
    assert!(
        !ids.iter().any(|i| i.starts_with("a:resp_3")
            || *i == "r:c4"
            || *i == "a:t1003:p0"
            || *i == "r:c2")
    );
    let turns: Vec<_> = last["userMessages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [1, 2, 3, 4]);
    assert_eq!(
        last["commands"],
        serde_json::json!(["npm test", "cargo build --release"])
    );
    // Deterministic: the same bytes again.
    let again = env.run("ctxfold-extract-seeds", ["--final", name]).ok();
    let once = env.run("ctxfold-extract-seeds", ["--final", name]).ok();
    assert_eq!(again.stdout, once.stdout);
}

#[test]
fn needles_in_a_large_output_are_found_and_zero_counts_are_not_errors() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let record = records(&env, &[file.to_str().unwrap()]).remove(0);
    let errors: Vec<&str> = record["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    for needle in pi_v3::NEEDLE_ERRORS {
        assert!(errors.contains(needle), "{needle:?} not in {errors:#?}");
    }
    assert!(!errors.iter().any(|e| e.contains(pi_v3::NOT_AN_ERROR)));
    let flood = errors.iter().filter(|e| e.starts_with("ERROR")).count();
    assert!(
        flood > 0 && flood < errors.len(),
        "the ERROR flood took {flood} of {} slots",
        errors.len()
    );
    let identifiers = record["identifiers"].as_array().unwrap();
    for needle in [pi_v3::HEX_ID, pi_v3::VERSION] {
        assert!(
            identifiers.contains(&needle.into()),
            "{needle} not in {identifiers:?}"
        );
    }
}

#[test]
fn a_fold_event_covers_the_context_view_through_an_entry() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let args = [
        "--through",
        "e0000016",
        "--trigger",
        "threshold",
        "--seq",
        "7",
        "--tokens",
        "1000",
        "--context-window",
        "2000",
    ];
    let mut all = vec![file.to_str().unwrap()];
    all.extend(args);
    let got = records(&env, &all);
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(
        (r["seq"].as_u64(), r["trigger"].as_str()),
        (Some(7), Some("threshold"))
    );
    assert_eq!(
        r["usage"],
        serde_json::json!({"tokens": 1000, "contextWindow": 2000, "fraction": 0.5})
    );
    assert_eq!(r["at"], "2026-08-01T10:00:02.000Z");
    // Tool results and thinking after the first compaction's first kept entry; turns restart.
    assert_eq!(
        span_ids(r),
        ["r:c2:edit:e0000008", "a:resp_4:p1", "r:call_x|fc_y"]
    );
    assert_eq!(r["spans"][2]["turn"], 2);
    env.run(
        "ctxfold-extract-seeds",
        [
            file.to_str().unwrap(),
            "--through",
            "nope",
            "--trigger",
            "cap",
            "--seq",
            "1",
            "--tokens",
            "1",
            "--context-window",
            "2",
        ],
    )
    .fails(1)
    .one_line_error("no such entry");
    env.run(
        "ctxfold-extract-seeds",
        [file.to_str().unwrap(), "--through", "e0000016"],
    )
    .fails(2);
}

#[test]
fn verify_span_serves_text_only_when_it_matches() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let name = file.to_str().unwrap();
    for id in [
        "r:c1",
        "a:resp_1:p0",
        "r:c2",
        "r:c2:edit:e0000008",
        "r:call_x|fc_y",
        "a:resp_3:p0",
        "a:t1003:p0",
    ] {
        let text = pi_v3::block_text(id).unwrap();
        let sha = ctxfold::digest::Digest::of(text.as_bytes()).to_hex();
        let run = env
            .run("ctxfold-verify-span", [name, id, "--sha256", &sha])
            .ok();
        assert_eq!(run.stdout, text.as_bytes(), "{id}");
        assert_eq!(run.stderr, "");
    }
    let unverified = env.run("ctxfold-verify-span", [name, "a:resp_1:p0"]).ok();
    assert_eq!(unverified.stdout, b"let me run the tests");
    assert!(unverified.stderr.contains("unverified"));
    let wrong = "0".repeat(64);
    let run = env
        .run("ctxfold-verify-span", [name, "r:c1", "--sha256", &wrong])
        .fails(1)
        .one_line_error("the span says");
    assert!(run.stdout.is_empty());
    env.run("ctxfold-verify-span", [name, "r:nope"])
        .fails(1)
        .one_line_error("no block");
    env.run("ctxfold-verify-span", [name, "r:c1", "--sha256", "xyz"])
        .fails(2);
    env.run(
        "ctxfold-verify-span",
        [env.path("missing.jsonl").to_str().unwrap(), "r:c1"],
    )
    .fails(1)
    .one_line_error("missing.jsonl");
}

#[test]
fn bad_ledgers_get_one_line_errors_and_bad_lines_are_passed_over() {
    let env = Env::new();
    let junk = env.path("junk.jsonl");
    std::fs::write(&junk, "not json\nstill not\n").unwrap();
    env.run("ctxfold-extract-seeds", [junk.to_str().unwrap()])
        .fails(3)
        .one_line_error("not a session ledger");
    // Its line with two JSON objects is the one passed over.
    one_line_passed_over(&env, &own_fixture(own::PI_V1_COMPACTION));
}

/// The public Pi session's line 440 holds two JSON objects.
#[test]
fn public_pi_session_has_one_line_passed_over() {
    if let Some(pi) = common::public_fixture("pi/session.jsonl") {
        one_line_passed_over(&Env::new(), &pi);
    }
}

fn one_line_passed_over(env: &Env, ledger: &Path) {
    let run = env
        .run("ctxfold-extract-seeds", [ledger.to_str().unwrap()])
        .ok();
    assert!(
        run.stderr.contains("1 unparseable lines passed over"),
        "{}",
        run.stderr
    );
}

/// A rollout in the newest Codex shape (0.169: `ordinal` on every line, `metadata` on response items,
/// `world_state` and `token_usage_record` lines, `event_msg/item_completed`), with a `compacted` line.
fn newest_codex(env: &Env) -> PathBuf {
    let blob = format!("gAAAAB{}", "Qk1XWXZ6".repeat(200));
    let lines = [
        serde_json::json!({"timestamp": "2026-09-01T10:00:00.000Z", "ordinal": 0, "type": "session_meta", "payload": {"id": "019f0000-0000-7000-8000-000000000001", "cwd": "/home/u/repo", "cli_version": "0.169.0"}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:01.000Z", "ordinal": 1, "type": "world_state", "payload": {"anything": [1, 2]}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:02.000Z", "ordinal": 2, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}, "metadata": {"turn": 1}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:02.000Z", "ordinal": 3, "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "make the build pass"}], "metadata": {"x": 1}}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:03.000Z", "ordinal": 4, "type": "response_item", "payload": {"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Planning** the build"}], "content": null, "encrypted_content": blob}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:03.000Z", "ordinal": 5, "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\":\"cargo build\",\"workdir\":\"/home/u/repo\"}", "call_id": "call_A"}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:04.000Z", "ordinal": 6, "type": "response_item", "payload": {"type": "function_call_output", "call_id": "call_A", "output": "Process exited with code 101\nOutput:\nerror[E0425]: cannot find value `WIDGET_LIMIT_V2` in src/widget.rs"}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:04.500Z", "ordinal": 7, "type": "event_msg", "payload": {"type": "item_completed", "item": {"type": "CommandExecution"}}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:05.000Z", "ordinal": 8, "type": "event_msg", "payload": {"type": "token_count", "info": {"last_token_usage": {"total_tokens": 120000}, "model_context_window": 240000}}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:05.100Z", "ordinal": 9, "type": "token_usage_record", "payload": {"tokens": 5}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:06.000Z", "ordinal": 10, "type": "compacted", "payload": {"message": "the build failed on WIDGET_LIMIT_V2", "replacement_history": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "make the build pass"}]}], "window_number": 2}}),
        serde_json::json!({"timestamp": "2026-09-01T10:00:07.000Z", "ordinal": 11, "type": "response_item", "payload": {"type": "message", "role": "assistant", "id": "msg_9", "content": [{"type": "output_text", "text": "fixed"}], "phase": "final_answer"}}),
    ];
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str("{\"truncated\n");
    let path = env.path("rollout-2026-09-01T10-00-00-019f0000-0000-7000-8000-000000000001.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_newest_codex_shape_and_a_compacted_line() {
    let env = Env::new();
    let file = newest_codex(&env);
    let name = file.to_str().unwrap();
    let run = env.run("ctxfold-extract-seeds", ["--final", name]).ok();
    assert!(run.stderr.contains("1 unparseable lines"), "{}", run.stderr);
    let all: Vec<Value> = run
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(all.len(), 2);
    let compact = &all[0];
    assert_eq!(compact["session"], "019f0000-0000-7000-8000-000000000001");
    assert_eq!(compact["at"], "2026-09-01T10:00:06.000Z");
    assert_eq!(
        compact["usage"],
        serde_json::json!({"tokens": 120000, "contextWindow": 240000, "fraction": 0.5})
    );
    assert_eq!(
        span_ids(compact),
        ["a:t2026-09-01T10:00:03.000Z:p0", "r:call_A"]
    );
    assert_eq!(compact["spans"][1]["tool"], "exec_command");
    assert_eq!(compact["commands"], serde_json::json!(["cargo build"]));
    assert_eq!(
        compact["userMessages"],
        serde_json::json!([{"turn": 1, "firstLine": "make the build pass"}])
    );
    assert!(
        compact["identifiers"]
            .as_array()
            .unwrap()
            .contains(&"WIDGET_LIMIT_V2".into())
    );
    assert!(
        compact["files"]
            .as_array()
            .unwrap()
            .contains(&"src/widget.rs".into())
    );
    assert_eq!(
        compact["errors"][0],
        "error[E0425]: cannot find value `WIDGET_LIMIT_V2` in src/widget.rs"
    );
    let everything = run.stdout_text();
    assert!(
        !everything.contains("gAAAAB") && !everything.contains("Qk1XWXZ6"),
        "encrypted reasoning indexed"
    );
    // The final record spans the compaction summary and the reply after it too.
    assert_eq!(
        span_ids(&all[1])[2..],
        ["s:2026-09-01T10:00:06.000Z", "a:msg_9:p0"]
    );
    let spans = spans(&all);
    let run = env
        .run_with_stdin(
            "ctxfold-verify-span",
            ["--batch", name],
            &batch_input(&spans),
        )
        .ok();
    assert_eq!(
        run.stdout_text()
            .lines()
            .filter(|l| l.ends_with("\tverified"))
            .count(),
        spans.len()
    );
}

#[test]
fn a_lone_surrogate_reads_as_the_extension_hashes_it() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let line = r#"{"type":"message","id":"e0000020","parentId":"e0000019","timestamp":"t","message":{"role":"toolResult","toolCallId":"c9","toolName":"bash","content":[{"type":"text","text":"cut \ud83d"}],"isError":false,"timestamp":2000}}"#;
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(line);
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let name = file.to_str().unwrap();
    let last = records(&env, &["--final", name]).pop().unwrap();
    let span = last["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["blockId"] == "r:c9")
        .unwrap()
        .clone();
    // Node: sha256 of the UTF-8 encoding, the lone surrogate as U+FFFD.
    assert_eq!(
        span["sha256"],
        ctxfold::digest::Digest::of("cut \u{fffd}".as_bytes()).to_hex()
    );
    assert_eq!(span["log"]["bytes"], 7);
    let run = env
        .run(
            "ctxfold-verify-span",
            [name, "r:c9", "--sha256", span["sha256"].as_str().unwrap()],
        )
        .ok();
    assert_eq!(run.stdout, "cut \u{fffd}".as_bytes());
}

/// A Codex rollout of `compactions` compactions, each after `calls` commands with outputs of their
/// own: its seed index grows with the square of its compactions (each record re-lists every
/// earlier span).
fn long_codex(env: &Env, id: &str, compactions: usize, calls: usize) -> PathBuf {
    let at = |n: usize| {
        format!(
            "2026-10-01T{:02}:{:02}:{:02}.000Z",
            n / 3600,
            n / 60 % 60,
            n % 60
        )
    };
    let mut lines = vec![
        serde_json::json!({"timestamp": at(0), "type": "session_meta", "payload": {"id": id, "cwd": "/home/u/repo", "cli_version": "0.120.0"}}),
    ];
    let mut n = 0;
    for c in 0..compactions {
        n += 1;
        lines.push(serde_json::json!({"timestamp": at(n), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("step {c}: make widget_{c} pass")}]}}));
        for k in 0..calls {
            n += 1;
            let call = format!("call_{c}_{k}");
            lines.push(serde_json::json!({"timestamp": at(n), "type": "response_item", "payload": {"type": "function_call", "name": "exec_command", "arguments": format!("{{\"cmd\":\"cargo test widget_{c}_{k}\"}}"), "call_id": call}}));
            lines.push(serde_json::json!({"timestamp": at(n), "type": "response_item", "payload": {"type": "function_call_output", "call_id": call, "output": format!("running 1 test\ntest widget_{c}_{k} ... ok\n")}}));
        }
        lines.push(serde_json::json!({"timestamp": at(n), "type": "compacted", "payload": {"message": format!("widget_{c} passes"), "replacement_history": []}}));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = env.path(&format!("long/rollout-2026-10-01T00-00-00-{id}.jsonl"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// A record as extracted and as stored differ in their seq only.
fn without_seq(mut record: Value) -> Value {
    record["seq"] = 0.into();
    record
}

/// A session whose seed index is larger than a batch is stored in several batches, handed to the
/// pack while its records are still being extracted; read back, they are its extraction, and a
/// fold of it grown appends only its new records.
#[test]
fn a_long_sessions_index_is_stored_in_several_batches_that_read_as_its_extraction() {
    let env = Env::new();
    let id = "019f0000-0000-7000-8000-00000000b0b0";
    // Enough compactions for records past two batches.
    let compactions = 80;
    let file = long_codex(&env, id, compactions, 64);
    let name = file.to_str().unwrap();
    let fold = || {
        let run = env
            .run(
                "ctxfold",
                [
                    "fold",
                    "--apply",
                    "--json",
                    file.parent().unwrap().to_str().unwrap(),
                ],
            )
            .ok();
        let report: Value =
            serde_json::from_str(run.stdout_text().lines().next().unwrap()).unwrap();
        assert_eq!(report["action"], "fold", "{}", run.stdout_text());
        report["seed_records"].as_u64().unwrap()
    };
    let stored = || -> Vec<Value> {
        env.stored_seed_index(&env.store, id)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let records_made = compactions as u64 + 1;
    assert_eq!(fold(), records_made);
    let catalog = std::fs::read_to_string(env.store.join("seeds/catalog.jsonl")).unwrap();
    let sizes: Vec<u64> = catalog
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|b| b["session"] == id)
        .map(|b| b["bytes"].as_u64().unwrap())
        .collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    let limit = ctxfold::seeds::index::BATCH_BYTES as u64;
    assert!(
        sizes[..sizes.len() - 1].iter().all(|&s| s >= limit),
        "{sizes:?}"
    );
    let extracted = records(&env, &["--final", name]);
    let first = stored();
    assert_eq!(
        first.iter().cloned().map(without_seq).collect::<Vec<_>>(),
        extracted.into_iter().map(without_seq).collect::<Vec<_>>()
    );
    let seqs: Vec<u64> = first.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1_000_001..=1_000_000 + records_made).collect::<Vec<_>>()
    );
    env.run("ctxfold", ["fsck"]).ok();

    // Grown by one more step: its compactions' records are held already; the grown final record
    // is new.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!(
        "{}\n",
        serde_json::json!({"timestamp": "2026-10-02T00:00:00.000Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "one more step"}]}})
    ));
    std::fs::write(&file, text).unwrap();
    assert_eq!(fold(), 1);
    let grown = stored();
    assert_eq!(grown[..first.len()], first[..]);
    assert_eq!(grown.last().unwrap()["seq"], 1_000_001 + records_made);
    assert_eq!(
        without_seq(grown.last().unwrap().clone()),
        without_seq(records(&env, &["--final", name]).pop().unwrap())
    );
}
