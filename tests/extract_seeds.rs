//! ctxfold-extract-seeds and ctxfold-verify-span over the real fixtures and a Pi v3 session built
//! from formats.md: every span written is found and verified, from the raw file and from the store
//! alone once the source is gone; the records follow the block model, caps and lexicon rules.

mod common;
#[path = "support/pi_v3.rs"]
mod pi_v3;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use common::{Env, fixture_files};
use ctxfold::ledger::{FileSource, Ledger};
use serde_json::Value;

fn records(env: &Env, args: &[&str]) -> Vec<Value> {
    let run = env.run("ctxfold-extract-seeds", args).ok();
    run.stdout_text().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// `(blockId, sha256)` of every span of `records`, once each.
fn spans(records: &[Value]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for r in records {
        for s in r["spans"].as_array().unwrap() {
            out.insert((s["blockId"].as_str().unwrap().into(), s["sha256"].as_str().unwrap().into()));
        }
    }
    out
}

fn batch_input(spans: &BTreeSet<(String, String)>) -> Vec<u8> {
    spans.iter().map(|(id, sha)| format!("{id}\t{sha}\n")).collect::<String>().into_bytes()
}

/// Fold `file` into the store with the plumbing, as session `id`.
fn fold(env: &Env, file: &Path, id: &str) {
    let parts = env.run("ctxfold-split", [OsArg::from("--write"), file.into()]).ok();
    let source = file.to_str().unwrap();
    env.run_with_stdin("ctxfold-write-manifest", ["--session-id", id, "--source", source], &parts.stdout).ok();
}

type OsArg = std::ffi::OsString;

/// Every ledger the tests read: the real fixtures, a `.zst` copy of one, and the Pi v3 session.
fn ledgers(env: &Env) -> Vec<PathBuf> {
    let mut files = fixture_files();
    let codex = files.iter().find(|f| f.to_string_lossy().contains("019b7f94")).unwrap().clone();
    let packed = env.path("rollout-packed.jsonl.zst");
    std::fs::write(&packed, zstd::encode_all(&std::fs::read(&codex).unwrap()[..], 3).unwrap()).unwrap();
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
        let run = env.run_with_stdin("ctxfold-verify-span", ["--batch", name], &batch_input(&spans)).ok();
        assert_eq!(run.stdout_text().lines().filter(|l| l.ends_with("\tverified")).count(), spans.len(), "{name}");

        // Fold a copy, remove it, and verify from the store alone.
        let copy = env.path(&format!("copy-{n}.jsonl"));
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut ctxfold::input::open(&original).unwrap(), &mut bytes).unwrap();
        std::fs::write(&copy, &bytes).unwrap();
        let id = format!("session-{n}");
        fold(&env, &copy, &id);
        std::fs::remove_file(&copy).unwrap();
        let run = env.run_with_stdin("ctxfold-verify-span", ["--batch", "--session", &id], &batch_input(&spans)).ok();
        assert_eq!(run.stdout_text().lines().filter(|l| l.ends_with("\tverified")).count(), spans.len(), "{name}");
        let from_store = env.run("ctxfold-extract-seeds", ["--final", "--session", &id]).ok();
        let from_file = env.run("ctxfold-extract-seeds", ["--final", name]).ok();
        assert_eq!(from_store.stdout, from_file.stdout, "{name}: the same records from the store");
    }
}

#[test]
fn identifiers_and_errors_appear_verbatim_in_their_records_spans() {
    let env = Env::new();
    for file in ledgers(&env) {
        let name = file.to_str().unwrap();
        for record in records(&env, &["--final", name]) {
            let ids: HashSet<String> =
                record["spans"].as_array().unwrap().iter().map(|s| s["blockId"].as_str().unwrap().into()).collect();
            let source = FileSource(file.clone());
            let blocks = Ledger::scan(&source).unwrap().resolve(&ids).unwrap();
            let texts: Vec<&str> = blocks.values().map(|b| b.text.as_str()).collect();
            let fields = record["identifiers"].as_array().unwrap().iter().chain(record["errors"].as_array().unwrap());
            for value in fields {
                let value = value.as_str().unwrap();
                assert!(texts.iter().any(|t| t.contains(value)), "{name}: {value:?} is in no span of its record");
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
    record["spans"].as_array().unwrap().iter().map(|s| s["blockId"].as_str().unwrap()).collect()
}

#[test]
fn pi_v3_records_follow_the_branch_the_edits_and_the_compactions() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let name = file.to_str().unwrap();
    let all = records(&env, &["--final", name]);
    assert_eq!(all.len(), 3);
    let (first, second, last) = (&all[0], &all[1], &all[2]);
    assert_eq!((first["seq"].as_u64(), first["trigger"].as_str()), (Some(1), Some("compact")));
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
    assert_eq!(span_ids(second), ["a:resp_1:p0", "r:c1", "r:c2:edit:e0000008", "s:2026-08-01T10:00:05.000Z"]);
    assert_eq!(second["usage"]["tokens"], 90000);
    assert!(second["files"].as_array().unwrap().contains(&"src/lib.rs".into()), "{}", second["files"]);
    // The final record: the active branch only (no abandoned reply), no span for an image result.
    let ids = span_ids(last);
    assert!(ids.contains(&"r:call_x|fc_y") && ids.contains(&"a:resp_4:p1") && ids.contains(&"a:resp_5:p0"));
    assert!(!ids.iter().any(|i| i.starts_with("a:resp_3") || *i == "r:c4" || *i == "a:t1003:p0" || *i == "r:c2"));
    let turns: Vec<_> = last["userMessages"].as_array().unwrap().iter().map(|u| u["turn"].as_u64().unwrap()).collect();
    assert_eq!(turns, [1, 2, 3, 4]);
    assert_eq!(last["commands"], serde_json::json!(["npm test", "cargo build --release"]));
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
    let errors: Vec<&str> = record["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    for needle in pi_v3::NEEDLE_ERRORS {
        assert!(errors.contains(needle), "{needle:?} not in {errors:#?}");
    }
    assert!(!errors.iter().any(|e| e.contains(pi_v3::NOT_AN_ERROR)));
    let flood = errors.iter().filter(|e| e.starts_with("ERROR")).count();
    assert!(flood > 0 && flood < errors.len(), "the ERROR flood took {flood} of {} slots", errors.len());
    let identifiers = record["identifiers"].as_array().unwrap();
    for needle in [pi_v3::HEX_ID, pi_v3::VERSION] {
        assert!(identifiers.contains(&needle.into()), "{needle} not in {identifiers:?}");
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
    assert_eq!((r["seq"].as_u64(), r["trigger"].as_str()), (Some(7), Some("threshold")));
    assert_eq!(r["usage"], serde_json::json!({"tokens": 1000, "contextWindow": 2000, "fraction": 0.5}));
    assert_eq!(r["at"], "2026-08-01T10:00:02.000Z");
    // Tool results and thinking after the first compaction's first kept entry; turns restart.
    assert_eq!(span_ids(r), ["r:c2:edit:e0000008", "a:resp_4:p1", "r:call_x|fc_y"]);
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
    env.run("ctxfold-extract-seeds", [file.to_str().unwrap(), "--through", "e0000016"]).fails(2);
}

#[test]
fn verify_span_serves_text_only_when_it_matches() {
    let env = Env::new();
    let file = pi_v3::write(env.dir.path());
    let name = file.to_str().unwrap();
    for id in ["r:c1", "a:resp_1:p0", "r:c2", "r:c2:edit:e0000008", "r:call_x|fc_y", "a:resp_3:p0", "a:t1003:p0"] {
        let text = pi_v3::block_text(id).unwrap();
        let sha = ctxfold::digest::Digest::of(text.as_bytes()).to_hex();
        let run = env.run("ctxfold-verify-span", [name, id, "--sha256", &sha]).ok();
        assert_eq!(run.stdout, text.as_bytes(), "{id}");
        assert_eq!(run.stderr, "");
    }
    let unverified = env.run("ctxfold-verify-span", [name, "a:resp_1:p0"]).ok();
    assert_eq!(unverified.stdout, b"let me run the tests");
    assert!(unverified.stderr.contains("unverified"));
    let wrong = "0".repeat(64);
    let run =
        env.run("ctxfold-verify-span", [name, "r:c1", "--sha256", &wrong]).fails(1).one_line_error("the span says");
    assert!(run.stdout.is_empty());
    env.run("ctxfold-verify-span", [name, "r:nope"]).fails(1).one_line_error("no block");
    env.run("ctxfold-verify-span", [name, "r:c1", "--sha256", "xyz"]).fails(2);
    env.run("ctxfold-verify-span", [env.path("missing.jsonl").to_str().unwrap(), "r:c1"])
        .fails(1)
        .one_line_error("missing.jsonl");
}

#[test]
fn bad_ledgers_get_one_line_errors_and_bad_lines_are_passed_over() {
    let env = Env::new();
    let junk = env.path("junk.jsonl");
    std::fs::write(&junk, "not json\nstill not\n").unwrap();
    env.run("ctxfold-extract-seeds", [junk.to_str().unwrap()]).fails(1).one_line_error("not a session ledger");
    let pi = fixture_files().into_iter().find(|f| f.ends_with("pi/session.jsonl")).unwrap();
    let run = env.run("ctxfold-extract-seeds", [pi.to_str().unwrap()]).ok();
    assert!(run.stderr.contains("1 unparseable lines passed over"), "{}", run.stderr);
}
