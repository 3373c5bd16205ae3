//! ctxfold-read-seeds: the union rules over a table of hand-written index files, the extension's
//! v1, v2 and v3 record shapes (whose spans, computed here by the compat rules, verify-span checks),
//! and the extension's own file locations beside a Pi session.

mod common;
#[path = "support/pi_v3.rs"]
mod pi_v3;

use common::Env;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn sha(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

fn read(env: &Env, text: &str) -> (Vec<Value>, String) {
    let file = env.path("index.jsonl");
    std::fs::write(&file, text).unwrap();
    let run = env.run("ctxfold-read-seeds", [file.to_str().unwrap()]).ok();
    (
        run.stdout_text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        run.stderr,
    )
}

fn rec(seq: u64, at: &str) -> Value {
    json!({"v": 2, "kind": "fold-index", "harness": "pi-context-fold", "session": "s", "seq": seq, "at": at,
        "trigger": "threshold", "files": [], "commands": [], "errors": [], "identifiers": [], "userMessages": [], "spans": []})
}

fn retract(seq: u64) -> Value {
    json!({"v": 2, "kind": "fold-retract", "seq": seq, "at": "r"})
}

#[test]
fn the_union_table() {
    let env = Env::new();
    let mut unknown = rec(3, "u3");
    unknown["futureField"] = json!({"nested": [1, 2]});
    unknown["spans"] = json!([{"blockId": "r:x", "log": {"bytes": 1, "lines": 1}, "sha256": sha("x"), "extraSpanField": true}]);
    let mut newer = rec(4, "v9");
    newer["v"] = json!(9);
    // (what, the file's lines, the (seq, at) that stand, notes on stderr)
    type Case<'a> = (&'a str, Vec<Value>, Vec<(u64, &'a str)>, usize);
    let table: Vec<Case<'_>> = vec![
        (
            "distinct seqs",
            vec![rec(1, "a"), rec(2, "b")],
            vec![(1, "a"), (2, "b")],
            0,
        ),
        (
            "duplicate seq: the latest stands",
            vec![rec(1, "a"), rec(2, "b"), rec(1, "a2")],
            vec![(2, "b"), (1, "a2")],
            0,
        ),
        (
            "retraction voids earlier",
            vec![rec(1, "a"), rec(2, "b"), retract(1)],
            vec![(2, "b")],
            0,
        ),
        (
            "a record after a retraction stands",
            vec![rec(1, "a"), retract(1), rec(1, "a2")],
            vec![(1, "a2")],
            0,
        ),
        (
            "a retraction before any record voids nothing later",
            vec![retract(2), rec(2, "b")],
            vec![(2, "b")],
            0,
        ),
        (
            "unknown fields are kept",
            vec![unknown.clone()],
            vec![(3, "u3")],
            0,
        ),
        (
            "a higher v is skipped with a note",
            vec![rec(1, "a"), newer],
            vec![(1, "a")],
            1,
        ),
    ];
    for (what, input, expected, notes) in table {
        let (got, stderr) = read(&env, &lines(&input));
        let got_pairs: Vec<(u64, &str)> = got
            .iter()
            .map(|r| (r["seq"].as_u64().unwrap(), r["at"].as_str().unwrap()))
            .collect();
        assert_eq!(got_pairs, expected, "{what}");
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.starts_with("ctxfold-read-seeds: "))
                .count(),
            notes,
            "{what}: {stderr}"
        );
    }
    let (got, _) = read(&env, &lines(&[unknown]));
    assert_eq!(got[0]["futureField"], json!({"nested": [1, 2]}));
    assert_eq!(got[0]["spans"][0]["extraSpanField"], true);
    let (got, stderr) = read(&env, "garbage\n\n{\"v\":2,\"kind\":\"fold-index\"}\n");
    assert!(got.is_empty());
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}

/// The extension's three record shapes over the Pi v3 fixture, spans computed by the compat rules.
fn extension_records() -> Vec<Value> {
    let big = pi_v3::large_output();
    let build = "Compiling ctxfold v0.1.0\nerror: could not compile `ctxfold`";
    let v1 = json!({"v": 1, "kind": "fold-index", "harness": "pi-context-fold", "session": pi_v3::SESSION_ID, "seq": 1,
        "at": "2026-08-01T10:00:03.000Z", "trigger": "threshold", "files": [], "commands": ["{\"command\":\"npm test\"}"],
        "errors": ["npm ERR! code ELIFECYCLE"], "identifiers": [pi_v3::HEX_ID], "userMessages": [{"turn": 1, "firstLine": "build the thing"}],
        "spans": [{"blockId": "r:c1", "code": "0qq769", "tool": "bash", "turn": 1,
            "log": {"path": "/x/spool/pi-v3-fixture/log.jsonl", "byteStart": 0, "byteEnd": 100, "bytes": big.len(), "lines": big.lines().count()}}]});
    let v2 = json!({"v": 2, "kind": "fold-index", "harness": "pi-context-fold", "session": pi_v3::SESSION_ID, "seq": 2,
        "at": "2026-08-01T10:00:05.000Z", "trigger": "compact", "usage": {"tokens": 50000, "contextWindow": 200000, "fraction": 0.25},
        "files": ["src/lib.rs"], "commands": ["{\"command\":\"cargo build --release\"}"], "errors": [], "identifiers": [],
        "userMessages": [], "spans": [
            {"blockId": "a:resp_1:p0", "code": "sne5eu", "tool": "thinking", "turn": 1, "log": {"bytes": 20, "lines": 1}, "sha256": sha("let me run the tests")},
            {"blockId": "r:call_x|fc_y", "code": "t3nxa1", "tool": "bash", "turn": 2, "log": {"bytes": build.len(), "lines": 2},
                "sha256": sha(build)},
            {"blockId": "a:t1003:p0", "code": "bbkql0", "tool": "text", "turn": 1, "log": {"bytes": 14, "lines": 1}, "sha256": sha("the tests fail")}]});
    let edited = "[read of src/lib.rs trimmed] PLACEHOLDER_RESULT_42";
    let v3 = json!({"v": 3, "kind": "fold-index", "harness": "pi-context-fold", "session": pi_v3::SESSION_ID, "seq": 3,
        "at": "2026-08-01T10:00:06.000Z", "trigger": "cap", "files": [],
        "commands": [{"command": "npm test", "turn": 1, "code": "0qq769"}],
        "errors": [{"line": "error[E0308]: mismatched types", "turn": 2, "code": "xb3m8d", "toolError": false}],
        "identifiers": [], "userMessages": [],
        "spans": [{"blockId": "r:c2:edit:e0000008", "code": "xb3m8dab", "tool": "read", "turn": 2,
            "log": {"bytes": edited.len(), "lines": 1}, "sha256": sha(edited)}]});
    vec![v1, v2, v3]
}

#[test]
fn extension_records_of_every_version_are_read_and_their_spans_verify() {
    let env = Env::new();
    let session = pi_v3::write(env.dir.path());
    // Where the extension keeps them: v1 in spool/, v2 and v3 in context-fold/, beside the session.
    let records = extension_records();
    let spool = env.dir.path().join("spool").join(pi_v3::SESSION_ID);
    let fold = env.dir.path().join("context-fold").join(pi_v3::SESSION_ID);
    std::fs::create_dir_all(&spool).unwrap();
    std::fs::create_dir_all(&fold).unwrap();
    std::fs::write(spool.join("seed-index.jsonl"), lines(&records[..1])).unwrap();
    std::fs::write(fold.join("seed-index.jsonl"), lines(&records[1..])).unwrap();
    let run = env
        .run(
            "ctxfold-read-seeds",
            ["--pi-session", session.to_str().unwrap()],
        )
        .ok();
    let got: Vec<Value> = run
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(got.len(), 3, "{}", run.stderr);
    assert_eq!(
        got[0]["spans"][0]["log"]["byteEnd"], 100,
        "v1 log fields kept"
    );
    assert_eq!(
        got[2]["errors"][0]["line"], "error[E0308]: mismatched types",
        "v3 objects kept"
    );
    assert_eq!(got[2]["commands"][0]["command"], "npm test");

    // The codes are the compat rule's (8-character fork codes accepted as written).
    for (id, code) in [
        ("r:c1", "0qq769"),
        ("a:resp_1:p0", "sne5eu"),
        ("r:call_x|fc_y", "t3nxa1"),
        ("a:t1003:p0", "bbkql0"),
        ("r:c2:edit:e0000008", "xb3m8d"),
    ] {
        assert_eq!(ctxfold::blocks::block::code(id), code);
    }
    let name = session.to_str().unwrap();
    for record in &got {
        for span in record["spans"].as_array().unwrap() {
            let id = span["blockId"].as_str().unwrap();
            let mut args = vec![name, id];
            if let Some(sha) = span["sha256"].as_str() {
                args.extend(["--sha256", sha]);
            }
            let run = env.run("ctxfold-verify-span", &args).ok();
            assert_eq!(
                run.stdout.len() as u64,
                span["log"]["bytes"].as_u64().unwrap(),
                "{id}"
            );
            assert_eq!(run.stdout, pi_v3::block_text(id).unwrap().as_bytes());
            assert_eq!(
                run.stderr.contains("unverified"),
                span.get("sha256").is_none(),
                "{id}: {}",
                run.stderr
            );
        }
    }
    env.run(
        "ctxfold-read-seeds",
        [env.path("none.jsonl").to_str().unwrap()],
    )
    .fails(1)
    .one_line_error("none.jsonl");
    env.run("ctxfold-read-seeds", Vec::<&str>::new()).fails(2);
}
