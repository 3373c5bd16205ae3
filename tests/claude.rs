//! Claude Code transcripts through the porcelain, on a fake `CLAUDE_CONFIG_DIR` with two projects,
//! a subagent, a `summary` session and the files Claude Code keeps beside sessions: found with
//! their ids, titles, cwds and activity, folded (idle ones removed, the session's own folder left),
//! restored to their place byte for byte, indexed and recalled; unsafe ids and bad input refused.

mod common;
mod homes;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::{Env, own, own_fixture};
use homes::json_lines;
use serde_json::Value;

const SESSION: &str = "0f1d0000-0000-4000-8000-00000000c001";
const LEGACY: &str = "0f1d0000-0000-4000-8000-00000000c002";
const FRESH: &str = "0f1d0000-0000-4000-8000-00000000c003";
const AGENT: &str = "agent-a0f1d00000000c0a1";
const SHOP: &str = "-home-dev-shop";
const QUEUE: &str = "-home-dev-queue";

/// A session written just now: a prompt, and the record naming it the latest.
const FRESH_LINES: &str = concat!(
    r#"{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"bump the queue crate"},"uuid":"9e0c0c3a-0000-4000-8000-000000000001","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/home/dev/queue","sessionId":"0f1d0000-0000-4000-8000-00000000c003","version":"2.1.30"}"#,
    "\n",
    r#"{"type":"last-prompt","lastPrompt":"and publish it","leafUuid":"9e0c0c3a-0000-4000-8000-000000000001","sessionId":"0f1d0000-0000-4000-8000-00000000c003"}"#,
    "\n"
);

struct Placed {
    id: &'static str,
    path: PathBuf,
    bytes: Vec<u8>,
}

struct Claude {
    config: PathBuf,
    sessions: Vec<Placed>,
    /// The session's own folder: a large output saved whole, the subagent's metadata.
    folder: PathBuf,
}

impl Claude {
    fn get(&self, id: &str) -> &Placed {
        self.sessions.iter().find(|s| s.id == id).unwrap()
    }
}

fn write(path: &Path, bytes: &[u8], age: Duration) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - age).unwrap();
}

/// The config dir at `config`: the main session (idle) with its subagent and its folder, a 1.0
/// session (idle by its file, but registered by a running Claude Code), a session written just
/// now, and what else Claude Code keeps there (memory, history, a live registration).
fn build(config: &Path) -> Claude {
    let hour = Duration::from_secs(3600);
    let projects = config.join("projects");
    let folder = projects.join(SHOP).join(SESSION);
    let mut sessions = Vec::new();
    for (id, path, bytes) in [
        (
            SESSION,
            projects.join(SHOP).join(format!("{SESSION}.jsonl")),
            fs::read(own_fixture(own::CLAUDE_SESSION)).unwrap(),
        ),
        (
            AGENT,
            folder.join("subagents").join(format!("{AGENT}.jsonl")),
            fs::read(own_fixture(own::CLAUDE_SUBAGENT)).unwrap(),
        ),
        (
            LEGACY,
            projects.join(QUEUE).join(format!("{LEGACY}.jsonl")),
            fs::read(own_fixture(own::CLAUDE_LEGACY)).unwrap(),
        ),
        (
            FRESH,
            projects.join(QUEUE).join(format!("{FRESH}.jsonl")),
            FRESH_LINES.as_bytes().to_vec(),
        ),
    ] {
        let age = if id == FRESH { Duration::ZERO } else { hour };
        write(&path, &bytes, age);
        sessions.push(Placed { id, path, bytes });
    }
    write(
        &folder.join("subagents").join(format!("{AGENT}.meta.json")),
        br#"{"agentType":"general-purpose","description":"List reconcile inputs"}"#,
        hour,
    );
    write(
        &folder.join("tool-results/b7k2x9q1.txt"),
        b"2026-11-28T10:00:00Z worker-0 job=1 state=ok\n",
        hour,
    );
    write(
        &projects.join(SHOP).join("memory/notes.jsonl"),
        b"{\"note\":\"not a session\"}\n",
        hour,
    );
    write(
        &config.join("history.jsonl"),
        b"{\"display\":\"bump\",\"sessionId\":\"x\"}\n",
        hour,
    );
    // This test's own process stands for the Claude Code running the 1.0 session.
    let pid = std::process::id();
    write(
        &config.join(format!("sessions/{pid}.json")),
        format!(r#"{{"pid":{pid},"sessionId":"{LEGACY}","cwd":"/home/dev/queue"}}"#).as_bytes(),
        Duration::ZERO,
    );
    Claude {
        config: config.to_path_buf(),
        sessions,
        folder,
    }
}

fn setup() -> (Env, Claude) {
    let mut env = Env::new();
    let claude = build(&env.path("claude-config"));
    env.set("CLAUDE_CONFIG_DIR", &claude.config);
    (env, claude)
}

fn listed(env: &Env, args: &[&str]) -> Vec<Value> {
    let mut lines = json_lines(&env.run("ctxfold", args).ok().stdout);
    lines.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    lines
}

#[test]
fn discovery_finds_sessions_and_subagents_with_titles_cwds_and_activity() {
    let (env, claude) = setup();
    let lines = listed(&env, &["list-sessions"]);
    let ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [SESSION, LEGACY, FRESH, AGENT]);
    let expect = [
        // `/rename`: the agent-name wins over every prompt; the cwd from a later line than the first.
        (SESSION, "Ledger refund fixes", "/home/dev/shop", true),
        // The summary line; idle by its file, active by its registration.
        (LEGACY, "Flaky queue drain test", "/home/dev/queue", false),
        // The latest prompt; written just now.
        (FRESH, "and publish it", "/home/dev/queue", false),
        // A subagent: the task it was given.
        (
            AGENT,
            "List the files tools/reconcile.py reads.",
            "/home/dev/shop",
            true,
        ),
    ];
    for (line, (id, title, cwd, archived)) in lines.iter().zip(expect) {
        let placed = claude.get(id);
        assert_eq!(line["title"], title, "{id}");
        assert_eq!(line["cwd"], cwd, "{id}");
        assert_eq!(line["archived"], archived, "{id}");
        assert_eq!(line["agent"], "claude", "{id}");
        assert_eq!(line["path"], placed.path.to_str().unwrap());
        assert_eq!(line["rollout_path"], placed.path.to_str().unwrap());
    }

    // --agent picks the agent; the others' homes are not even searched.
    assert_eq!(
        listed(&env, &["list-sessions", "--agent", "claude"]).len(),
        4
    );
    assert!(
        listed(
            &env,
            &["list-sessions", "--agent", "codex", "--agent", "pi"]
        )
        .is_empty()
    );
    env.run("ctxfold", ["list-sessions", "--agent", "cursor"])
        .fails(2);
    // Named by path, a folder of transcripts is read as Claude Code's too; any other JSON Lines
    // file in it (the memory folder's) is a plain file's.
    let named = listed(
        &env,
        &[
            "list-sessions",
            claude.config.join("projects").to_str().unwrap(),
        ],
    );
    let agents: Vec<&str> = named.iter().map(|l| l["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["claude", "claude", "claude", "claude", "file"]);

    let status = env.run("ctxfold", ["status", "--agent", "claude"]).ok();
    assert_eq!(
        status.stdout_text().matches("new").count(),
        4,
        "{}",
        status.stdout_text()
    );
}

#[test]
fn the_default_home_is_dot_claude() {
    let env = Env::new();
    let claude = build(&env.home.join(".claude"));
    let lines = listed(&env, &["list-sessions"]);
    assert_eq!(lines.len(), claude.sessions.len());
}

#[test]
fn fold_removes_idle_sessions_leaves_active_ones_and_the_sessions_folder() {
    let (env, claude) = setup();
    let run = env
        .run("ctxfold", ["fold", "--apply", "--remove-source"])
        .ok();
    let out = run.stdout_text();
    for placed in &claude.sessions {
        let idle = [SESSION, AGENT].contains(&placed.id);
        assert_eq!(placed.path.exists(), !idle, "{}: {out}", placed.id);
    }
    // What Claude Code keeps beside the session stays, and fold says so.
    assert!(claude.folder.join("tool-results/b7k2x9q1.txt").is_file());
    assert!(
        claude
            .folder
            .join(format!("subagents/{AGENT}.meta.json"))
            .is_file()
    );
    assert!(
        out.contains(&format!("left {}", claude.folder.display())),
        "{out}"
    );
    assert!(
        run.stderr
            .contains("kept the sources of 2 active sessions: --remove-source removes"),
        "{}",
        run.stderr
    );

    let status = env.run("ctxfold", ["status", "-v"]).ok();
    assert_eq!(
        status.stdout_text().matches("up to date").count(),
        2,
        "{}",
        status.stdout_text()
    );
    env.run(
        "ctxfold",
        ["fold", "--apply", "--remove-source", "--allow-active"],
    )
    .ok();
    assert!(claude.sessions.iter().all(|s| !s.path.exists()));
    // `ls --agent` knows a folded session's agent by where it lived.
    let ls = |agent: &str| {
        let run = env.run("ctxfold", ["ls", "--json", "--agent", agent]).ok();
        json_lines(&run.stdout).len()
    };
    assert_eq!((ls("claude"), ls("codex")), (claude.sessions.len(), 0));
    assert!(
        claude
            .config
            .join("projects/-home-dev-shop/memory/notes.jsonl")
            .is_file(),
        "memory is no session"
    );
}

#[test]
fn restore_puts_each_session_back_in_its_place_byte_for_byte() {
    let (mut env, claude) = setup();
    env.run(
        "ctxfold",
        ["fold", "--apply", "--remove-source", "--allow-active"],
    )
    .ok();
    for placed in &claude.sessions {
        env.run("ctxfold", ["restore", placed.id]).ok();
        assert!(
            fs::read(&placed.path).unwrap() == placed.bytes,
            "{}",
            placed.id
        );
    }

    // Another machine's config dir: the same places under it, folders created inside projects/.
    let other = env.path("other-config");
    fs::create_dir_all(&other).unwrap();
    env.set("CLAUDE_CONFIG_DIR", &other);
    for placed in &claude.sessions {
        env.run("ctxfold", ["restore", placed.id]).ok();
        let rel = placed.path.strip_prefix(&claude.config).unwrap();
        assert!(
            fs::read(other.join(rel)).unwrap() == placed.bytes,
            "{}",
            placed.id
        );
    }

    // A config dir that does not exist is not created.
    let missing = env.path("no-config");
    env.set("CLAUDE_CONFIG_DIR", &missing);
    env.run("ctxfold", ["restore", SESSION]).fails(3);
    assert!(!missing.exists());
}

#[test]
fn seeds_and_recall_find_the_failing_command_verified_from_the_store() {
    let (env, claude) = setup();
    env.run(
        "ctxfold",
        ["fold", "--apply", "--remove-source", "--allow-active"],
    )
    .ok();
    assert!(!claude.get(SESSION).path.exists());
    let run = env
        .run("ctxfold", ["recall", "-F", "KeyError: 'amount'"])
        .ok();
    let out = run.stdout_text();
    assert!(
        out.contains(&format!("=== recall session={SESSION} blockId=r:toolu_")),
        "{out}"
    );
    assert!(out.contains("tool=Bash"), "{out}");
    assert!(out.contains("verified=yes from=store"), "{out}");
    assert!(
        out.contains("Exit code 1\nTraceback (most recent call last):"),
        "{out}"
    );

    // The subagent's own index.
    let run = env
        .run(
            "ctxfold",
            [
                "recall",
                "-F",
                "tools/reconcile.py",
                "--session",
                AGENT,
                "-l",
            ],
        )
        .ok();
    assert!(
        run.stdout_text().contains("verified=yes"),
        "{}",
        run.stdout_text()
    );
}

#[test]
fn extract_seeds_maps_claude_code_rows_onto_the_block_model() {
    let env = Env::new();
    let file = own_fixture(own::CLAUDE_SESSION);
    let run = env
        .run(
            "ctxfold-extract-seeds",
            [OsArg::from("--final"), file.clone().into()],
        )
        .ok();
    let records = json_lines(&run.stdout);
    // One record for `/compact`, one over the whole branch.
    assert_eq!(records.len(), 2, "{}", run.stdout_text());
    let (compact, last) = (&records[0], &records[1]);
    assert_eq!(compact["usage"]["tokens"], 48_211);
    assert_eq!(
        compact["userMessages"][0]["firstLine"],
        "Run the ledger tests and fix what fails."
    );
    let commands = compact["commands"].as_array().unwrap();
    for command in [
        "cargo test -p ledger",
        "cat logs/jobs.log",
        "python3 tools/reconcile.py --since 2026-11-01",
    ] {
        assert!(commands.contains(&command.into()), "{commands:?}");
    }
    let errors = compact["errors"].to_string();
    assert!(errors.contains("KeyError: 'amount'"), "{errors}");
    let files = compact["files"].to_string();
    assert!(
        files.contains("src/ledger.rs") && files.contains("src/refund.rs"),
        "{files}"
    );
    let spans = compact["spans"].as_array().unwrap();
    let saved = spans
        .iter()
        .find(|s| s["fullOutputPath"].is_string())
        .expect("the result whose output was saved whole");
    assert!(
        saved["fullOutputPath"]
            .as_str()
            .unwrap()
            .ends_with("/tool-results/b7k2x9q1.txt")
    );
    assert_eq!(saved["tool"], "Bash");
    // The summary, the harness's rows and the subagent's launch come after the compaction.
    let later: Vec<&str> = last["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["blockId"].as_str().unwrap())
        .collect();
    assert!(later.iter().any(|b| b.starts_with("s:")), "{later:?}");
    let texts = last["userMessages"].to_string();
    assert!(
        texts.contains("Have an agent list what the reconcile tool reads"),
        "{texts}"
    );
    assert!(
        !texts.contains("command-name") && !texts.contains("task-notification"),
        "{texts}"
    );
    assert!(last["commands"].to_string().contains("git status --short"));

    // Deterministic, and the same from the store.
    let again = env
        .run(
            "ctxfold-extract-seeds",
            [OsArg::from("--final"), file.clone().into()],
        )
        .ok();
    assert_eq!(again.stdout, run.stdout);

    // A live harness's fold event up to a row, named by its uuid.
    let text = fs::read_to_string(&file).unwrap();
    let row: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "assistant" && l.to_string().contains("it saturates now"))
        .unwrap();
    let through = |entry: &str| {
        let args = ["--through", entry, "--trigger", "threshold", "--seq", "3"];
        let mut cmd: Vec<OsArg> = args.iter().map(OsArg::from).collect();
        cmd.extend(["--tokens", "9000", "--context-window", "200000"].map(OsArg::from));
        cmd.push(file.clone().into());
        env.run("ctxfold-extract-seeds", cmd)
    };
    let event = json_lines(&through(row["uuid"].as_str().unwrap()).ok().stdout);
    assert_eq!(event.len(), 1);
    assert_eq!(
        (&event[0]["seq"], &event[0]["trigger"]),
        (&3.into(), &"threshold".into())
    );
    assert_eq!(event[0]["at"], row["timestamp"]);
    through("no-such-row")
        .fails(1)
        .one_line_error("--through no-such-row: no such entry");
}

type OsArg = std::ffi::OsString;

#[test]
fn unsafe_ids_are_refused_and_the_rest_is_folded() {
    let (env, claude) = setup();
    let project = claude.config.join("projects").join(SHOP);
    let evil = project.join("0f1d0000-0000-4000-8000-0000000000ee.jsonl");
    write(
        &evil,
        br#"{"type":"queue-operation","operation":"enqueue","sessionId":"../../evil"}
"#,
        Duration::from_secs(3600),
    );
    let run = env.run("ctxfold", ["list-sessions"]).fails(3);
    assert!(
        run.stderr.contains("unsafe session id \"../../evil\""),
        "{}",
        run.stderr
    );
    assert_eq!(json_lines(&run.stdout).len(), claude.sessions.len());
    let run = env.run("ctxfold", ["fold", "--apply"]).fails(3);
    assert!(run.stderr.contains("../../evil"), "{}", run.stderr);
    assert!(evil.is_file());
    let status = env.run("ctxfold", ["status", "-v"]).fails(3);
    assert_eq!(
        status.stdout_text().matches("up to date").count(),
        claude.sessions.len()
    );
    assert!(!env.store.join("manifests").join("evil").exists());
}

#[test]
fn a_transcript_that_is_not_json_lines_is_refused_and_nothing_is_lost() {
    let (env, claude) = setup();
    let bad = claude
        .config
        .join("projects")
        .join(SHOP)
        .join("0f1d0000-0000-4000-8000-0000000000bb.jsonl");
    write(
        &bad,
        b"\x89PNG not a transcript\n",
        Duration::from_secs(3600),
    );
    let run = env
        .run("ctxfold", ["fold", "--apply", "--remove-source"])
        .fails(3);
    assert!(
        run.stderr.contains("0f1d0000-0000-4000-8000-0000000000bb"),
        "{}",
        run.stderr
    );
    assert!(bad.is_file(), "a refused file is never removed");
    assert!(!claude.get(SESSION).path.exists(), "the others are folded");

    // A ledger of no agent: a clear one-line error, status 3.
    let notes = env.path("notes.jsonl");
    fs::write(&notes, b"{\"type\":\"note\",\"text\":\"hello\"}\n").unwrap();
    env.run("ctxfold-extract-seeds", [notes.to_str().unwrap()])
        .fails(3)
        .one_line_error("not a Codex, Pi or Claude Code session");
}

/// A Claude Code 1.0.x session with no summary of its own, whose title another file gives.
const PLAIN: &str = "0f1d0000-0000-4000-8000-00000000c004";
/// A 1.0.x file holding nothing but `summary` lines, about rows in other files.
const SUMMARY_ONLY: &str = "0f1d0000-0000-4000-8000-00000000c005";
/// The rows of [`PLAIN`]: a prompt and the answer its conversation ends at.
const PLAIN_LINES: &str = concat!(
    r#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/dev/queue","sessionId":"0f1d0000-0000-4000-8000-00000000c004","version":"1.0.17","type":"user","message":{"role":"user","content":"make drains_in_order deterministic"},"uuid":"c4c4c4c4-0000-4000-8000-000000000001","timestamp":"2025-06-11T09:00:00.000Z"}"#,
    "\n",
    r#"{"parentUuid":"c4c4c4c4-0000-4000-8000-000000000001","isSidechain":false,"userType":"external","cwd":"/home/dev/queue","sessionId":"0f1d0000-0000-4000-8000-00000000c004","version":"1.0.17","type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Sorted the workers before draining."}]},"uuid":"c4c4c4c4-0000-4000-8000-000000000002","timestamp":"2025-06-11T09:00:09.000Z"}"#,
    "\n"
);
/// [`SUMMARY_ONLY`]'s lines: one titles [`PLAIN`]'s conversation, one [`LEGACY`]'s first row
/// (whose own summary wins).
const SUMMARY_LINES: &str = concat!(
    r#"{"type":"summary","summary":"Deterministic queue drain","leafUuid":"c4c4c4c4-0000-4000-8000-000000000002"}"#,
    "\n",
    r#"{"type":"summary","summary":"Not the legacy session's","leafUuid":"86a948e3-e9f7-4104-87e7-0d1b65982500"}"#,
    "\n"
);

#[test]
fn legacy_summaries_title_other_files_and_a_summary_only_file_folds_with_an_empty_index() {
    let (env, claude) = setup();
    let queue = claude.config.join("projects").join(QUEUE);
    let hour = Duration::from_secs(3600);
    write(
        &queue.join(format!("{PLAIN}.jsonl")),
        PLAIN_LINES.as_bytes(),
        hour,
    );
    write(
        &queue.join(format!("{SUMMARY_ONLY}.jsonl")),
        SUMMARY_LINES.as_bytes(),
        hour,
    );
    let titles: Vec<(String, String)> = listed(&env, &["list-sessions"])
        .iter()
        .map(|l| (l["id"].as_str().unwrap().into(), l["title"].to_string()))
        .collect();
    let title = |id: &str| titles.iter().find(|(i, _)| i == id).unwrap().1.clone();
    // Its own lines give no better title than its first prompt: the other file's summary wins.
    assert_eq!(title(PLAIN), "\"Deterministic queue drain\"");
    // A session titled by its own summary keeps it; one with a latest prompt keeps that.
    assert_eq!(title(LEGACY), "\"Flaky queue drain test\"");
    assert_eq!(title(FRESH), "\"and publish it\"");

    // The summary-only file folds with an empty seed index: no failure, twice over.
    for _ in 0..2 {
        let run = env.run("ctxfold", ["fold", "--apply"]).ok();
        assert!(!run.stderr.contains("seed index failed"), "{}", run.stderr);
    }
    let run = env.run("ctxfold", ["seeds"]).ok();
    assert!(!run.stderr.contains("not a"), "{}", run.stderr);
    assert!(
        run.stdout_text()
            .contains(&format!("{SUMMARY_ONLY}\t0 new records")),
        "{}",
        run.stdout_text()
    );
    assert_eq!(env.stored_seed_index(&env.store, SUMMARY_ONLY), "");

    // ls starts each session at its first dated line; one with none has no start.
    let listed = listed(&env, &["ls", "--json"]);
    let entry = |id: &str| listed.iter().find(|l| l["id"] == id).unwrap().clone();
    assert_eq!(entry(SESSION)["started"], "2026-11-28T10:00:01Z");
    assert_eq!(entry(LEGACY)["started"], "2025-06-10T10:00:00Z");
    assert_eq!(entry(PLAIN)["started"], "2025-06-11T09:00:00Z");
    assert_eq!(entry(PLAIN)["title"], "Deterministic queue drain");
    assert!(entry(SUMMARY_ONLY).get("started").is_none());
    let human = env.run("ctxfold", ["ls"]).ok().stdout_text();
    let line = human.lines().find(|l| l.starts_with(SESSION)).unwrap();
    assert!(line.contains("  2026-11-28 10:00Z  "), "{line}");
    let log = env.run("ctxfold", ["log"]).ok().stdout_text();
    let line = log.lines().find(|l| l.contains(PLAIN)).unwrap();
    assert!(line.ends_with("Deterministic queue drain"), "{log}");
}
