//! split --write → write-manifest → cat-manifest / restore gives every file back byte for byte:
//! the fixtures (own, and public when present) and generated edge cases.

mod common;

use std::path::Path;

use common::{Env, Run};
use serde_json::Value;

/// Fold `file` by hand with the plumbing and check both ways back; returns the parts.
fn round_trip(env: &Env, id: &str, file: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["--write".to_string(), file.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let parts = env.run("ctxfold-split", &args).ok().stdout;
    let mut manifest_args = vec!["--session-id", id, "--source"];
    let source = file.display().to_string();
    manifest_args.push(&source);
    manifest_args.extend(extra);
    let written = env
        .run_with_stdin("ctxfold-write-manifest", &manifest_args, &parts)
        .ok();
    assert_eq!(
        written.stdout_text().trim(),
        env.store
            .join(format!("manifests/{id}.json"))
            .display()
            .to_string()
    );
    let original = std::fs::read(file).unwrap();
    let catted = env.run("ctxfold-cat-manifest", [id]).ok().stdout;
    assert!(
        catted == original,
        "cat-manifest of {} differs",
        file.display()
    );
    let target = env.path(&format!("restored-{id}"));
    env.run("ctxfold", ["restore", id, "--to", target.to_str().unwrap()])
        .ok();
    assert!(
        std::fs::read(&target).unwrap() == original,
        "restore of {} differs",
        file.display()
    );
    parts
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn fields(parts: &[Value]) -> Vec<(Option<String>, u64)> {
    parts
        .iter()
        .filter(|p| p["kind"] == "field")
        .map(|p| {
            (
                p["json_path"].as_str().map(str::to_string),
                p["object"]["raw_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_fixture_round_trips() {
    let env = Env::new();
    for (i, file) in common::fixture_files().iter().enumerate() {
        let parts = round_trip(&env, &format!("fixture-{i}"), file, &[]);
        let total: u64 = parts
            .iter()
            .map(|p| p["object"]["raw_bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(total, std::fs::metadata(file).unwrap().len());
        assert!(
            parts
                .iter()
                .all(|p| p["object"]["raw_bytes"].as_u64().unwrap() > 0),
            "empty part"
        );
    }
}

/// The Codex rollout whose `exec_command_end` repeats output: its fields dedupe within the file,
/// the same object named by three parts.
#[test]
fn repeated_exec_output_is_stored_once_within_its_file() {
    stored_once_within(&common::own_fixture(common::own::CODEX_UNIFIED_EXEC));
}

/// Folded into one store, the public fixtures share objects.
#[test]
fn public_fixtures_share_objects() {
    let Some(dir) = common::public_fixtures_dir() else {
        return;
    };
    let env = Env::new();
    let mut parts = 0;
    for (i, file) in common::session_files(&dir).iter().enumerate() {
        parts += round_trip(&env, &format!("public-{i}"), file, &[]).len();
    }
    let objects = walk_objects(&env.store);
    assert!(
        objects < parts,
        "{objects} objects for {parts} parts: nothing deduplicated"
    );
}

fn stored_once_within(file: &Path) {
    let env = Env::new();
    let parts = round_trip(&env, "repeats", file, &[]);
    let mut uses = std::collections::HashMap::new();
    for part in parts.iter().filter(|p| p["kind"] == "field") {
        *uses
            .entry(part["object"]["sha256"].to_string())
            .or_insert(0) += 1;
    }
    let most = uses.values().max().copied().unwrap_or(0);
    assert!(most >= 3, "no field object named three times: {uses:?}");
    assert!(
        walk_objects(&env.store) < parts.len(),
        "nothing deduplicated"
    );
}

/// How many objects the store holds, wherever they are.
fn walk_objects(store: &Path) -> usize {
    ctxfold::store::Store::at(store)
        .odb()
        .list()
        .unwrap()
        .filter(|entry| matches!(entry, ctxfold::odb::Listed::Object { .. }))
        .count()
}

fn write(env: &Env, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = env.path(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn odd_files_round_trip_and_are_all_residual() {
    let env = Env::new();
    let long_invalid = format!("{{\"a\":\"{}\"", "x".repeat(5000));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("no-final-newline", b"{\"a\":1}\n{\"b\":2}".to_vec()),
        (
            "invalid-utf8",
            b"\xff\xfe\xfd garbage \x80\n\xc3\n".to_vec(),
        ),
        ("invalid-json", long_invalid.into_bytes()),
        (
            "two-objects",
            format!("{{\"a\":\"{}\"}}{{\"b\":1}}\n", "y".repeat(5000)).into_bytes(),
        ),
        ("blank-lines", b"\n\n\r\n  \n".to_vec()),
    ];
    for (name, bytes) in cases {
        let file = write(&env, name, &bytes);
        let parts = round_trip(&env, name, &file, &[]);
        assert!(fields(&parts).is_empty(), "{name} produced fields");
        if bytes.is_empty() {
            assert!(parts.is_empty());
            let manifest = std::fs::read_to_string(env.store.join("manifests/empty.json")).unwrap();
            assert!(manifest.contains("\"parts\":[]"), "{manifest}");
        }
    }
}

#[test]
fn crlf_lines_still_give_fields() {
    let env = Env::new();
    let text = format!(
        "{{\"a\":\"{0}\"}}\r\n{{\"b\":\"{0}\"}}\r\n",
        "z".repeat(5000)
    );
    let file = write(&env, "crlf", text.as_bytes());
    let parts = round_trip(&env, "crlf", &file, &[]);
    assert_eq!(
        fields(&parts),
        vec![(Some("/a".into()), 5002), (Some("/b".into()), 5002)]
    );
}

#[test]
fn the_threshold_counts_raw_tokens_exactly() {
    let env = Env::new();
    // Raw token = quotes + content, so content of threshold-2 bytes is exactly the threshold.
    let line = |n: usize| format!("{{\"s\":\"{}\"}}\n", "a".repeat(n - 2));
    let text = [line(4095), line(4096), line(4097)].concat();
    let file = write(&env, "threshold", text.as_bytes());
    let parts = round_trip(&env, "threshold", &file, &[]);
    assert_eq!(
        fields(&parts),
        vec![(Some("/s".into()), 4096), (Some("/s".into()), 4097)]
    );
}

#[test]
fn escapes_count_as_spelled_and_paths_are_rfc_6901() {
    let env = Env::new();
    let pad = "p".repeat(200);
    let lines = [
        format!(r#"{{"q":"{pad}\"\\\u00e9\ud83d\ude00"}}"#),
        format!(r#"{{"a":[{{"b":"{pad}"}}, ["{pad}"]]}}"#),
        format!(r#"{{"t~x":"{pad}","s/y":"{pad}","":"{pad}","é":"{pad}"}}"#),
        format!(r#"{{"{}":"short"}}"#, "k".repeat(5000)),
        format!(r#""{pad}""#),
    ];
    let file = write(&env, "paths", (lines.join("\n") + "\n").as_bytes());
    let parts = round_trip(&env, "paths", &file, &["--field-threshold", "200"]);
    let escaped_len = 2 + 200 + r#"\"\\\u00e9\ud83d\ude00"#.len() as u64;
    assert_eq!(
        fields(&parts),
        vec![
            (Some("/q".into()), escaped_len),
            (Some("/a/0/b".into()), 202),
            (Some("/a/1/0".into()), 202),
            (Some("/t~0x".into()), 202),
            (Some("/s~1y".into()), 202),
            (Some("/".into()), 202),
            (Some("/é".into()), 202),
            (None, 202),
        ]
    );
}

#[test]
fn a_40_mib_line_round_trips_as_residual() {
    let env = Env::new();
    let mut text = b"{\"big\":\"".to_vec();
    text.extend(std::iter::repeat_n(b'Q', 40 << 20));
    text.extend_from_slice(b"\"}\n{\"after\":\"");
    text.extend(std::iter::repeat_n(b'R', 5000));
    text.extend_from_slice(b"\"}\n");
    let file = write(&env, "huge", &text);
    let parts = round_trip(&env, "huge", &file, &[]);
    // Over max_json_line_bytes: not parsed, so only the next line's field is a field.
    assert_eq!(fields(&parts), vec![(Some("/after".into()), 5002)]);
    assert!(
        parts
            .iter()
            .all(|p| p["object"]["raw_bytes"].as_u64().unwrap() <= 65536 || p["kind"] == "field")
    );
}

#[test]
fn the_same_large_string_is_stored_once_across_and_within_files() {
    let env = Env::new();
    let big = "shared ".repeat(2000);
    let one = format!("{{\"a\":\"{big}\"}}\n{{\"b\":[\"{big}\"]}}\n");
    let two = format!("{{\"x\":{{\"y\":\"{big}\"}}}}\n");
    let f1 = write(&env, "one", one.as_bytes());
    let f2 = write(&env, "two", two.as_bytes());
    let p1 = round_trip(&env, "one", &f1, &[]);
    let p2 = round_trip(&env, "two", &f2, &[]);
    let shas: Vec<&Value> = p1
        .iter()
        .chain(&p2)
        .filter(|p| p["kind"] == "field")
        .map(|p| &p["object"]["sha256"])
        .collect();
    assert_eq!(shas.len(), 3);
    assert!(shas.iter().all(|s| *s == shas[0]));
    let sha = ctxfold::digest::Digest::parse(shas[0].as_str().unwrap()).unwrap();
    assert!(
        ctxfold::store::Store::at(&env.store)
            .odb()
            .contains(&sha)
            .unwrap()
    );
    // One object for the field; the residual bytes of both files are the other objects.
    let expected: std::collections::BTreeSet<&str> = p1
        .iter()
        .chain(&p2)
        .map(|p| p["object"]["sha256"].as_str().unwrap())
        .collect();
    assert_eq!(walk_objects(&env.store), expected.len());
}

#[test]
fn the_store_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let file = write(
        &env,
        "f",
        format!("{{\"a\":\"{}\"}}\n", "x".repeat(5000)).as_bytes(),
    );
    round_trip(&env, "f", &file, &[]);
    for (path, _) in Env::snapshot(&env.store) {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{}", path.display());
    }
}

#[test]
fn split_without_write_touches_no_store_and_names_the_same_objects() {
    let env = Env::new();
    let file = &common::fixture_files()[0];
    let dry: Run = env.run("ctxfold-split", [file]).ok();
    assert!(!env.store.exists(), "split without --write created a store");
    let written = env
        .run(
            "ctxfold-split",
            [std::ffi::OsStr::new("--write"), file.as_os_str()],
        )
        .ok();
    let shas = |run: &Run| -> Vec<String> {
        run.stdout_text()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["object"]["sha256"].to_string())
            .collect()
    };
    assert_eq!(shas(&dry), shas(&written));
    assert!(!dry.stdout_text().contains("stored_bytes"));
    assert!(written.stdout_text().contains("stored_bytes"));
}
