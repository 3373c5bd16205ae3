//! `ctxfold diff` on forks and resumes made as the agents make them, from the project's own
//! fixtures (and the public ones, `public_…`): a Codex fork (a `session_meta` of its own, then the
//! lines copied, each stamped with the time of the copy), a Pi fork (a header of its own, then the
//! entries copied), Claude Code's resume (the rows copied with the new `sessionId` and without
//! their `slug`, the file's side records before them left out). Each finds the common history to
//! the entry and names the turn it reaches; sessions that only open alike share none.

mod common;

use std::fs;
use std::path::Path;

use common::{Env, own, own_fixture, public_fixture};
use serde_json::{Value, json};

const STAMP: &str = "2026-12-01T09:00:00.000Z";
const CODEX_FORK: &str = "019f0000-0000-7000-8000-00000000f0c1";
const PI_FORK: &str = "019f0000-0000-7000-8000-00000000f0a1";
const CLAUDE_RESUMED: &str = "0f1d0000-0000-4000-8000-00000000c0f1";
const SLUG: &str = "humble-fluttering-metcalfe";

/// The lines of `bytes`, each with its `\n`.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    lines(bytes)
        .iter()
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

fn line_of(value: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(value).unwrap();
    line.push(b'\n');
    line
}

/// The lines of `path` that hold a message from a person, as `show --json` says.
fn person_lines(env: &Env, path: &Path) -> Vec<u64> {
    let shown = env
        .run("ctxfold", ["show", "--json", path.to_str().unwrap()])
        .ok()
        .stdout;
    let mut found: Vec<u64> = json_lines(&shown)
        .iter()
        .filter(|r| r["kind"] == "user")
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    found.dedup();
    found
}

/// `diff --json A B`'s summary.
fn summary(env: &Env, a: &Path, b: &Path) -> Value {
    let run = env.run(
        "ctxfold",
        ["diff", "--json", a.to_str().unwrap(), b.to_str().unwrap()],
    );
    assert!(matches!(run.code, Some(0 | 1)), "{}", run.stderr);
    json_lines(&run.stdout).pop().unwrap()
}

/// Where to fork `a`: before its last message from a person, when it has two or more.
fn fork_point(env: &Env, a: &Path) -> Option<usize> {
    let people = person_lines(env, a);
    (people.len() >= 2).then(|| *people.last().unwrap() as usize - 1)
}

/// `line` with its envelope's time made the copy's.
fn restamped(line: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(line) else {
        return line.to_vec();
    };
    let Some(at) = text.find("\"timestamp\":\"").map(|at| at + 13) else {
        return line.to_vec();
    };
    let end = at + text[at..].find('"').unwrap();
    format!("{}{STAMP}{}", &text[..at], &text[end..]).into_bytes()
}

/// A Codex fork of `a`'s first `keep` lines: its own `session_meta`, the lines copied and
/// stamped anew, then a turn of its own.
fn codex_fork(a: &[u8], keep: usize) -> Vec<u8> {
    let lines = lines(a);
    let mut meta: Value = serde_json::from_slice(lines[0]).unwrap();
    let forked_from = meta["payload"]["id"].clone();
    meta["timestamp"] = STAMP.into();
    meta["payload"]["id"] = CODEX_FORK.into();
    meta["payload"]["timestamp"] = STAMP.into();
    meta["payload"]["forked_from_id"] = forked_from;
    let mut fork = line_of(&meta);
    for line in &lines[..keep] {
        fork.extend(restamped(line));
    }
    let text = "try it the other way";
    fork.extend(line_of(&json!({"timestamp": STAMP, "type": "event_msg",
        "payload": {"type": "user_message", "message": text, "images": []}})));
    fork.extend(line_of(
        &json!({"timestamp": STAMP, "type": "response_item",
        "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}}),
    ));
    fork
}

/// A Pi fork of `a`'s first `keep` lines: a header of its own naming `a` its parent, the
/// entries copied as they are, then a message of its own.
fn pi_fork(a: &[u8], keep: usize, parent: &Path) -> Vec<u8> {
    let lines = lines(a);
    let mut header: Value = serde_json::from_slice(lines[0]).unwrap();
    header["id"] = PI_FORK.into();
    header["timestamp"] = STAMP.into();
    header["parentSession"] = parent.to_str().unwrap().into();
    let mut fork = line_of(&header);
    fork.extend(lines[1..keep].concat());
    let last: Value = serde_json::from_slice(lines[keep - 1]).unwrap_or_default();
    fork.extend(line_of(&json!({"type": "message", "id": "f0f0f0f0",
        "parentId": last["id"], "timestamp": STAMP, "message": {"role": "user",
        "content": [{"type": "text", "text": "try it the other way"}], "timestamp": 1}})));
    fork
}

/// The forks of `a` as Codex or Pi make them, checked: the common history is `a`'s lines to the
/// fork point (B's one more for Codex's own `session_meta`), it reaches the turn before the last,
/// and that turn is named by its prompt and time. Returns how many were checked.
fn check_forks(env: &Env, files: &[std::path::PathBuf]) -> usize {
    let mut checked = 0;
    for (i, a) in files.iter().enumerate() {
        let codex = a.to_string_lossy().contains("/codex/");
        let Some(keep) = fork_point(env, a) else {
            continue;
        };
        let bytes = fs::read(a).unwrap();
        let (fork, own_lines) = match codex {
            true => (codex_fork(&bytes, keep), 1),
            false => (pi_fork(&bytes, keep, a), 0),
        };
        let b = env.path(&format!("fork-{i}.jsonl"));
        fs::write(&b, &fork).unwrap();
        let what = format!("a fork of {} at line {keep}", a.display());
        let summary = summary(env, a, &b);
        assert_eq!(summary["relation"], "parted", "{what}");
        let common = &summary["common"];
        assert_eq!(common["lines"], keep as u64, "{what}: {common}");
        assert_eq!(common["b_lines"], (keep + own_lines) as u64, "{what}");
        let prefix: usize = lines(&bytes)[..keep].iter().map(|l| l.len()).sum();
        assert_eq!(common["bytes"], prefix as u64, "{what}");
        let turns = person_lines(env, a).len() as u64;
        assert_eq!(common["turn"], turns - 1, "{what}");
        assert!(
            common["prompt"].as_str().is_some_and(|p| !p.is_empty()),
            "{what}: {common}"
        );
        assert!(common["at"].is_string(), "{what}: {common}");
        assert_eq!(summary["b_after"]["turns"], 1, "{what}");
        // The other way round, the sides swap.
        let swapped = self::summary(env, &b, a);
        assert_eq!(swapped["common"]["lines"], common["b_lines"], "{what}");
        assert_eq!(swapped["common"]["b_lines"], common["lines"], "{what}");
        checked += 1;
    }
    checked
}

#[test]
fn codex_and_pi_forks_find_their_common_history_and_name_the_turn() {
    let env = Env::new();
    let files: Vec<_> = [
        own::CODEX_AGENT_WORK,
        own::CODEX_UNIFIED_EXEC,
        own::PI_AGENT_WORK,
    ]
    .into_iter()
    .chain([own::PI_V1_COMPACTION, own::PI_V1_MODEL_CHANGES])
    .map(own_fixture)
    .collect();
    assert!(check_forks(&env, &files) >= 4);

    // The text names where they part: A's line and B's, and the turn by its prompt.
    let a = own_fixture(own::CODEX_AGENT_WORK);
    let keep = fork_point(&env, &a).unwrap();
    let b = env.path("codex-fork.jsonl");
    fs::write(&b, codex_fork(&fs::read(&a).unwrap(), keep)).unwrap();
    let text = env
        .run(
            "ctxfold",
            ["diff", "--stat", a.to_str().unwrap(), b.to_str().unwrap()],
        )
        .fails(1)
        .stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with(&format!(
            "common history: {keep} lines ({} in B), ",
            keep + 1
        )),
        "{text}"
    );
    assert!(lines[1].contains(", through turn "), "{text}");
    assert!(lines[1].ends_with("Z)"), "{text}");
    assert!(
        lines[2].starts_with(&format!(
            "they part at line {} (line {} in B): after it, A has ",
            keep + 1,
            keep + 2
        )),
        "{text}"
    );
}

#[test]
fn sessions_that_only_open_alike_share_no_history() {
    let env = Env::new();
    // Two sessions of one Codex build open with the same instructions, written at other times.
    let (a, b) = (
        own_fixture(own::CODEX_AGENT_WORK),
        own_fixture(own::CODEX_AGENT_SMALL),
    );
    let summary = summary(&env, &a, &b);
    assert_eq!(summary["relation"], "parted");
    assert_eq!(summary["common"]["lines"], 0, "{summary}");
    let text = env
        .run(
            "ctxfold",
            ["diff", "--stat", a.to_str().unwrap(), b.to_str().unwrap()],
        )
        .fails(1)
        .stdout_text();
    assert_eq!(text.lines().nth(1), Some("common history: none"), "{text}");
}

/// `a` as Claude Code 2.1.x writes it, each row with its session's `slug`.
fn with_slug(a: &[u8], session: &str) -> Vec<u8> {
    let id = format!("\"sessionId\":\"{session}\"");
    lines(a)
        .iter()
        .flat_map(|line| {
            let row = serde_json::from_slice::<Value>(line).is_ok_and(|v| v.get("uuid").is_some());
            let text = String::from_utf8(line.to_vec()).unwrap();
            match row {
                true => text.replace(&id, &format!("{id},\"slug\":\"{SLUG}\"")),
                false => text,
            }
            .into_bytes()
        })
        .collect()
}

/// Claude Code's resume of `a` from its lines `from..=to` (1-based): each copied with the new
/// `sessionId`, without its `slug`, `file-history-snapshot`s left out; then a prompt of its own.
fn claude_resume(a: &[u8], session: &str, from: usize, to: usize) -> Vec<u8> {
    let (old, new) = (
        format!("\"sessionId\":\"{session}\""),
        format!("\"sessionId\":\"{CLAUDE_RESUMED}\""),
    );
    let slug = format!(",\"slug\":\"{SLUG}\"");
    let mut resumed = Vec::new();
    let mut parent = Value::Null;
    for line in &lines(a)[from - 1..to] {
        let text = String::from_utf8(line.to_vec()).unwrap();
        if text.starts_with("{\"type\":\"file-history-snapshot\"") {
            continue;
        }
        if let Ok(row) = serde_json::from_str::<Value>(&text)
            && row.get("uuid").is_some()
        {
            parent = row["uuid"].clone();
        }
        resumed.extend(text.replace(&old, &new).replace(&slug, "").into_bytes());
    }
    resumed.extend(line_of(&json!({"parentUuid": parent, "isSidechain": false,
        "type": "user", "message": {"role": "user", "content": "now update the docs"},
        "uuid": "0f1d0000-0000-4000-8000-0000000c0f01", "timestamp": STAMP,
        "userType": "external", "cwd": "/home/dev/shop", "sessionId": CLAUDE_RESUMED,
        "version": "2.1.30", "gitBranch": "main"})));
    resumed
}

#[test]
fn claude_codes_resume_finds_the_rows_it_copied() {
    let env = Env::new();
    let session = "0f1d0000-0000-4000-8000-00000000c001";
    let a = env.path(&format!("{session}.jsonl"));
    let original = with_slug(
        &fs::read(own_fixture(own::CLAUDE_SESSION)).unwrap(),
        session,
    );
    fs::write(&a, &original).unwrap();
    let b = env.path(&format!("{CLAUDE_RESUMED}.jsonl"));
    let resumed = claude_resume(&original, session, 2, 35);
    fs::write(&b, &resumed).unwrap();
    // The shape of the pair: the second file's first 34 lines are the first's lines 2-35, each
    // with the new session id and without its slug.
    let (a_lines, b_lines) = (lines(&original), lines(&resumed));
    assert_eq!(b_lines.len(), 35);
    for (copy, line) in b_lines[..34].iter().zip(&a_lines[1..35]) {
        assert_ne!(copy, line);
        let text = String::from_utf8_lossy(copy);
        assert!(
            text.contains(CLAUDE_RESUMED) && !text.contains(SLUG),
            "{text}"
        );
    }

    let summary = summary(&env, &a, &b);
    assert_eq!(summary["relation"], "parted", "{summary}");
    let common = &summary["common"];
    assert_eq!(common["lines"], 35, "{common}");
    assert_eq!(common["b_lines"], 34, "{common}");
    let through: usize = a_lines[..35].iter().map(|l| l.len()).sum();
    assert_eq!(common["bytes"], through as u64);
    let turns = person_lines(&env, &a);
    let turn = turns.iter().filter(|&&l| l <= 35).count() as u64;
    assert!(turn >= 1);
    assert_eq!(common["turn"], turn, "{common}");
    assert_eq!(summary["b_after"]["lines"], 1);
    assert_eq!(summary["b_after"]["turns"], 1);
    assert_eq!(summary["a_after"]["lines"], (a_lines.len() - 35) as u64);

    // The rows a resume copies are the same entries whatever the key order it writes them in.
    let reordered: Vec<u8> = lines(&resumed)
        .iter()
        .flat_map(|l| match serde_json::from_slice::<Value>(l) {
            Ok(v) if v.get("uuid").is_some() => line_of(&v),
            _ => l.to_vec(),
        })
        .collect();
    let c = env.path("reordered.jsonl");
    fs::write(&c, reordered).unwrap();
    assert_eq!(self::summary(&env, &a, &c)["common"], summary["common"]);

    // A row edited in the copy is where they part.
    let mut edited = b_lines.iter().map(|l| l.to_vec()).collect::<Vec<_>>();
    edited[20] = String::from_utf8(edited[20].clone())
        .unwrap()
        .replacen("\"timestamp\":\"2026", "\"timestamp\":\"2027", 1)
        .into_bytes();
    let d = env.path("edited.jsonl");
    fs::write(&d, edited.concat()).unwrap();
    let parted = self::summary(&env, &a, &d);
    assert_eq!(parted["common"]["b_lines"], 20, "{parted}");
}

#[test]
fn public_forks_of_real_codex_and_pi_sessions_find_their_common_history() {
    let env = Env::new();
    let names = [
        "rollout-2026-05-11T11-26-55",
        "rollout-2026-02-23T12-40-23",
        "rollout-2026-01-02T18-39-45",
        "pi/session.jsonl",
        "pi/large-session.jsonl",
    ];
    let Some(files) = names
        .iter()
        .map(|n| public_fixture(n))
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    assert!(check_forks(&env, &files) >= 4);
}

#[test]
fn a_session_with_one_side_is_compared_with_its_nearest_relative_in_the_store() {
    let env = Env::new();
    let a = own_fixture(own::PI_AGENT_WORK);
    let other = own_fixture(own::PI_AGENT_SMALL);
    let keep = fork_point(&env, &a).unwrap();
    let b = env.path("pi-fork.jsonl");
    fs::write(&b, pi_fork(&fs::read(&a).unwrap(), keep, &a)).unwrap();
    let (a_arg, b_arg) = (a.to_str().unwrap(), b.to_str().unwrap());
    // The fork is not folded: its relative is the session it was forked from, not another.
    env.run(
        "ctxfold",
        ["fold", "--apply", "-q", a_arg, other.to_str().unwrap()],
    )
    .ok();
    let run = env.run("ctxfold", ["diff", "--json", b_arg]);
    let summary = json_lines(&run.fails(1).stdout).pop().unwrap();
    assert!(
        summary["b"]
            .as_str()
            .unwrap()
            .ends_with(" (its nearest relative)"),
        "{summary}"
    );
    assert_eq!(summary["common"]["lines"], keep as u64, "{summary}");
    assert_eq!(summary, {
        let mut direct = self::summary(&env, &b, &a);
        direct["b"] = summary["b"].clone();
        direct
    });
    // show names it in its heading, with their common history.
    let a_id = json_lines(&fs::read(&a).unwrap())[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = env
        .run("ctxfold", ["show", "--no-pager", b_arg])
        .ok()
        .stdout_text();
    let relative = shown
        .lines()
        .find(|l| l.starts_with("relative: "))
        .unwrap_or_else(|| panic!("no relative in the heading:\n{shown}"));
    assert!(
        relative.starts_with(&format!("relative: {a_id} (common history: {keep} lines")),
        "{relative}"
    );
    // With no relative in the store, it says so.
    let alone = env.path("alone.jsonl");
    fs::write(&alone, pi_fork(&fs::read(&other).unwrap(), 1, &other)).unwrap();
    let run = env.run("ctxfold", ["diff", alone.to_str().unwrap()]);
    run.fails(1)
        .one_line_error("not folded, and no folded session shares its history");
    let shown = env
        .run("ctxfold", ["show", "--no-pager", alone.to_str().unwrap()])
        .ok()
        .stdout_text();
    assert!(!shown.contains("relative:"), "{shown}");
}
