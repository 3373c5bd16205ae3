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

/// Fold `file` as session `id` with the plumbing, in small parts: strings of `field_threshold`
/// bytes and more as fields, the rest cut into residual parts of 64 to 1024 bytes.
fn fold_in_small_parts(env: &Env, file: &Path, id: &str, field_threshold: &str) {
    let small = [
        "--field-threshold",
        field_threshold,
        "--cdc-min-bytes",
        "64",
        "--cdc-average-bytes",
        "256",
        "--cdc-max-bytes",
        "1024",
    ];
    let file = file.to_str().unwrap();
    let parts = env
        .run(
            "ctxfold-split",
            [&["--write"], &small[..], &[file]].concat(),
        )
        .ok();
    let named = ["--session-id", id, "--source", file];
    env.run_with_stdin(
        "ctxfold-write-manifest",
        [&named[..], &small[..]].concat(),
        &parts.stdout,
    )
    .ok();
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
        fold_in_small_parts(&env, &file, &id, "1024");
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

/// A session of JSON lines whose strings spell the words of the patterns below in every way JSON
/// may write them (escaped quotes and newlines, `\u` escapes, `\/`, JSON written as a string,
/// under opaque keys), in strings long and short, and a few lines that are not JSON objects.
fn escaped_session(lines: usize, seed: u64) -> String {
    let mut rng = common::Rng::new(seed);
    let words = [
        "cooldown",
        r"cool\u0064own",
        r"COOL\nDOWN",
        "say \\\"hi\\\"",
        r"caf\u00e9",
        "café",
        r"back\\slash",
        r"a\/b",
        "two",
        r"one\ntwo",
        r"x\ty",
        "cool-down",
        "cooldowns",
        "z",
        "123",
        r"\ud83d\ude00",
    ];
    let text = |rng: &mut common::Rng, n: u64| -> String {
        (0..n)
            .map(|_| words[rng.below(words.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(if rng.below(3) == 0 { r"\n" } else { " " })
    };
    let mut out = String::new();
    for i in 0..lines {
        let line = match rng.below(8) {
            0 => format!(r#"{{"n":{i},"text":"{}"}}"#, text(&mut rng, 3)),
            1 => format!(
                r#"{{"n":{i},"long":"{}","short":"{}","more":["{}","{}"]}}"#,
                text(&mut rng, 60),
                text(&mut rng, 2),
                text(&mut rng, 40),
                text(&mut rng, 1)
            ),
            2 => format!(
                r#"{{"n":{i},"arguments":"{{\"cmd\":\"{}\",\"why\":\"{}\"}}"}}"#,
                text(&mut rng, 2).replace('\\', r"\\").replace('"', r#"\""#),
                text(&mut rng, 30)
                    .replace('\\', r"\\")
                    .replace('"', r#"\""#)
            ),
            3 => format!(
                r#"{{"n":{i},"encrypted_content":"{}","data":["{}"],"text":"{}"}}"#,
                text(&mut rng, 30),
                text(&mut rng, 30),
                text(&mut rng, 1)
            ),
            4 => format!("not json {} cooldown \"quoted\"", text(&mut rng, 2)),
            5 => format!(
                r#"["{}", {{"k":"{}"}}, 7]"#,
                text(&mut rng, 50),
                text(&mut rng, 2)
            ),
            6 => format!(
                r#"{{"n":{i},"a":"{}","b":"{}","c":"{}"}}"#,
                text(&mut rng, 1),
                text(&mut rng, 1),
                text(&mut rng, 45)
            ),
            _ => format!(r#"{{"n":{i},"nested":{{"deep":"{}"}}}}"#, text(&mut rng, 8)),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The counts `ctxfold grep -c ARGS` gives, without the session ids.
fn counts(env: &Env, args: &[&str]) -> Vec<String> {
    let run = env.run("ctxfold", [&["grep", "-c"], args].concat());
    assert!(
        run.code == Some(0) || run.code == Some(1),
        "{args:?}: {run:?}"
    );
    (run.stdout_text().lines())
        .map(|l| l.rsplit(':').next().unwrap().to_string())
        .collect()
}

#[test]
fn counts_of_a_session_in_small_parts_loose_or_packed_are_its_files_and_nothing_is_written() {
    let env = Env::new();
    let bare = Env::new();
    let file = env.path("rollout-2026-12-02T10-00-00-0f1d0000-0000-7000-8000-00000000e5c0.jsonl");
    std::fs::write(&file, escaped_session(600, 40)).unwrap();
    let id = "0f1d0000-0000-7000-8000-00000000e5c0";
    // Strings of 128 bytes and more are fields; residual parts of 64 to 1024 bytes cut through
    // lines, strings and escapes.
    fold_in_small_parts(&env, &file, id, "128");
    std::fs::remove_file(&file).unwrap();
    let copy = bare.path("session.jsonl");
    std::fs::write(&copy, escaped_session(600, 40)).unwrap();
    let patterns: [&[&str]; 22] = [
        &["-F", "cooldown"],
        &["-i", "-F", "COOLDOWN"],
        &["-w", "cool"],
        &["-F", "cool down"],
        &[r"cool\w+"],
        &["-S", "cool.down"],
        &[r"(?i)cool\s+down"],
        &["-F", "café"],
        &["-F", "é"],
        &["-F", "😀"],
        &["-F", r#"say "hi""#],
        &["-F", r"back\slash"],
        &["-F", "a/b"],
        &["-F", "x\ty"],
        &[r"one\ntwo"],
        &["^two"],
        &["two$"],
        &["-e", "z", "-e", "cooldowns"],
        &[r"[0-9]{3}"],
        &["-F", "quoted"],
        &["-m", "3", "-F", "cooldown"],
        &["-F", "no such words"],
    ];
    let expected: Vec<Vec<String>> = (patterns.iter())
        .map(|p| counts(&bare, &[*p, &[copy.to_str().unwrap()][..]].concat()))
        .collect();
    assert!(
        expected.iter().filter(|c| !c.is_empty()).count() >= 18,
        "{expected:?}"
    );
    for stage in ["loose", "packed"] {
        if stage == "packed" {
            env.run("ctxfold", ["repack", "-q"]).ok();
            assert!(
                std::fs::read_dir(env.store.join("packs-ctxfold"))
                    .unwrap()
                    .count()
                    >= 2,
                "repacked"
            );
        }
        // A first run may write the listing's caches; the next ones write nothing.
        counts(&env, &["cooldown"]);
        let before = Env::snapshot(&env.store);
        for (pattern, expected) in patterns.iter().zip(&expected) {
            assert_eq!(&counts(&env, pattern), expected, "{stage}: {pattern:?}");
            assert_eq!(
                listed(&env, &[&["-l"], *pattern].concat()).len(),
                expected.len(),
                "{stage}: -l {pattern:?}"
            );
        }
        assert!(
            Env::snapshot(&env.store) == before,
            "{stage}: grep wrote to the store"
        );
    }
}

#[test]
fn a_damaged_pack_block_fails_the_sessions_that_need_it_and_no_other() {
    let env = Env::new();
    fold_all(
        &env,
        &[
            own_fixture(own::CLAUDE_SESSION),
            own_fixture(own::PI_AGENT_WORK),
        ],
    );
    env.run("ctxfold", ["repack", "-q"]).ok();
    let healthy = listed(&env, &["-l", "(?s)."]);
    assert_eq!(healthy.len(), 2, "{healthy:?}");
    // Damage the bytes of the pack's first block, which holds the first session's objects.
    let dir = env.store.join("packs-ctxfold");
    let pack = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .unwrap();
    let mut bytes = std::fs::read(&pack).unwrap();
    for b in &mut bytes[64..96] {
        *b ^= 0x5a;
    }
    std::fs::write(&pack, &bytes).unwrap();
    let before = Env::snapshot(&env.store);
    let run = env.run("ctxfold", ["grep", "-c", "(?s)."]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("session "), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    // Each session is counted, or said to have failed (at least one needs the damaged block).
    let failed = run.stderr.lines().count();
    assert!(failed >= 1, "{run:?}");
    assert_eq!(run.stdout_text().lines().count() + failed, 2, "{run:?}");
    assert!(
        Env::snapshot(&env.store) == before,
        "grep wrote to the store"
    );
}

/// The records of the store's n-gram filters file: (sha256, log2 of the map's bits, the map).
fn filter_records(env: &Env) -> Vec<(Vec<u8>, u8, Vec<u8>)> {
    let bytes = std::fs::read(env.store.join("cache/grep-filters")).unwrap();
    let magic = b"ctxfold grep filters v2\n";
    assert!(bytes.starts_with(magic), "not a filters file");
    let body = zstd::decode_all(&bytes[magic.len()..]).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < body.len() {
        let log2 = body[at + 32];
        let end = at + 33 + (1 << log2) / 8;
        out.push((
            body[at..at + 32].to_vec(),
            log2,
            body[at + 33..end].to_vec(),
        ));
        at = end;
    }
    assert_eq!(at, body.len(), "records end where the file does");
    out
}

#[test]
fn sessions_whose_ngram_filters_hold_no_literal_of_the_pattern_are_not_read() {
    let env = Env::new();
    let bare = Env::new();
    // A session that spells "cooldown" and "xylophone" only with escapes (no n-gram of the
    // words is in its bytes as written), one that spells "kelvin" only with the Kelvin sign (it
    // holds no "kel" but when case is ignored), and two that hold none of them.
    let id = "0f1d0000-0000-7000-8000-00000000f17e";
    let file = env.path(&format!("rollout-2026-12-03T10-00-00-{id}.jsonl"));
    let mut text = escaped_session(80, 9).replace("cooldown", "warmup");
    text.push_str(r#"{"text":"cool\u0064own \u0078y\u006co\u0070h\u006fn\u0065"}"#);
    text.push('\n');
    std::fs::write(&file, &text).unwrap();
    let kelvin_id = "0f1d0000-0000-7000-8000-00000000f17f";
    let kelvin = env.path(&format!("rollout-2026-12-03T11-00-00-{kelvin_id}.jsonl"));
    std::fs::write(&kelvin, "{\"text\":\"\\u212Aelvin scale\"}\n").unwrap();
    let files = [
        file.clone(),
        kelvin,
        own_fixture(own::CLAUDE_SESSION),
        own_fixture(own::PI_AGENT_WORK),
    ];
    fold_all(&env, &files);
    assert!(!env.store.join("cache/grep-filters").exists());

    // The first search that can ask filters builds them, one per session, and leaves no temp
    // file; a search that finds nothing new to build writes nothing.
    let only = BTreeSet::from([id.to_string()]);
    assert_eq!(listed(&env, &["-l", "-F", "cooldown"]), only);
    let mut records = filter_records(&env);
    assert_eq!(records.len(), 4, "one filter per session");
    // The same filters, each session read alone (as one larger than a batch of sessions read
    // together is).
    std::fs::remove_file(env.store.join("cache/grep-filters")).unwrap();
    let mut alone = env.command("ctxfold");
    alone
        .args(["grep", "-l", "-F", "cooldown"])
        .env("CTXFOLD_TEST_GREP_BATCH_BYTES", "1");
    let run = Env::output(alone, b"");
    assert_eq!(run.stdout_text().trim(), id, "{run:?}");
    let mut again = filter_records(&env);
    records.sort();
    again.sort();
    assert_eq!(again, records);
    let tmp = std::fs::read_dir(env.store.join("tmp")).unwrap().count();
    assert_eq!(tmp, 0, "a temp file is left in tmp/");
    let before = Env::snapshot(&env.store);
    assert_eq!(listed(&env, &["-l", "-F", "xylophone"]), only);
    assert_eq!(
        listed(&env, &["-l", "-i", "-F", "KELVIN"]),
        BTreeSet::from([kelvin_id.to_string()])
    );
    assert!(listed(&env, &["-l", "-F", "kelvin"]).is_empty());
    assert_eq!(listed(&env, &["-l", "-w", "cooldown"]), only);
    assert!(
        Env::snapshot(&env.store) == before,
        "grep wrote to the store"
    );
    // What the filters answer is what a search of the files answers.
    let paths: Vec<String> = files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
    for pattern in [
        &["-F", "cooldown"][..],
        &["-i", "kelvin"],
        &["-F", "Read"],
        &["-e", "zzqq", "-e", "scale"],
    ] {
        assert_eq!(
            counts(&env, pattern),
            counts(&bare, &[pattern, &paths[..]].concat()),
            "{pattern:?}"
        );
    }

    // A filters file damaged anywhere is built again, and answers the same.
    let path = env.store.join("cache/grep-filters");
    let whole = std::fs::read(&path).unwrap();
    for damaged in [
        whole[..whole.len() / 2].to_vec(),
        {
            let mut flipped = whole.clone();
            let middle = flipped.len() / 2;
            flipped[middle] ^= 0x10;
            flipped
        },
        b"not a filters file".to_vec(),
    ] {
        std::fs::write(&path, &damaged).unwrap();
        assert_eq!(listed(&env, &["-l", "-F", "cooldown"]), only);
        assert_eq!(filter_records(&env).len(), 4);
    }

    // A session folded again with other bytes gets a filter of its own; the old one is dropped.
    text.push_str("{\"text\":\"a heatwave\"}\n");
    std::fs::write(&file, &text).unwrap();
    fold_all(&env, std::slice::from_ref(&file));
    assert_eq!(listed(&env, &["-l", "-F", "heatwave"]), only);
    let now = filter_records(&env);
    assert_eq!(now.len(), 4, "{now:?}");
    let gone: Vec<_> = records.iter().filter(|r| !now.contains(r)).collect();
    assert_eq!(gone.len(), 1, "the old bytes' filter is dropped: {gone:?}");

    // With every session's objects damaged, a pattern the filters rule out everywhere reads no
    // session (no error); one they cannot rule out reads them and fails.
    env.run("ctxfold", ["repack", "-q"]).ok();
    let dir = env.store.join("packs-ctxfold");
    for pack in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
        if pack.extension().is_some_and(|e| e == "pack") {
            let mut bytes = std::fs::read(&pack).unwrap();
            let len = bytes.len();
            for b in &mut bytes[64..len - 64] {
                *b ^= 0x5a;
            }
            std::fs::write(&pack, &bytes).unwrap();
        }
    }
    let run = env.run("ctxfold", ["grep", "-l", "-F", "zzqq-nowhere"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let run = env.run("ctxfold", ["grep", "-l", r"\w+"]);
    assert_eq!(run.code, Some(2), "{run:?}");
}

#[test]
fn a_search_killed_while_it_builds_filters_leaves_no_temp_file_and_a_whole_file_or_none() {
    let env = Env::new();
    fold_all(
        &env,
        &[
            own_fixture(own::CLAUDE_SESSION),
            own_fixture(own::PI_AGENT_WORK),
            own_fixture(own::CODEX_AGENT_WORK),
        ],
    );
    let expected = listed(&env, &["-l", "-F", "ValueError"]);
    assert!(!expected.is_empty());
    let filters = env.store.join("cache/grep-filters");
    // Killed with -9 at moments across the build (each session read alone, so that it lasts),
    // over no filters file and over a whole one.
    for (i, wait) in (0..12u64).map(|i| (i, i * 15)).collect::<Vec<_>>() {
        if i % 2 == 0 {
            std::fs::remove_file(&filters).ok();
        }
        let mut grep = env.command("ctxfold");
        grep.args(["grep", "-l", "-F", "ValueError"])
            .env("CTXFOLD_TEST_GREP_BATCH_BYTES", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = grep.spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(wait));
        child.kill().ok();
        child.wait().unwrap();
        let left: Vec<_> = std::fs::read_dir(env.store.join("tmp"))
            .map(|d| d.map(|e| e.unwrap().file_name()).collect())
            .unwrap_or_default();
        assert!(
            left.is_empty(),
            "killed after {wait} ms: {left:?} left in tmp/"
        );
        if filters.exists() {
            assert_eq!(filter_records(&env).len(), 3, "killed after {wait} ms");
        }
        // The next search answers as before, and the one after it writes nothing.
        assert_eq!(listed(&env, &["-l", "-F", "ValueError"]), expected);
        let before = Env::snapshot(&env.store);
        assert_eq!(listed(&env, &["-l", "-F", "ValueError"]), expected);
        assert!(
            Env::snapshot(&env.store) == before,
            "grep wrote to the store"
        );
    }
}
