//! The fixture sets: the project's own (tests/fixtures, what every default run uses) hold the
//! edge cases the other tests rely on, are small, documented, and the generated ones are exactly
//! what their generator writes; the public ones (../shared/fixtures/real) are an extra suite, run
//! when they are there and reported as skipped when they are not.

mod common;
#[path = "support/fixture_gen.rs"]
mod fixture_gen;

use std::fs;
use std::io::Write;

use common::{own, own_fixture};
use serde_json::Value;

/// The JSON lines of `bytes` that parse (CRLF and all).
fn values(bytes: &[u8]) -> Vec<Value> {
    bytes
        .split(|&b| b == b'\n')
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

fn read(name: &str) -> Vec<u8> {
    fs::read(own_fixture(name)).unwrap()
}

#[test]
fn generated_fixtures_are_what_the_generator_writes() {
    let rewrite = std::env::var_os("CTXFOLD_WRITE_FIXTURES").is_some();
    for (name, bytes) in fixture_gen::all() {
        let path = common::own_fixtures_dir().join(name);
        if rewrite {
            fs::write(&path, &bytes).unwrap();
        }
        assert!(
            fs::read(&path).ok().as_ref() == Some(&bytes),
            "{name} is not what tests/support/fixture_gen.rs writes: \
             `CTXFOLD_WRITE_FIXTURES=1 cargo test --test fixtures` rewrites it"
        );
    }
}

#[test]
fn own_fixtures_are_small_and_each_is_documented() {
    let readme = fs::read_to_string(common::own_fixtures_dir().join("README.md")).unwrap();
    let files = common::session_files(&common::own_fixtures_dir());
    let mut total = 0;
    for file in &files {
        total += fs::metadata(file).unwrap().len();
        let name = file.file_name().unwrap().to_str().unwrap();
        assert!(
            readme.contains(name),
            "{name} is not in tests/fixtures/README.md"
        );
    }
    assert!(total < 2 << 20, "the own fixtures hold {total} bytes");
}

#[test]
fn the_agent_sessions_are_the_pinned_agents_own() {
    let codex = values(&read(own::CODEX_AGENT_WORK));
    assert_eq!(codex[0]["payload"]["cli_version"], "0.169.0");
    assert!(codex.iter().any(|l| l["type"] == "compacted"));
    let pi = values(&read(own::PI_AGENT_WORK));
    assert_eq!(pi[0]["version"], 3);
    assert!(pi.iter().any(|l| l["type"] == "compaction"));
    for name in [own::CODEX_AGENT_SMALL, own::PI_AGENT_SMALL] {
        assert!(values(&read(name)).len() > 3, "{name}");
    }
}

/// How many JSON objects each non-empty line holds.
fn objects_per_line(bytes: &[u8]) -> Vec<usize> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::Deserializer::from_slice(l)
                .into_iter::<Value>()
                .filter_map(Result::ok)
                .count()
        })
        .collect()
}

#[test]
fn pi_v1_compaction_has_two_objects_on_one_line() {
    let bytes = read(own::PI_V1_COMPACTION);
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let header: Value = serde_json::from_slice(lines[0]).unwrap();
    assert!(header["type"] == "session" && header.get("version").is_none());
    let joined = objects_per_line(&bytes);
    assert_eq!(joined.iter().filter(|&&n| n == 2).count(), 1);
    assert_eq!(joined.iter().filter(|&&n| n != 1 && n != 2).count(), 0);
    let values = values(&bytes);
    assert!(values.iter().any(|v| v["type"] == "compaction"));
    assert!(values.iter().any(|v| v["type"] == "thinking_level_change"));
}

#[test]
fn the_codex_edge_cases_are_there() {
    // Cut mid-turn: the last line is a call whose output never came, and has no newline.
    let bytes = read(own::CODEX_MID_TURN);
    assert_ne!(bytes.last(), Some(&b'\n'));
    let lines = values(&bytes);
    let last = &lines.last().unwrap()["payload"];
    assert_eq!(last["type"], "function_call");
    assert!(
        !lines
            .iter()
            .any(|l| l["payload"]["type"] == "function_call_output"
                && l["payload"]["call_id"] == last["call_id"])
    );

    // exec_command_end repeats a large output three times.
    let lines = values(&read(own::CODEX_UNIFIED_EXEC));
    assert!(lines.iter().any(|l| {
        let p = &l["payload"];
        p["type"] == "exec_command_end"
            && p["stdout"].as_str().is_some_and(|s| s.len() >= 4096)
            && p["stdout"] == p["aggregated_output"]
            && p["stdout"] == p["formatted_output"]
    }));

    // `shell` outputs are JSON strings with metadata.exit_code; every line ends in CRLF.
    let bytes = read(own::CODEX_SHELL_CRLF);
    assert_eq!(
        bytes.windows(2).filter(|w| w == b"\r\n").count(),
        bytes.iter().filter(|&&b| b == b'\n').count()
    );
    let codes: Vec<i64> = values(&bytes)
        .iter()
        .filter(|l| l["payload"]["type"] == "function_call_output")
        .map(|l| {
            let output: Value =
                serde_json::from_str(l["payload"]["output"].as_str().unwrap()).unwrap();
            output["metadata"]["exit_code"].as_i64().unwrap()
        })
        .collect();
    assert!(codes.contains(&0) && codes.contains(&101), "{codes:?}");
}

#[test]
fn pi_v1_model_changes_has_aborts_images_and_bytes_that_are_not_utf8() {
    let bytes = read(own::PI_V1_MODEL_CHANGES);
    assert!(std::str::from_utf8(&bytes).is_err());
    let lines = values(&bytes);
    let count = |kind: &str| lines.iter().filter(|l| l["type"] == kind).count();
    assert_eq!(
        (count("model_change"), count("thinking_level_change")),
        (2, 2)
    );
    let aborted = lines
        .iter()
        .filter(|l| l["message"]["stopReason"] == "aborted")
        .count();
    assert_eq!(aborted, 2);
    let images = lines
        .iter()
        .filter(|l| {
            l["message"]["content"]
                .to_string()
                .contains("\"image/png\"")
        })
        .count();
    assert_eq!(images, 2);
}

/// The extra suite: passes either way, and says which.
#[test]
fn public_fixtures_are_present_or_skipped_with_a_note() {
    let path = common::public_fixtures_path();
    // Written past the test harness's capture, so that a plain `cargo test` shows it.
    let mut stderr = std::io::stderr();
    match common::public_fixtures_dir() {
        Some(dir) => {
            let files = common::session_files(&dir);
            for file in &files {
                let first = fs::read(file).unwrap();
                let first = first.split(|&b| b == b'\n').next().unwrap();
                assert!(
                    serde_json::from_slice::<Value>(first).is_ok(),
                    "{}: not a session",
                    file.display()
                );
            }
            writeln!(
                stderr,
                "\npublic fixtures: {} session files at {}: the extra suite runs",
                files.len(),
                dir.display()
            )
            .unwrap();
        }
        None => writeln!(
            stderr,
            "\nnote: no public fixtures at {}: the extra suite over them is skipped; set \
             CTXFOLD_FIXTURES to their folder (.ci/run points it at ../shared/fixtures/real)",
            path.display()
        )
        .unwrap(),
    }
}

#[test]
fn the_claude_code_edge_cases_are_there() {
    let bytes = read(own::CLAUDE_SESSION);
    let objects_per_line = objects_per_line(&bytes);
    assert_eq!(objects_per_line.iter().filter(|&&n| n == 2).count(), 1);
    let lines = values(&bytes);
    // The first line is a side record: the cwd comes later.
    assert!(lines[0].get("cwd").is_none() && lines[0]["sessionId"].is_string());
    let has = |test: &dyn Fn(&Value) -> bool| lines.iter().any(test);
    assert!(has(&|l| l["subtype"] == "compact_boundary"
        && l["parentUuid"].is_null()
        && l["compactMetadata"]["preservedSegment"]["headUuid"]
            .is_string()));
    assert!(has(&|l| l["isCompactSummary"] == true));
    assert!(has(
        &|l| l["toolUseResult"]["persistedOutputPath"].is_string()
    ));
    assert!(has(&|l| {
        l["toolUseResult"]
            .as_str()
            .is_some_and(|r| r.starts_with("Error: Exit code 1\nTraceback"))
    }));
    assert!(has(&|l| l["type"] == "agent-name"));
    for kind in ["attachment", "last-prompt", "api-request", "cost-state"] {
        assert!(has(&|l| l["type"] == kind), "{kind}");
    }

    let subagent = values(&read(own::CLAUDE_SUBAGENT));
    assert!(subagent.iter().all(|l| l["isSidechain"] == true
        && l["agentId"] == "a0f1d00000000c0a1"
        && l["sessionId"] == lines[0]["sessionId"]));

    let legacy = values(&read(own::CLAUDE_LEGACY));
    assert_eq!(legacy[0]["type"], "summary");
    assert!(legacy.iter().any(|l| l["type"] == "progress"));
    assert!(legacy.iter().any(|l| l["type"] == "file-history-snapshot"));
}
