//! `ctxfold grep`: the text of sessions searched as ripgrep searches files, folded or on disk, with
//! the same sessions found as `rg` finds in the raw files, matches that straddle stored parts
//! found, and ripgrep's flags and exit statuses.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{Env, fixture_files, own, own_fixture, which};
use serde_json::Value;

/// Fold `files` into the env's store.
fn fold_all(env: &Env, files: &[PathBuf]) {
    let mut args = vec!["fold".into(), "--apply".into(), "-q".into()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    env.run("ctxfold", &args).ok();
}

/// `ctxfold grep ARGS`, its stdout's lines as a set.
fn listed(env: &Env, args: &[&str]) -> BTreeSet<String> {
    let run = env.run("ctxfold", [&["grep"], args].concat());
    assert!(run.code == Some(0) || run.code == Some(1), "{run:?}");
    run.stdout_text().lines().map(String::from).collect()
}

/// The session id grep reads in `file` (named by its path, with no store).
fn id_of(env: &Env, file: &Path) -> String {
    let run = env
        .run(
            "ctxfold",
            ["grep", "-l", "-m1", "(?s).", file.to_str().unwrap()],
        )
        .ok();
    run.stdout_text().trim().to_string()
}

#[test]
fn grep_finds_the_sessions_rg_finds_in_the_raw_files_folded_or_not() {
    let rg = which("rg").expect("ripgrep (rg) is needed for this test: .ci/run installs it");
    let files = fixture_files();
    let bare = Env::new();
    let ids: Vec<String> = files.iter().map(|f| id_of(&bare, f)).collect();
    let env = Env::new();
    fold_all(&env, &files);
    let paths: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    let mut compared = 0;
    for word in [
        "README",
        "checksum",
        "gateway",
        "apply_patch",
        "amount",
        "Ledger",
        "KeyError",
        "TODO",
        "cargo",
    ] {
        let out = std::process::Command::new(&rg)
            .args(["-l", "-F", "--", word])
            .args(&paths)
            .output()
            .unwrap();
        let by_rg: BTreeSet<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|path| ids[paths.iter().position(|p| *p == path).unwrap()].clone())
            .collect();
        let from_files = listed(&bare, &[&["-l", "-F", word], paths.as_slice()].concat());
        let folded = listed(&env, &["-l", "-F", word]);
        assert_eq!(from_files, by_rg, "{word} in the files");
        assert_eq!(folded, by_rg, "{word} in the store");
        compared += by_rg.len();
    }
    assert!(compared >= 10, "only {compared} sessions matched");
}

/// The byte offsets where `manifest`'s parts start, after the first.
fn part_starts(manifest: &Value) -> Vec<u64> {
    let mut at = 0;
    let mut starts = Vec::new();
    for part in manifest["parts"].as_array().unwrap() {
        if at > 0 {
            starts.push(at);
        }
        at += part["object"]["raw_bytes"].as_u64().unwrap();
    }
    starts
}

/// The match and context objects of a --json run, without the session headings.
fn matches_of(run: &common::Run) -> Vec<Value> {
    run.stdout_text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] != "session")
        .collect()
}

#[test]
fn a_session_folded_in_small_parts_greps_as_its_file_does_matches_straddling_parts_and_all() {
    let env = Env::new();
    let bare = Env::new();
    let mut straddled = 0;
    for name in [
        own::CLAUDE_SESSION,
        own::CODEX_AGENT_WORK,
        own::PI_AGENT_WORK,
    ] {
        let file = own_fixture(name);
        let id = id_of(&bare, &file);
        // Strings under 1 KiB lie in residual parts of 64 to 1024 bytes, which cut through them.
        let small = [
            "--field-threshold",
            "1024",
            "--cdc-min-bytes",
            "64",
            "--cdc-average-bytes",
            "256",
            "--cdc-max-bytes",
            "1024",
        ];
        let parts = env
            .run(
                "ctxfold-split",
                [&["--write"], &small[..], &[file.to_str().unwrap()]].concat(),
            )
            .ok();
        env.run_with_stdin(
            "ctxfold-write-manifest",
            [
                &[
                    "--session-id",
                    id.as_str(),
                    "--source",
                    file.to_str().unwrap(),
                ],
                &small[..],
            ]
            .concat(),
            &parts.stdout,
        )
        .ok();
        let manifest: Value = serde_json::from_slice(
            &std::fs::read(env.store.join("manifests").join(format!("{id}.json"))).unwrap(),
        )
        .unwrap();
        let starts = part_starts(&manifest);
        assert!(starts.len() > 20, "{name}: {} parts", starts.len());
        let pattern = [
            "-i",
            "-C",
            "1",
            "-e",
            "the [a-z]+ [a-z]+",
            "-e",
            "error",
            "--json",
        ];
        let folded = env
            .run(
                "ctxfold",
                [&["grep"], &pattern[..], &[id.as_str()]].concat(),
            )
            .ok();
        let from_file = bare
            .run(
                "ctxfold",
                [&["grep"], &pattern[..], &[file.to_str().unwrap()]].concat(),
            )
            .ok();
        let (folded, from_file) = (matches_of(&folded), matches_of(&from_file));
        assert!(folded.len() > 5, "{name}: {folded:?}");
        assert_eq!(folded, from_file, "{name}");
        // Each match's bytes, as written in the file, hold its text (escapes decoded) and some
        // lie across a part's end.
        let bytes = std::fs::read(&file).unwrap();
        for found in folded.iter().filter(|v| v["type"] == "match") {
            let text = found["text"].as_str().unwrap().as_bytes();
            for sub in found["submatches"].as_array().unwrap() {
                let [start, end] = [0, 1].map(|i| sub["bytes"][i].as_u64().unwrap());
                let (from, to) = (
                    sub["start"].as_u64().unwrap() as usize,
                    sub["end"].as_u64().unwrap() as usize,
                );
                let raw = &bytes[start as usize..end as usize];
                if !raw.contains(&b'\\') {
                    assert_eq!(raw, &text[from..to], "{name}: {found}");
                }
                straddled += starts.iter().filter(|&&s| start < s && s < end).count();
            }
        }
    }
    assert!(straddled > 0, "no match straddled two parts");
}

#[test]
fn ripgreps_flags_read_as_ripgrep_reads_them() {
    let env = Env::new();
    let claude = own_fixture(own::CLAUDE_SESSION);
    fold_all(&env, &[claude]);
    let id = "0f1d0000-0000-4000-8000-00000000c001";
    let run = env.run("ctxfold", ["grep", "-C1", "KeyError"]).ok();
    assert_eq!(
        run.stdout_text(),
        format!(
            "## session {id}  -  claude  Ledger refund fixes\n\
             1-tool_result-    total = sum(int(row[\"amount\"]) for row in rows)\n\
             1:tool_result:KeyError: 'amount'\n\
             --\n\
             1-summary-2. src/ledger.rs now saturates; src/refund.rs was added.\n\
             1:summary:3. tools/reconcile.py fails with KeyError: 'amount' (not fixed).\n\n"
        )
    );
    let count = |args: &[&str]| {
        let run = env.run("ctxfold", [&["grep", "-c"], args].concat());
        run.stdout_text().trim().to_string()
    };
    assert_eq!(count(&["KeyError"]), format!("{id}:2"));
    assert_eq!(count(&["keyerror"]), "");
    assert_eq!(count(&["-i", "keyerror"]), format!("{id}:2"));
    assert_eq!(count(&["-S", "keyerror"]), format!("{id}:2"));
    assert_eq!(count(&["-S", "keyError"]), "");
    assert_eq!(count(&["-m1", "KeyError"]), format!("{id}:1"));
    assert_eq!(
        count(&["-e", "KeyError", "-e", "nothing here"]),
        format!("{id}:2")
    );
    assert_eq!(count(&["-F", "row[\"amount\"]"]), format!("{id}:1"));
    assert_eq!(count(&["-w", "Key"]), "");
    assert_eq!(count(&["-w", "KeyError"]), format!("{id}:2"));
    // A match spans a newline the JSON writes as `\n`.
    assert_eq!(count(&["rows\\)\\nKeyError"]), format!("{id}:1"));
    assert_eq!(
        env.run("ctxfold", ["grep", "-l", "KeyError"])
            .ok()
            .stdout_text(),
        format!("{id}\n")
    );
    // Colour: the match red, the turn green, the role cyan, as on a terminal.
    let coloured = env
        .run("ctxfold", ["grep", "--color", "always", "-m1", "KeyError"])
        .ok();
    assert!(
        (coloured.stdout_text()).contains(
            "\x1b[32m1\x1b[0m:\x1b[36mtool_result\x1b[0m:\x1b[31mKeyError\x1b[0m: 'amount'"
        ),
        "{coloured:?}"
    );
    // Filters: another agent's sessions, a session named by prefix.
    env.run("ctxfold", ["grep", "--agent", "codex", "KeyError"])
        .fails(1);
    env.run("ctxfold", ["grep", "--session", "0f1d", "KeyError"])
        .ok();
    env.run("ctxfold", ["grep", "-e", "KeyError", "0f1d0000"])
        .ok();
}

#[test]
fn json_says_the_turn_role_block_line_and_bytes_as_written() {
    let env = Env::new();
    let claude = own_fixture(own::CLAUDE_SESSION);
    fold_all(&env, std::slice::from_ref(&claude));
    let run = env
        .run("ctxfold", ["grep", "--json", "-m1", "KeyError"])
        .ok();
    let lines: Vec<Value> = run
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["agent"], "claude");
    assert_eq!(lines[0]["title"], "Ledger refund fixes");
    let found = &lines[1];
    assert_eq!(found["type"], "match");
    assert_eq!(found["role"], "tool_result");
    assert_eq!(found["turn"], 1);
    assert!(found["blockId"].as_str().unwrap().starts_with("r:toolu_"));
    assert_eq!(found["text"], "KeyError: 'amount'");
    let sub = &found["submatches"][0];
    assert_eq!(
        (sub["start"].as_u64(), sub["end"].as_u64()),
        (Some(0), Some(8))
    );
    let bytes = std::fs::read(&claude).unwrap();
    let [start, end] = [0, 1].map(|i| sub["bytes"][i].as_u64().unwrap() as usize);
    assert_eq!(&bytes[start..end], b"KeyError");
    let line = found["line"].as_u64().unwrap() as usize;
    let line_start = bytes
        .split_inclusive(|&b| b == b'\n')
        .take(line - 1)
        .map(<[u8]>::len)
        .sum::<usize>();
    let line_end = line_start
        + bytes[line_start..]
            .iter()
            .position(|&b| b == b'\n')
            .unwrap();
    assert!((line_start..line_end).contains(&start));
}

#[test]
fn exit_status_and_errors_are_ripgreps() {
    let env = Env::new();
    fold_all(&env, &[own_fixture(own::CLAUDE_SESSION)]);
    let none = env
        .run("ctxfold", ["grep", "no such words anywhere"])
        .fails(1);
    assert!(none.stdout.is_empty() && none.stderr.is_empty(), "{none:?}");
    env.run("ctxfold", ["grep", "a("])
        .fails(2)
        .one_line_error("bad PATTERN");
    env.run("ctxfold", ["grep", "KeyError", "nosuchsession"])
        .fails(2)
        .one_line_error("no session \"nosuchsession\"");
    env.run("ctxfold", ["grep", "KeyError", "./no/such/file.jsonl"])
        .fails(2)
        .one_line_error("no/such/file.jsonl");
    // A file whose text is not UTF-8: searched as bytes, shown with U+FFFD, said, status 2.
    let file = env.path("latin1.jsonl");
    std::fs::write(&file, b"{\"text\":\"caf\xe9 cooldown\"}\n").unwrap();
    let run = env
        .run("ctxfold", ["grep", "cooldown", file.to_str().unwrap()])
        .fails(2)
        .one_line_error("not valid UTF-8");
    assert!(
        run.stdout_text().contains("caf\u{fffd} cooldown"),
        "{run:?}"
    );
}

#[test]
fn every_fork_holding_a_line_is_found_and_only_those() {
    let env = Env::new();
    let original = own_fixture(own::CODEX_AGENT_WORK);
    let text = std::fs::read_to_string(&original).unwrap();
    let bare = Env::new();
    let id = id_of(&bare, &original);
    // A fork: the same lines under a new id, and one line of its own.
    let fork_id = "0f1d0000-0000-7000-8000-00000000f0f0";
    let fork = env.path(&format!("rollout-2026-12-01T10-00-00-{fork_id}.jsonl"));
    let mut forked = text.replace(&id, fork_id);
    forked.push_str(
        r#"{"timestamp":"2026-12-01T10:00:00.000Z","type":"event_msg","payload":{"type":"user_message","message":"only the fork talks of the cooldown"}}"#,
    );
    forked.push('\n');
    std::fs::write(&fork, forked).unwrap();
    let copy = env.path("original.jsonl");
    std::fs::copy(&original, &copy).unwrap();
    fold_all(&env, &[copy, fork]);
    assert_eq!(
        listed(&env, &["-l", "ValueError"]),
        BTreeSet::from([id.clone(), fork_id.to_string()])
    );
    assert_eq!(
        listed(&env, &["-l", "cooldown"]),
        BTreeSet::from([fork_id.to_string()])
    );
    let both = listed(&env, &["-c", "ValueError"]);
    let counts: BTreeSet<&str> = both.iter().map(|l| l.rsplit(':').next().unwrap()).collect();
    assert_eq!(counts.len(), 1, "the same count in both: {both:?}");
}

#[test]
fn recall_says_to_try_grep_when_no_seed_record_matches() {
    let env = Env::new();
    fold_all(&env, &[own_fixture(own::CLAUDE_SESSION)]);
    let run = env
        .run("ctxfold", ["recall", "cooldown-that-nobody-wrote"])
        .fails(1);
    assert!(
        run.stderr
            .contains("no seed record matches; try ctxfold grep"),
        "{run:?}"
    );
}
