//! Restore gives a session back the mtime its source had when it was folded (kept in the
//! manifest's session as `mtime`), wherever it writes a file: agents sort sessions by it and take
//! a recently touched one for live, and `--older-than` counts from it.

mod common;

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Env, own, own_fixture};

const ID: &str = "01a22ec3-2142-7dc0-ba9d-93c0133f1498";

fn set_mtime(path: &Path, at: SystemTime) {
    fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

fn manifest_mtime(env: &Env) -> String {
    let path = env.store.join(format!("manifests/{ID}.json"));
    let manifest: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    manifest["session"]["mtime"].as_str().unwrap().to_string()
}

#[test]
fn restore_sets_the_mtime_the_source_had_when_folded() {
    let mut env = Env::new();
    let codex = env.path("codex");
    env.set("CODEX_HOME", &codex);
    let fixture = own_fixture(own::CODEX_AGENT_SMALL);
    let source = codex
        .join("sessions/2026/11/30")
        .join(fixture.file_name().unwrap());
    fs::create_dir_all(source.parent().unwrap()).unwrap();
    fs::copy(&fixture, &source).unwrap();
    let year_ago = UNIX_EPOCH + Duration::new(1_764_545_000, 123_456_789);
    set_mtime(&source, year_ago);
    env.run("ctxfold", ["fold", "--apply"]).ok();
    assert_eq!(manifest_mtime(&env), "2025-11-30T23:23:20.123456789Z");

    // Back in its place, to a file, into a folder.
    fs::remove_file(&source).unwrap();
    env.run("ctxfold", ["restore", ID]).ok();
    assert_eq!(mtime(&source), year_ago);
    let file = env.path("one.jsonl");
    env.run("ctxfold", ["restore", ID, "--to", file.to_str().unwrap()])
        .ok();
    assert_eq!(mtime(&file), year_ago);
    let dir = env.path("out");
    let into = format!("{}/", dir.display());
    env.run("ctxfold", ["restore", "--all", "--to", &into]).ok();
    assert_eq!(mtime(&dir.join(source.file_name().unwrap())), year_ago);

    // Grown and folded again: the new mtime.
    fs::OpenOptions::new()
        .append(true)
        .open(&source)
        .unwrap()
        .write_all(b"{\"more\":1}\n")
        .unwrap();
    let later = year_ago + Duration::from_secs(86_400);
    set_mtime(&source, later);
    env.run("ctxfold", ["fold", "--apply"]).ok();
    assert_eq!(manifest_mtime(&env), "2025-12-01T23:23:20.123456789Z");
    let grown = env.path("grown.jsonl");
    env.run("ctxfold", ["restore", ID, "--to", grown.to_str().unwrap()])
        .ok();
    assert_eq!(mtime(&grown), later);
    assert_eq!(fs::read(&grown).unwrap(), fs::read(&source).unwrap());
}

/// The plumbing way records the mtime too: `ctxfold-split --write | ctxfold-write-manifest`
/// keeps the mtime --source had, and restore gives it back.
#[test]
fn write_manifest_records_the_mtime_of_its_source_for_restore() {
    let env = Env::new();
    let source = env.path("plumbed.jsonl");
    fs::copy(own_fixture(own::CODEX_AGENT_SMALL), &source).unwrap();
    let long_ago = UNIX_EPOCH + Duration::new(1_700_000_000, 42);
    set_mtime(&source, long_ago);
    let parts = env
        .run("ctxfold-split", ["--write", source.to_str().unwrap()])
        .ok()
        .stdout;
    let args = [
        "--session-id",
        "plumbed",
        "--source",
        source.to_str().unwrap(),
    ];
    env.run_with_stdin("ctxfold-write-manifest", args, &parts)
        .ok();
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(env.store.join("manifests/plumbed.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["session"]["mtime"],
        "2023-11-14T22:13:20.000000042Z"
    );
    let restored = env.path("restored.jsonl");
    env.run(
        "ctxfold",
        ["restore", "plumbed", "--to", restored.to_str().unwrap()],
    )
    .ok();
    assert_eq!(fs::read(&restored).unwrap(), fs::read(&source).unwrap());
    assert_eq!(mtime(&restored), long_ago);
}
