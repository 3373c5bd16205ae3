//! `ctxfold diff`: on forks made from real sessions (a line-aligned prefix of one, then lines of
//! another) it finds the exact point where they part; a folded session against its file grown or
//! changed since; bad input; colour only where a person reads.

mod common;
mod homes;

use std::fs;
use std::path::Path;

use common::{Env, fixture_files};
use homes::json_lines;
use serde_json::Value;

/// The lines of `bytes`, each with its `\n`.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

/// `diff --json ARGS`: the turn records and the summary, with the exit status.
fn diff(env: &Env, args: &[&str]) -> (Vec<Value>, Value, i32) {
    let mut all = vec!["diff", "--json"];
    all.extend_from_slice(args);
    let run = env.run("ctxfold", all);
    assert!(
        matches!(run.code, Some(0 | 1)),
        "diff {args:?}: {}",
        run.stderr
    );
    let mut records = json_lines(&run.stdout);
    let summary = records.pop().expect("a summary");
    assert_eq!(summary["type"], "summary");
    (records, summary, run.code.unwrap())
}

/// The turn line `n` (1-based) is in, as `show --json` counts turns.
fn turn_of_line(env: &Env, path: &Path, n: u64) -> u64 {
    let shown = env
        .run("ctxfold", ["show", "--json", path.to_str().unwrap()])
        .ok()
        .stdout;
    json_lines(&shown)
        .iter()
        .filter(|r| r["line"].as_u64().unwrap() <= n)
        .filter_map(|r| r["turn"].as_u64())
        .max()
        .unwrap_or(0)
}

#[test]
fn forks_of_real_sessions_part_exactly_where_they_were_made() {
    let env = Env::new();
    let files = fixture_files();
    for (i, base) in files.iter().enumerate() {
        let other = &files[(i + 1) % files.len()];
        let (base_bytes, other_bytes) = (fs::read(base).unwrap(), fs::read(other).unwrap());
        let (base_lines, other_lines) = (lines(&base_bytes), lines(&other_bytes));
        if base_lines.len() < 4 || other_lines.len() < 4 {
            continue;
        }
        let keep = base_lines.len() / 2;
        // The other session's second half: its first line is not the base's next.
        let tail: Vec<&[u8]> = other_lines[other_lines.len() / 2..]
            .iter()
            .copied()
            .filter(|l| l.ends_with(b"\n"))
            .collect();
        assert_ne!(tail[0], base_lines[keep]);
        let mut fork = base_lines[..keep].concat();
        fork.extend(tail.concat());
        let fork_path = env.path(&format!("fork-{i}.jsonl"));
        fs::write(&fork_path, &fork).unwrap();
        let what = format!("{} forked with {}", base.display(), other.display());

        let (base_arg, fork_arg) = (base.to_str().unwrap(), fork_path.to_str().unwrap());
        let (turns, summary, code) = diff(&env, &[base_arg, fork_arg]);
        assert_eq!(code, 1, "{what}");
        assert_eq!(summary["relation"], "parted", "{what}");
        let common = &summary["common"];
        assert_eq!(common["lines"], keep as u64, "{what}");
        let prefix_bytes: usize = base_lines[..keep].iter().map(|l| l.len()).sum();
        assert_eq!(common["bytes"], prefix_bytes as u64, "{what}");
        assert_eq!(
            common["turn"],
            turn_of_line(&env, base, keep as u64),
            "{what}"
        );
        assert_eq!(
            summary["a_after"]["lines"],
            (base_lines.len() - keep) as u64
        );
        assert_eq!(summary["b_after"]["lines"], tail.len() as u64, "{what}");
        let after_bytes = base_bytes.len() - prefix_bytes;
        assert_eq!(summary["a_after"]["bytes"], after_bytes as u64);
        assert!(!turns.is_empty(), "{what}: no turn differs");

        // The other way round, the sides swap; --stat says the same without the turns.
        let (turns, swapped, _) = diff(&env, &["--stat", fork_arg, base_arg]);
        assert!(turns.is_empty());
        assert_eq!(swapped["common"], summary["common"]);
        assert_eq!(swapped["a_after"], summary["b_after"]);

        // A prefix alone is a session the other grew from.
        let prefix = env.path(&format!("prefix-{i}.jsonl"));
        fs::write(&prefix, base_lines[..keep].concat()).unwrap();
        let (_, grown, _) = diff(&env, &[prefix.to_str().unwrap(), base_arg]);
        assert_eq!(grown["relation"], "grown", "{what}");
        assert_eq!(grown["common"]["lines"], keep as u64);
        let (_, same, code) = diff(&env, &[base_arg, base_arg]);
        assert_eq!((same["relation"].as_str(), code), (Some("same"), 0));
    }
}

#[test]
fn the_rendered_diff_shows_each_side_after_the_fork_turn_by_turn() {
    let env = Env::new();
    let base = common::own_fixture(common::own::PI_AGENT_WORK);
    let other = common::own_fixture(common::own::PI_AGENT_SMALL);
    let (base_bytes, other_bytes) = (fs::read(&base).unwrap(), fs::read(&other).unwrap());
    let base_lines = lines(&base_bytes);
    // Everything before the base's second message from a person, then the other's turns.
    let second = base_lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let v: Value = serde_json::from_slice(l).unwrap_or_default();
            v["type"] == "message" && v["message"]["role"] == "user"
        })
        .nth(1)
        .unwrap()
        .0;
    let mut fork = base_lines[..second].concat();
    fork.extend(lines(&other_bytes)[1..].concat());
    let fork_path = env.path("fork.jsonl");
    fs::write(&fork_path, &fork).unwrap();
    let run = env.run(
        "ctxfold",
        ["diff", base.to_str().unwrap(), fork_path.to_str().unwrap()],
    );
    let text = run.fails(1).stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("diff "), "{text}");
    assert!(
        lines[1].starts_with(&format!("common history: {second} lines, ")),
        "{text}"
    );
    assert!(text.contains("@@ turn 2 @@"), "{text}");
    assert!(text.contains("\n-    ctxfold-scenario:resume"), "{text}");
    assert!(
        text.contains("\n+    ctxfold-scenario:small Please do the small task."),
        "{text}"
    );
    assert!(
        lines.last().unwrap().starts_with(&format!(
            "they part at line {}: after it, A has ",
            second + 1
        )),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "colour in a pipe: {text}");
    let coloured = env
        .run(
            "ctxfold",
            [
                "diff",
                "--color",
                "always",
                base.to_str().unwrap(),
                fork_path.to_str().unwrap(),
            ],
        )
        .stdout_text();
    assert!(coloured.contains("\x1b[32m+"), "{coloured}");
    assert!(coloured.contains("\x1b[31m-"), "{coloured}");
    // Two sessions apart from their first line have no common history, not one of "0 B (0 bytes)".
    let run = env.run(
        "ctxfold",
        ["diff", base.to_str().unwrap(), other.to_str().unwrap()],
    );
    let text = run.fails(1).stdout_text();
    assert_eq!(text.lines().nth(1), Some("common history: none"), "{text}");
}

#[test]
fn one_session_is_compared_with_its_file_on_disk() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
    let session = homes.active().next().unwrap().clone();
    let text = env.run("ctxfold", ["diff", &session.id]).ok().stdout_text();
    assert!(
        text.trim_end()
            .ends_with("the same: the file on disk is as folded"),
        "{text}"
    );

    // Grown: two lines more, the second a new message from a person.
    let session_lines = lines(&session.bytes);
    let last = session_lines.last().unwrap().to_vec();
    let mut grown = session.bytes.clone();
    grown.extend_from_slice(&last);
    // A line that holds a message from a person, as `show --json` says.
    let shown = env
        .run(
            "ctxfold",
            ["show", "--json", session.path.to_str().unwrap()],
        )
        .ok()
        .stdout;
    let user_line = json_lines(&shown)
        .into_iter()
        .find(|r| r["kind"] == "user")
        .unwrap()["line"]
        .as_u64()
        .unwrap();
    let opener = session_lines[user_line as usize - 1];
    grown.extend_from_slice(opener);
    fs::write(&session.path, &grown).unwrap();
    let (_, summary, code) = diff(&env, &[&session.id]);
    assert_eq!((summary["relation"].as_str(), code), (Some("grown"), 1));
    assert_eq!(summary["common"]["lines"], session_lines.len() as u64);
    assert_eq!(summary["b_after"]["lines"], 2);
    assert_eq!(summary["b_after"]["turns"], 1);
    let status = env.run("ctxfold", ["status", "--json"]).stdout;
    let state = json_lines(&status)
        .into_iter()
        .find(|s| s["id"] == session.id.as_str())
        .unwrap();
    assert_eq!(state["state"], "grown", "diff agrees with status");
    let text = env
        .run("ctxfold", ["diff", "--stat", &session.id])
        .fails(1)
        .stdout_text();
    assert!(text.contains("grown by 2 lines ("), "{text}");
    assert!(text.contains("1 new turn)"), "{text}");

    // Changed: line 3 rewritten.
    let mut changed: Vec<Vec<u8>> = session_lines.iter().map(|l| l.to_vec()).collect();
    changed[2] = b"{\"type\":\"rewritten\"}\n".to_vec();
    fs::write(&session.path, changed.concat()).unwrap();
    let (_, summary, _) = diff(&env, &[&session.id]);
    assert_eq!(summary["relation"], "parted");
    assert_eq!(summary["common"]["lines"], 2);
    let text = env
        .run("ctxfold", ["diff", &session.id])
        .fails(1)
        .stdout_text();
    assert!(text.contains("changed at line 3: "), "{text}");
}

#[test]
fn bad_input_is_one_line_and_the_right_status() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let one = &homes.sessions[2];
    env.run("ctxfold", ["diff", "no-such-session", &one.id])
        .fails(1)
        .one_line_error("no session \"no-such-session\"");
    env.run("ctxfold", ["diff", &one.id, "./missing.jsonl"])
        .fails(1)
        .one_line_error("no such session file");
    env.run("ctxfold", ["diff", &one.id])
        .fails(1)
        .one_line_error("not folded");
    env.run("ctxfold", ["diff"]).fails(2);
    env.run("ctxfold", ["fold", "--apply", "-q"]).ok();
    fs::remove_file(&one.path).unwrap();
    env.run("ctxfold", ["diff", &one.id])
        .fails(1)
        .one_line_error("its file is not on disk");
    // A damaged manifest: status 4, one line.
    let two = &homes.sessions[3];
    let manifest = env.store.join("manifests").join(format!("{}.json", two.id));
    fs::write(&manifest, b"{\"version\":").unwrap();
    env.run("ctxfold", ["diff", &two.id])
        .fails(4)
        .one_line_error(&two.id);
}
