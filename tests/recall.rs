//! `ctxfold seeds` and `ctxfold recall`: folded sessions indexed into the store (append-only, a
//! re-run adds nothing, other writers' lines kept), and spans pulled back verified, from the source
//! while it exists and from the store alone after it is removed.

mod common;
mod homes;
#[path = "support/pi_v3.rs"]
mod pi_v3;

use common::{Env, own, own_fixture};
use serde_json::Value;

fn fold(env: &Env, file: &std::path::Path, id: &str) {
    let parts = env
        .run(
            "ctxfold-split",
            [std::ffi::OsStr::new("--write"), file.as_os_str()],
        )
        .ok();
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", id, "--source", file.to_str().unwrap()],
        &parts.stdout,
    )
    .ok();
}

/// Where stores kept a session's seed index before the catalog.
fn legacy_file(env: &Env, id: &str) -> std::path::PathBuf {
    env.store
        .join("context-fold")
        .join(id)
        .join("seed-index.jsonl")
}

/// `id`'s seed index: its legacy file's lines then its batches'.
fn index_lines(env: &Env, id: &str) -> Vec<String> {
    let legacy = std::fs::read_to_string(legacy_file(env, id)).unwrap_or_default();
    let stored = env.stored_seed_index(&env.store, id);
    legacy
        .lines()
        .chain(stored.lines())
        .map(String::from)
        .collect()
}

/// A Pi v3 session and a Codex rollout (the own one with unified exec), folded from copies.
fn folded(env: &Env) -> std::path::PathBuf {
    folded_with(env, &own_fixture(own::CODEX_UNIFIED_EXEC))
}

/// A Pi v3 session and `codex`, a rollout that never compacts and runs `git`, folded from copies.
fn folded_with(env: &Env, codex: &std::path::Path) -> std::path::PathBuf {
    let pi = pi_v3::write(env.dir.path());
    fold(env, &pi, "pi");
    let copy = env.path("codex.jsonl");
    std::fs::copy(codex, &copy).unwrap();
    fold(env, &copy, "codex");
    pi
}

#[test]
fn seeds_appends_only_what_is_new_and_keeps_other_writers_lines() {
    let env = Env::new();
    folded(&env);
    // An older store's index file: the extension's own record, merged in before ctxfold indexes
    // the session, its last line without its newline.
    let theirs = r#"{"v":2,"kind":"fold-index","harness":"pi-context-fold","session":"pi","seq":5,"at":"x","trigger":"threshold","spans":[]}"#;
    std::fs::create_dir_all(legacy_file(&env, "pi").parent().unwrap()).unwrap();
    std::fs::write(legacy_file(&env, "pi"), theirs).unwrap();

    seeds_one_final_record_for_codex(&env);
    let lines = index_lines(&env, "pi");
    assert_eq!(lines[0], theirs);
    let seqs: Vec<u64> = lines[1..]
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, [1_000_001, 1_000_002, 1_000_003]);
    // The legacy file is read, not written.
    assert_eq!(
        std::fs::read_to_string(legacy_file(&env, "pi")).unwrap(),
        theirs
    );

    let before = Env::snapshot(&env.store);
    let again = env.run("ctxfold", ["seeds", "--json", "pi"]).ok();
    assert_eq!(again.stdout_text(), "{\"appended\":0,\"session\":\"pi\"}\n");
    assert_eq!(Env::snapshot(&env.store), before);

    // gc moves the legacy file into the catalog: the index reads the same lines, in the same
    // order, and recall finds the same; a second gc finds nothing to move.
    let records = || {
        env.run("ctxfold-read-seeds", ["--session", "pi"])
            .ok()
            .stdout_text()
    };
    let read_before = records();
    let dry = env.run("ctxfold", ["gc"]).ok().stdout_text();
    assert!(
        dry.contains("would move the seed indexes of 1 session from context-fold/"),
        "{dry}"
    );
    assert!(legacy_file(&env, "pi").exists());
    let gc = env.run("ctxfold", ["gc", "--apply"]).ok().stdout_text();
    assert!(gc.contains("moved the seed indexes of 1 session"), "{gc}");
    assert!(!legacy_file(&env, "pi").exists());
    assert!(!env.store.join("context-fold/pi").exists());
    assert_eq!(index_lines(&env, "pi"), lines);
    assert_eq!(records(), read_before);
    let gc = env.run("ctxfold", ["gc", "--apply"]).ok().stdout_text();
    assert!(!gc.contains("seed indexes"), "{gc}");
    assert_eq!(index_lines(&env, "pi"), lines);
    env.run("ctxfold", ["fsck", "--full"]).ok();

    // The library entry point `fold --apply` calls.
    let store = ctxfold::store::Store::open(&env.store).unwrap();
    let manifest = store.load_manifest("codex").unwrap();
    assert_eq!(
        ctxfold::seeds::index_folded_session(&store, &manifest, &Default::default()).unwrap(),
        0
    );
    env.run("ctxfold", ["seeds", "nope"]).fails(1);
}

#[test]
fn recall_pulls_verified_spans_from_the_source_then_from_the_store() {
    let env = Env::new();
    let pi = folded(&env);
    env.run("ctxfold", ["seeds"]).ok();

    let run = env.run("ctxfold", ["recall", "ELIFECYCLE"]).ok();
    let out = run.stdout_text();
    assert!(
        out.contains("# session pi seq 1000001 errors: npm ERR! code ELIFECYCLE"),
        "{out}"
    );
    assert!(
        out.contains("=== recall session=pi blockId=r:c1 code=0qq769 tool=bash turn=1 bytes="),
        "{out}"
    );
    assert!(out.contains("verified=yes from=file ==="), "{out}");
    assert!(out.contains(&pi_v3::large_output()), "the whole span");
    assert!(out.contains("=== end r:c1 ==="));

    std::fs::remove_file(&pi).unwrap();
    let run = env
        .run(
            "ctxfold",
            ["recall", "-F", "npm ERR!", "--session", "pi", "-l"],
        )
        .ok();
    let out = run.stdout_text();
    assert!(
        out.contains("blockId=r:c1") && out.contains("verified=yes from=store"),
        "{out}"
    );
    assert!(!out.contains("INFO step"), "-l lists without text");

    let run = env
        .run(
            "ctxfold",
            ["recall", "--json", "--field", "files", "src/lib\\.rs"],
        )
        .ok();
    let spans: Vec<Value> = run
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "span")
        .collect();
    assert!(
        spans
            .iter()
            .any(|s| s["blockId"] == "r:c2:edit:e0000008" && s["verified"] == "yes"),
        "{spans:?}"
    );
    assert!(
        spans
            .iter()
            .all(|s| s["text"].as_str().unwrap().contains("src/lib.rs"))
    );

    recall_finds_the_codex_git_command(&env);

    env.run("ctxfold", ["recall", "no-such-needle-anywhere"])
        .fails(1);
    env.run("ctxfold", ["recall", "("])
        .fails(2)
        .one_line_error("bad PATTERN");
}

/// `seeds` indexes a fresh store of [`folded_with`]: the rollout never compacts, so one record.
fn seeds_one_final_record_for_codex(env: &Env) {
    let run = env.run("ctxfold", ["seeds"]).ok();
    assert_eq!(
        run.stdout_text(),
        "codex\t1 new records\npi\t3 new records\n"
    );
}

/// A Codex rollout's spans too: found by the `git` command it ran.
fn recall_finds_the_codex_git_command(env: &Env) {
    let run = env
        .run(
            "ctxfold",
            [
                "recall",
                "--session",
                "codex",
                "-i",
                "--field",
                "commands",
                "git",
            ],
        )
        .ok();
    assert!(
        run.stdout_text().contains("session=codex"),
        "{}",
        run.stdout_text()
    );
}

/// The same over the public Codex Desktop rollout.
#[test]
fn public_codex_rollout_is_indexed_once_and_recalled_by_its_commands() {
    let Some(codex) = common::public_fixture("019e1625") else {
        return;
    };
    let env = Env::new();
    folded_with(&env, &codex);
    seeds_one_final_record_for_codex(&env);
    recall_finds_the_codex_git_command(&env);
}

#[test]
fn recall_serves_v1_spans_unverified_and_withholds_mismatches() {
    let env = Env::new();
    folded(&env);
    let v1 = r#"{"v":1,"kind":"fold-index","session":"pi","seq":1,"at":"x","trigger":"threshold","errors":["npm ERR! code ELIFECYCLE"],"spans":[{"blockId":"r:c1","tool":"bash","turn":1,"log":{"path":"/spool/log.jsonl","byteStart":0,"byteEnd":10}}]}"#;
    let zeros = "0".repeat(64);
    let bad = format!(
        r#"{{"v":2,"kind":"fold-index","session":"pi","seq":2,"at":"y","trigger":"cap","identifiers":["{}"],"spans":[{{"blockId":"r:c1","code":"0qq769","log":{{"bytes":1,"lines":1}},"sha256":"{zeros}"}}]}}"#,
        pi_v3::HEX_ID
    );
    std::fs::create_dir_all(legacy_file(&env, "pi").parent().unwrap()).unwrap();
    std::fs::write(legacy_file(&env, "pi"), format!("{v1}\n{bad}\n")).unwrap();
    let out = recalled(&env, "ELIFECYCLE");
    assert!(
        out.contains(
            "blockId=r:c1 code=? tool=bash turn=1 bytes=? lines=? verified=unverified from=file ==="
        ),
        "{out}"
    );
    assert!(out.contains("npm ERR! code ELIFECYCLE"));
    let out = env
        .run("ctxfold", ["recall", pi_v3::HEX_ID])
        .ok()
        .stdout_text();
    assert!(out.contains("verified=mismatch"), "{out}");
    assert!(
        !out.contains("INFO step"),
        "a mismatched span's text is withheld: {out}"
    );
}

#[test]
fn recall_pulls_the_spans_of_the_record_that_stands_for_each_seq_in_every_part_of_the_index() {
    let env = Env::new();
    folded(&env);
    // Recall greps the records, then reads the matching ones again for their spans: by their
    // place among the index's lines, blank ones too, the legacy file's before the batches'.
    let record = |sha256: &str| {
        format!(
            r#"{{"v":2,"kind":"fold-index","session":"pi","seq":3,"at":"x","trigger":"cap","errors":["npm ERR! code ELIFECYCLE"],"spans":[{{"blockId":"r:c1","tool":"bash","log":{{"bytes":1,"lines":1}}{sha256}}}]}}"#
        )
    };
    let replaced = record(&format!(r#","sha256":"{}""#, "0".repeat(64)));
    let standing = record("");
    std::fs::create_dir_all(legacy_file(&env, "pi").parent().unwrap()).unwrap();
    std::fs::write(
        legacy_file(&env, "pi"),
        format!("\n{replaced}\n\n{standing}\n"),
    )
    .unwrap();
    seeds_one_final_record_for_codex(&env);
    let out = recalled(&env, "ELIFECYCLE");
    assert!(out.contains("# session pi seq 3 errors: npm ERR!"), "{out}");
    assert!(out.contains("verified=unverified"), "{out}");
    assert!(!out.contains("verified=mismatch"), "{out}");
    // The batches' records, after the legacy file's lines.
    let out = env
        .run(
            "ctxfold",
            ["recall", "--field", "identifiers", pi_v3::HEX_ID],
        )
        .ok()
        .stdout_text();
    assert!(out.contains("verified=yes"), "{out}");
    assert!(
        !out.contains("verified=mismatch") && !out.contains("unverified"),
        "{out}"
    );
}

#[test]
fn recall_skips_a_record_malformed_in_its_spans_as_read_seeds_does() {
    let env = Env::new();
    folded(&env);
    // Recall greps a record without building its spans: a record whose errors read but whose span
    // does not is no record, and the one before it stands for its seq. Checked are those that
    // replace a record (seq 3) and those that match (seq 4, the first of its seq).
    let record = |seq: u64, error: &str, turn: &str| {
        format!(
            r#"{{"v":2,"kind":"fold-index","session":"pi","seq":{seq},"at":"x","trigger":"cap","errors":["npm ERR! code {error}"],"spans":[{{"blockId":"r:c1","tool":"bash","turn":{turn},"log":{{"bytes":1,"lines":1}}}}]}}"#
        )
    };
    // A field given twice is read as its last (read-seeds reads such a line through a value).
    let twice = record(5, "EONCE", "1").replace(
        r#""errors":"#,
        r#""errors":["npm ERR! code ETWICE"],"errors":"#,
    );
    let lines = [
        record(3, "ELIFECYCLE", "1"),
        record(3, "EREPLACED", r#""one""#),
        record(4, "EFRESH", r#""one""#),
        twice,
    ];
    std::fs::create_dir_all(legacy_file(&env, "pi").parent().unwrap()).unwrap();
    std::fs::write(legacy_file(&env, "pi"), lines.join("\n") + "\n").unwrap();
    let run = env.run("ctxfold-read-seeds", ["--session", "pi"]).ok();
    let out = run.stdout_text();
    assert!(out.contains("ELIFECYCLE") && out.contains("EONCE"), "{out}");
    assert!(
        !out.contains("EREPLACED") && !out.contains("EFRESH") && !out.contains("ETWICE"),
        "{out}"
    );
    assert_eq!(
        run.stderr.matches("not a fold-index record").count(),
        2,
        "{}",
        run.stderr
    );
    for skipped in ["EREPLACED", "EFRESH", "ETWICE"] {
        let run = env.run("ctxfold", ["recall", "-F", skipped]).fails(1);
        assert_eq!(run.stdout_text(), "");
    }
    let out = recalled(&env, "EONCE");
    assert!(
        out.contains("# session pi seq 5 errors: npm ERR! code EONCE"),
        "{out}"
    );
    let out = recalled(&env, "ELIFECYCLE");
    assert!(out.contains("# session pi seq 3 errors: npm ERR!"), "{out}");
    assert!(out.contains("verified=unverified"), "{out}");
}

#[test]
fn read_seeds_gives_of_a_store_session_what_it_gives_of_a_file_of_its_lines() {
    let env = Env::new();
    folded(&env);
    // Every rule of the union in the legacy file, before the batches: blank lines, a seq set again
    // and retracted, a line that is no record, a newer version, a record malformed past its head.
    let record = |seq: u64, at: &str| {
        format!(
            r#"{{"v":2,"kind":"fold-index","session":"pi","seq":{seq},"at":"{at}","trigger":"cap","spans":[]}}"#
        )
    };
    let lines = [
        String::new(),
        record(1, "first"),
        record(2, "second"),
        record(1, "again"),
        r#"{"v":2,"kind":"fold-retract","seq":2,"at":"r"}"#.into(),
        "not json".into(),
        r#"{"v":9,"kind":"fold-index","seq":3}"#.into(),
        r#"{"v":2,"kind":"fold-index","seq":1,"spans":"none"}"#.into(),
        String::new(),
        record(4, "fourth"),
    ];
    std::fs::create_dir_all(legacy_file(&env, "pi").parent().unwrap()).unwrap();
    std::fs::write(legacy_file(&env, "pi"), lines.join("\n") + "\n").unwrap();
    seeds_one_final_record_for_codex(&env);
    let whole = env.path("whole.jsonl");
    std::fs::write(&whole, index_lines(&env, "pi").join("\n") + "\n").unwrap();
    let from_store = env.run("ctxfold-read-seeds", ["--session", "pi"]).ok();
    let from_file = env
        .run("ctxfold-read-seeds", [whole.to_str().unwrap()])
        .ok();
    assert_eq!(from_store.stdout_text(), from_file.stdout_text());
    let ats: Vec<String> = (from_store.stdout_text().lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["at"].to_string())
        .collect();
    assert_eq!(ats[..2], [r#""again""#, r#""fourth""#], "{ats:?}");
    assert!(ats.len() > 2, "ctxfold's own records follow: {ats:?}");
    assert_eq!(
        from_store.stderr.lines().count(),
        from_file.stderr.lines().count(),
        "{}",
        from_store.stderr
    );
    assert_eq!(
        from_store.stderr.lines().count(),
        3,
        "{}",
        from_store.stderr
    );
    // Files named and the store's index read as one, the files first.
    let extra = env.path("extra.jsonl");
    let extra_lines = format!("{}\n{}\n", record(4, "replaced"), record(99, "from a file"));
    std::fs::write(&extra, &extra_lines).unwrap();
    let joined = env.path("joined.jsonl");
    std::fs::write(
        &joined,
        extra_lines + &std::fs::read_to_string(&whole).unwrap(),
    )
    .unwrap();
    let extra = extra.to_str().unwrap();
    let both = env
        .run("ctxfold-read-seeds", [extra, "--session", "pi"])
        .ok();
    let from_joined = env
        .run("ctxfold-read-seeds", [joined.to_str().unwrap()])
        .ok();
    assert_eq!(both.stdout_text(), from_joined.stdout_text());
    assert!(both.stdout_text().contains(r#""at":"from a file""#));
    assert!(!both.stdout_text().contains(r#""at":"replaced""#));
    env.run("ctxfold-read-seeds", [extra, "--session", "elsewhere"])
        .fails(1)
        .one_line_error("no folded session \"elsewhere\"");
}

#[test]
fn seeds_skips_a_session_that_is_no_ledger_and_indexes_the_others() {
    let env = Env::new();
    folded(&env);
    let other = env.path("notes.jsonl");
    std::fs::write(&other, "{\"note\":\"not a session\"}\n").unwrap();
    fold(&env, &other, "notes");
    let run = env.run("ctxfold", ["seeds"]).ok();
    assert!(
        run.stderr
            .contains("skipped notes: not a Codex, Pi or Claude Code session ledger"),
        "{}",
        run.stderr
    );
    env.run("ctxfold", ["seeds", "notes"]).fails(3);
    assert!(!index_lines(&env, "pi").is_empty() && !index_lines(&env, "codex").is_empty());
    assert!(index_lines(&env, "notes").is_empty());
    let run = env.run("ctxfold-read-seeds", ["--session", "pi"]).ok();
    assert_eq!(run.stdout_text().lines().count(), 3);
}

/// What `ctxfold recall -F FIXED` prints, exiting 0.
fn recalled(env: &Env, fixed: &str) -> String {
    env.run("ctxfold", ["recall", "-F", fixed])
        .ok()
        .stdout_text()
}

/// The own homes folded with their seeds; the two work sessions (a Codex and a Pi one, written by
/// the real agents) each ran a command that failed on `config/ctxfold-missing.toml`.
fn folded_homes() -> Env {
    let mut env = Env::new();
    homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    env
}

const MISSING: &str = "ctxfold-missing.toml";

#[test]
fn recall_heads_each_session_with_its_start_and_title_and_json_spans_carry_their_sha256() {
    let env = folded_homes();
    let out = env.run("ctxfold", ["recall", MISSING]).ok().stdout_text();
    let headings: Vec<&str> = out.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(headings.len(), 2, "{out}");
    // Each heading comes before its session's matches, with its start as ls shows it.
    let ls = env.run("ctxfold", ["ls", "--json"]).ok();
    let listed = homes::json_lines(&ls.stdout);
    for heading in &headings {
        let id = heading.split_whitespace().nth(2).unwrap();
        let entry = listed.iter().find(|e| e["id"] == id).unwrap();
        let start = ctxfold::cli::human::minute(entry["started"].as_str());
        assert!(
            heading.starts_with(&format!("## session {id}  {start}  ")),
            "{heading}"
        );
        let after = out.split(*heading).nth(1).unwrap();
        assert!(
            after
                .lines()
                .nth(1)
                .unwrap()
                .starts_with(&format!("# session {id} seq "))
        );
    }

    let run = env.run("ctxfold", ["recall", MISSING, "--json"]).ok();
    let lines = homes::json_lines(&run.stdout);
    let sessions: Vec<_> = lines.iter().filter(|l| l["type"] == "session").collect();
    assert_eq!(sessions.len(), 2);
    let mut agents: Vec<&str> = sessions
        .iter()
        .map(|s| s["agent"].as_str().unwrap())
        .collect();
    agents.sort();
    assert_eq!(agents, ["codex", "pi"]);
    for session in &sessions {
        let entry = listed
            .iter()
            .find(|e| e["id"] == session["session"])
            .unwrap();
        assert_eq!(session["title"], entry["title"]);
        assert_eq!(session["started"], entry["started"]);
        assert!(session["cwd"].as_str().unwrap().starts_with('/'));
    }
    // A span's sha256 chains into verify-span, which serves the same text.
    let spans: Vec<_> = lines.iter().filter(|l| l["type"] == "span").collect();
    assert!(!spans.is_empty());
    for span in spans {
        let sha256 = span["sha256"].as_str().unwrap();
        assert_eq!(sha256.len(), 64);
        let session = span["session"].as_str().unwrap();
        let block = span["blockId"].as_str().unwrap();
        let verified = env
            .run(
                "ctxfold-verify-span",
                ["--session", session, "--sha256", sha256, block],
            )
            .ok();
        assert_eq!(verified.stdout_text(), span["text"].as_str().unwrap());
    }
}

#[test]
fn max_count_stops_after_that_many_matching_records_in_each_session() {
    let env = folded_homes();
    let records = |args: &[&str]| {
        let run = env
            .run("ctxfold", [&["recall", "--json", MISSING], args].concat())
            .ok();
        let mut seqs: Vec<(String, u64)> = homes::json_lines(&run.stdout)
            .iter()
            .filter(|l| l["type"] == "match")
            .map(|l| {
                (
                    l["session"].as_str().unwrap().into(),
                    l["seq"].as_u64().unwrap(),
                )
            })
            .collect();
        seqs.dedup();
        seqs
    };
    let all = records(&[]);
    let one = records(&["-m", "1"]);
    assert!(all.len() > one.len(), "{all:?}");
    assert_eq!(
        one.len(),
        2,
        "one record in each of the two sessions: {one:?}"
    );
    assert_eq!(records(&["--max-count", "100"]), all);
    env.run("ctxfold", ["recall", MISSING, "-m", "0"]).fails(1);
    let bad = env
        .run("ctxfold", ["recall", MISSING, "-m", "many"])
        .fails(2);
    assert!(
        bad.stderr.contains("invalid value 'many'"),
        "{}",
        bad.stderr
    );
}

#[test]
fn recall_pages_on_a_terminal_only() {
    let mut env = folded_homes();
    env.set("CTXFOLD_PAGER", "sed 's/^/paged: /'");
    // In a pipe, no pager.
    let piped = env.run("ctxfold", ["recall", MISSING]).ok().stdout_text();
    assert!(!piped.contains("paged: "), "{piped}");
    if common::which("script").is_none() {
        eprintln!("skipped the terminal half: no script(1) to give ctxfold a terminal");
        return;
    }
    let on_tty = |args: &str| {
        env.shell(&format!(
            "script -qec '$BIN/ctxfold recall {args}' /dev/null"
        ))
        .ok()
        .stdout_text()
    };
    let paged = on_tty(MISSING);
    let first = piped.lines().next().unwrap();
    assert!(paged.contains(&format!("paged: {first}")), "{paged}");
    assert!(
        paged
            .lines()
            .filter(|l| !l.trim().is_empty())
            .all(|l| l.starts_with("paged: ")),
        "{paged}"
    );
    // A pager quit before the end is no failure.
    let quit = env
        .shell(&format!(
            "CTXFOLD_PAGER='head -n 1' script -qec '$BIN/ctxfold recall {MISSING}' /dev/null"
        ))
        .ok()
        .stdout_text();
    assert_eq!(quit.lines().count(), 1, "{quit}");
    let unpaged = on_tty(&format!("--no-pager {MISSING}"));
    assert!(
        !unpaged.contains("paged: ") && unpaged.contains(first),
        "{unpaged}"
    );
}
