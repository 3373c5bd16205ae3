//! `ctxfold seeds` and `ctxfold recall`: folded sessions indexed into the store (append-only, a
//! re-run adds nothing, other writers' lines kept), and spans pulled back verified, from the source
//! while it exists and from the store alone after it is removed.

mod common;
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
        dry.contains("would move the seed indexes of 1 sessions from context-fold/"),
        "{dry}"
    );
    assert!(legacy_file(&env, "pi").exists());
    let gc = env.run("ctxfold", ["gc", "--apply"]).ok().stdout_text();
    assert!(gc.contains("moved the seed indexes of 1 sessions"), "{gc}");
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
        ctxfold::seeds::index_folded_session(&store, &manifest).unwrap(),
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
    let out = env
        .run("ctxfold", ["recall", "-F", "ELIFECYCLE"])
        .ok()
        .stdout_text();
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
