//! `ctxfold secrets`: credentials of every listed kind planted in real sessions are found, each at
//! its line and in its block, masked; real sessions with none planted yield none.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{Env, own};
use ctxfold::secrets::rules::RULES;
use serde_json::Value;

/// The longest text of a JSON value (a string under a key `text`, `content` or `output`, as
/// every agent's messages and tool results hold theirs; not Claude Code's `toolUseResult`, the
/// tool's own record beside the result the model saw), to plant into.
fn longest(value: &mut Value) -> Option<&mut String> {
    match value {
        Value::Array(items) => items.iter_mut().filter_map(longest).max_by_key(|s| s.len()),
        Value::Object(map) => map
            .iter_mut()
            .filter(|(key, _)| *key != "toolUseResult")
            .filter_map(|(key, v)| {
                if !["text", "content", "output"].contains(&key.as_str()) {
                    return longest(v);
                }
                match v {
                    Value::String(s) => Some(s),
                    v => longest(v),
                }
            })
            .max_by_key(|s| s.len()),
        _ => None,
    }
}

/// Whether a line is a message or tool result whose longest string is its text: a user or tool
/// result row (Claude Code), a user or tool result message (Pi), a message (not a developer's)
/// or tool output item (Codex), with a string of 40 bytes or more.
fn roomy(line: &str) -> bool {
    let Ok(mut value) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    let kind = |v: &Value, at: &str| v.pointer(at).and_then(Value::as_str).map(str::to_string);
    let text_row = match kind(&value, "/type").as_deref() {
        Some("user") => true,
        Some("message") => matches!(
            kind(&value, "/message/role").as_deref(),
            Some("user" | "toolResult")
        ),
        Some("response_item") => match kind(&value, "/payload/type").as_deref() {
            Some("message") => kind(&value, "/payload/role").as_deref() != Some("developer"),
            kind => kind == Some("function_call_output"),
        },
        _ => false,
    };
    // A tagged text is the harness's (Claude Code's `<bash-input>` keeps only what is inside).
    text_row && longest(&mut value).is_some_and(|s| s.len() >= 40 && !s.starts_with('<'))
}

/// `fixture` with each rule's example appended to the longest string of one line (the rules
/// spread over the [`roomy`] lines): the bytes, and for each rule its 1-based line.
fn planted(fixture: &Path) -> (Vec<u8>, Vec<(&'static str, u64)>) {
    let text = fs::read_to_string(fixture).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let roomy: Vec<usize> = (0..lines.len()).filter(|&i| roomy(&lines[i])).collect();
    assert!(!roomy.is_empty(), "{}", fixture.display());
    let mut at = Vec::new();
    for (n, rule) in RULES.iter().enumerate() {
        let i = roomy[n % roomy.len()];
        let mut value: Value = serde_json::from_str(&lines[i]).unwrap();
        let s = longest(&mut value).unwrap();
        s.push_str(&format!("\nexport it: {} # done\n", rule.example));
        lines[i] = value.to_string();
        at.push((rule.id, i as u64 + 1));
    }
    let mut bytes = lines.join("\n").into_bytes();
    bytes.push(b'\n');
    (bytes, at)
}

fn findings(run: &common::Run) -> Vec<Value> {
    run.stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Fold `bytes` as a session file named like `fixture` under a folder of its own.
fn fold(env: &Env, fixture: &Path, bytes: &[u8]) -> PathBuf {
    let dir = env.path(&format!(
        "planted-{}",
        fixture.file_name().unwrap().to_str().unwrap()
    ));
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join(fixture.file_name().unwrap());
    fs::write(&file, bytes).unwrap();
    env.run(
        "ctxfold",
        ["fold".as_ref(), "--apply".as_ref(), file.as_os_str()],
    )
    .ok();
    file
}

#[test]
fn planted_credentials_of_every_kind_are_found_at_their_line_and_block_masked() {
    let env = Env::new();
    for name in [
        own::CODEX_AGENT_SMALL,
        own::PI_AGENT_SMALL,
        own::CLAUDE_SESSION,
    ] {
        let fixture = common::own_fixture(name);
        let (bytes, at) = planted(&fixture);
        let file = fold(&env, &fixture, &bytes);
        let id = env
            .run("ctxfold", ["ls", "--json"])
            .ok()
            .stdout_text()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|s| {
                let at = s["rollout_path"].as_str().unwrap();
                at.ends_with(fixture.file_name().unwrap().to_str().unwrap())
            })
            .map(|s| s["id"].as_str().unwrap().to_string())
            .expect("folded");
        // From the store, and from the file named by path: the same findings.
        for spec in [id.as_str(), file.to_str().unwrap()] {
            let run = env.run("ctxfold", ["secrets", "--json", spec]).fails(1);
            let found = findings(&run);
            let stdout = run.stdout_text();
            for rule in RULES {
                let spelled = serde_json::to_string(rule.example).unwrap();
                let secret_tail = &spelled[spelled.len() - 12..spelled.len() - 1];
                assert!(!stdout.contains(secret_tail), "{}: {stdout}", rule.id);
            }
            for (rule, line) in &at {
                let hit = found
                    .iter()
                    .find(|f| f["rule"] == *rule && f["line"] == *line)
                    .unwrap_or_else(|| panic!("{name}: {rule} at line {line}: {found:?}"));
                assert_eq!(hit["session"], spec);
                assert!(hit["preview"].as_str().unwrap().contains('…'), "{hit}");
                // The block named holds the credential: the store gives it back by that id.
                let block = hit["blockId"].as_str().unwrap_or_else(|| panic!("{hit}"));
                let text = env
                    .run("ctxfold-verify-span", ["--session", &id, block])
                    .ok()
                    .stdout_text();
                let example = RULES.iter().find(|r| r.id == *rule).unwrap().example;
                assert!(text.contains(example), "{rule}: {block} is {text:?}");
            }
        }
    }
    // Text for people: SESSION:LINE, rule, preview, block; the status says something was found.
    let text = env.run("ctxfold", ["secrets"]).fails(1);
    let first = text.stdout_text().lines().next().unwrap().to_string();
    assert_eq!(first.split('\t').count(), 4, "{first}");
    assert!(
        text.stderr.contains("secrets in 3 of 3 sessions scanned"),
        "{}",
        text.stderr
    );
}

#[test]
fn real_sessions_with_nothing_planted_hold_no_secrets() {
    let env = Env::new();
    let files = common::fixture_files();
    let mut args = vec!["secrets".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    let run = env.run("ctxfold", &args).ok();
    assert_eq!(run.stdout_text(), "");
    assert!(
        run.stderr.contains(&format!(
            "0 secrets in 0 of {} sessions scanned",
            files.len()
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn a_second_scan_reads_only_what_it_has_not_scanned() {
    let env = Env::new();
    let fixture = common::own_fixture(own::CODEX_AGENT_SMALL);
    let (bytes, _) = planted(&fixture);
    fold(&env, &fixture, &bytes);
    let first = env.run("ctxfold", ["secrets", "--json"]).fails(1).stdout;
    let cache = env.store.join("cache/secrets.jsonl");
    let remembered = fs::read_to_string(&cache).unwrap();
    assert!(remembered.contains("\"rules\""), "{remembered}");
    for rule in RULES {
        let spelled = serde_json::to_string(rule.example).unwrap();
        assert!(
            !remembered.contains(&spelled[1..spelled.len() - 1]),
            "{}",
            rule.id
        );
    }
    // What is remembered is what is reported: a planted finding of our own in the cache shows
    // the scan was not run again.
    let marked = remembered.replacen("\"rule\":\"", "\"rule\":\"remembered-", 1);
    fs::write(&cache, marked).unwrap();
    let second = env
        .run("ctxfold", ["secrets", "--json"])
        .fails(1)
        .stdout_text();
    assert!(second.contains("remembered-"), "{second}");
    assert_ne!(second.as_bytes(), first.as_slice());
    // Under other rules (the header changed), everything is scanned again.
    let other = fs::read_to_string(&cache)
        .unwrap()
        .replacen("\"rules\":\"", "\"rules\":\"0", 1);
    fs::write(&cache, other).unwrap();
    let third = env.run("ctxfold", ["secrets", "--json"]).fails(1).stdout;
    assert_eq!(third, first);
}

#[test]
fn a_session_named_that_is_not_there_is_an_error() {
    let env = Env::new();
    env.run("ctxfold", ["secrets", "/nowhere/x.jsonl"])
        .fails(1)
        .one_line_error("no such session file");
}
