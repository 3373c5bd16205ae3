//! Real agents end to end: Codex 0.169, Pi 0.73 and Claude Code 2.1.332, installed from npm
//! (tests/agents/install.rs),
//! write sessions against a scripted model of ours on 127.0.0.1 (tests/agents/mock.rs,
//! tests/agents/script.rs); ctxfold folds them and removes them, restores them byte for byte, and
//! the agents resume the restored files with their own resume and append to them.
//!
//! Each agent writes two sessions: `work` (writes app.py, `cat`s a large file, runs a failing
//! command, gets a Python traceback, edits the file, runs it again, then compacts; Codex and
//! Claude Code compact at the start of a resumed follow-up turn, Pi right after the turn) and
//! `small`.
//!
//! With `ctxfold mount --agents` (a real FUSE mount over the agent's session folder), each agent
//! resumes a session folded away with `--remove-source` at its normal path, with no restore.
//!
//! The npm install is cached (see install.rs); without npm or the agents these tests fail loudly.

mod common;

#[path = "agents/agent.rs"]
mod agent;
#[path = "mounts/daemon.rs"]
mod daemon;
#[path = "agents/install.rs"]
mod install;
#[path = "agents/mock.rs"]
mod mock;
#[path = "agents/script.rs"]
mod script;

use std::collections::HashSet;
use std::path::Path;

use agent::{Agent, Kind, Session, lines};
use common::Env;
use ctxfold::digest::Digest;
use ctxfold::store::Store;
use serde_json::Value;

/// FastCDC's largest chunk under the default settings: what one gap may cost beyond its bytes.
fn max_chunk() -> u64 {
    ctxfold::segment::Settings::default().cdc_max_bytes
}

/// The sessions one agent wrote, and the agent to resume them.
struct Written {
    agent: Agent,
    work: Session,
    small: Session,
}

impl Written {
    fn sessions(&self) -> [&Session; 2] {
        [&self.work, &self.small]
    }
}

/// Run the agent through its sessions and check that they hold what the script made happen.
fn write_sessions(kind: Kind) -> Written {
    let agent = Agent::new(kind);
    let work = agent.start("work");
    if kind != Kind::Pi {
        // Codex and Claude Code compact before the next turn once the last one reported too many
        // tokens.
        agent.resume(&work, "followup");
    }
    let small = agent.start("small");

    let app = std::fs::read_to_string(agent.work().join("app.py")).expect("the agent wrote app.py");
    assert_eq!(
        app,
        script::APP_PY.replace(script::EDIT_OLD, script::EDIT_NEW),
        "{kind:?}: app.py written and edited"
    );
    let text = std::fs::read_to_string(&work.path).unwrap();
    // Claude Code keeps the whole of a large output in the session's folder, only its start in
    // the transcript.
    let whole_cat = match kind {
        Kind::Claude => claude_saved_output(&work),
        _ => text.clone(),
    };
    assert!(
        whole_cat.contains("part-02999.bin"),
        "{kind:?}: the large cat's end is not kept"
    );
    for needle in [
        script::FAILING_ERROR,
        script::TRACEBACK_ERROR,
        "Traceback (most recent call last)",
        script::FIXED_OUTPUT,
    ] {
        assert!(
            text.contains(needle),
            "{kind:?}: {needle:?} not in the work session"
        );
    }
    let compactions = lines(&work.path)
        .iter()
        .filter(|l| match kind {
            Kind::Codex => l["type"] == "compacted",
            Kind::Pi => l["type"] == "compaction",
            Kind::Claude => l["subtype"] == "compact_boundary",
        })
        .count();
    assert_eq!(compactions, 1, "{kind:?}: the work session compacts once");
    if kind == Kind::Pi {
        // Pi cut the large `cat` and kept the whole output in a file of its own.
        assert!(
            text.contains("\"fullOutputPath\""),
            "Pi: no fullOutputPath for the truncated cat"
        );
    }
    // Every request was one the mock serves, and one of them asked for the compaction summary.
    let requests = agent.mock.requests();
    for request in &requests {
        let served = match kind {
            Kind::Claude => request.path.split('?').next() == Some("/v1/messages"),
            _ => request.path.ends_with("/responses"),
        };
        assert!(
            request.method == "POST" && served,
            "{kind:?} asked for {} {}",
            request.method,
            request.path
        );
    }
    assert!(
        requests.iter().any(|r| match kind {
            Kind::Claude => r.body.to_string().contains(script::CLAUDE_COMPACT_PROMPT),
            _ => r.body["tools"].as_array().is_none_or(|t| t.is_empty()),
        }),
        "{kind:?}: no summary request"
    );
    keep_sample(kind, "work", &work);
    keep_sample(kind, "small", &small);
    Written { agent, work, small }
}

/// The whole output Claude Code saved of the session's large result
/// (`<session id>/tool-results/*.txt` beside the transcript), named by the transcript.
fn claude_saved_output(session: &Session) -> String {
    let text = std::fs::read_to_string(&session.path).unwrap();
    assert!(
        text.contains("\"persistedOutputPath\""),
        "Claude: no persistedOutputPath for the large cat"
    );
    let folder = session.path.with_extension("").join("tool-results");
    std::fs::read_dir(&folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect()
}

/// With `CTXFOLD_AGENT_SAMPLES=DIR`, copy a session file the agents wrote into DIR, for people
/// who want to look at the newest formats (`<agent>-<label>-<file name>`).
fn keep_sample(kind: Kind, label: &str, session: &Session) {
    let Some(dir) = std::env::var_os("CTXFOLD_AGENT_SAMPLES") else {
        return;
    };
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!(
        "{}-{label}-{}",
        format!("{kind:?}").to_lowercase(),
        session.path.file_name().unwrap().to_string_lossy()
    );
    std::fs::copy(&session.path, Path::new(&dir).join(name)).unwrap();
}

/// Fold one session with the plumbing: `ctxfold-split --write | ctxfold-write-manifest`. Returns
/// the parts as split printed them.
fn fold_plumbing(env: &Env, session: &Session, overwrite: bool) -> Vec<Value> {
    let split = env
        .run(
            "ctxfold-split",
            ["--write".as_ref(), session.path.as_os_str()],
        )
        .ok();
    let mut args = vec![
        "--session-id".to_string(),
        session.id.clone(),
        "--source".into(),
        session.path.to_str().unwrap().into(),
    ];
    if overwrite {
        args.push("--overwrite".into());
    }
    env.run_with_stdin("ctxfold-write-manifest", &args, &split.stdout)
        .ok();
    split
        .stdout_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn store_objects(env: &Env) -> HashSet<Digest> {
    Store::at(&env.store)
        .odb()
        .list()
        .unwrap()
        .map(|entry| match entry {
            ctxfold::odb::Listed::Object { digest, .. } => digest,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Stored bytes of the objects among `parts` that were not in the store before (each once).
fn new_stored_bytes(parts: &[Value], before: &HashSet<Digest>) -> (u64, u64) {
    let mut seen = HashSet::new();
    let (mut raw, mut stored) = (0, 0);
    for part in parts {
        let digest = Digest::parse(part["object"]["sha256"].as_str().unwrap()).unwrap();
        if !before.contains(&digest) && seen.insert(digest) {
            raw += part["object"]["raw_bytes"].as_u64().unwrap();
            stored += part["object"]["stored_bytes"].as_u64().unwrap();
        }
    }
    (raw, stored)
}

/// Restore every session by id (to its place under the agent's home, where it looks) and compare.
fn restore_all(env: &Env, written: &Written, originals: &[Vec<u8>]) {
    for (session, original) in written.sessions().into_iter().zip(originals) {
        assert!(
            !session.path.exists(),
            "{} still there before restore",
            session.path.display()
        );
        env.run("ctxfold", ["restore", &session.id]).ok();
        assert!(
            std::fs::read(&session.path).unwrap() == *original,
            "{}: restored bytes differ",
            session.path.display()
        );
    }
}

/// While a Codex rollout is folded away, Codex cannot resume it ("no rollout found"): so the
/// resume after the restore shows that Codex reads the restored file. (Pi, given a missing
/// `--session` file, starts a new session there: not tried, it would stand in the restore's way.)
fn resume_needs_the_file(written: &Written) {
    if written.agent.kind == Kind::Codex {
        let (ok, output) = written.agent.try_resume(&written.work, "resume");
        assert!(
            !ok,
            "Codex resumed a session whose rollout is gone:\n{output}"
        );
        assert!(!written.work.path.exists());
    }
}

/// The agent resumes the restored work session: its own resume loads the history from the file
/// (the first request of the resumed turn carries the compaction summary) and appends to it.
fn resume_restored(written: &Written, original: &[u8]) -> Vec<u8> {
    written.agent.resume(&written.work, "resume");
    let first = written
        .agent
        .mock
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains(&script::prompt("resume")))
        .expect("a resume request");
    assert!(
        first.body.to_string().contains(script::SUMMARY),
        "{:?}: the resumed turn lacks the restored history",
        written.agent.kind
    );
    let grown = std::fs::read(&written.work.path).unwrap();
    assert!(
        grown.len() > original.len() && grown.starts_with(original),
        "{:?}: the resume did not append",
        written.agent.kind
    );
    assert!(
        String::from_utf8_lossy(&grown[original.len()..])
            .contains("Resumed from the restored session.")
    );
    keep_sample(written.agent.kind, "work-resumed", &written.work);
    grown
}

/// What works with the plumbing alone: the agents write, the plumbing folds, the sources go,
/// `ctxfold restore` brings them back byte for byte, the agent resumes and appends, and a second
/// fold stores little more than the new tail.
fn plumbing_journey(kind: Kind) {
    let written = write_sessions(kind);
    let mut env = Env::new();
    // Restore puts a session under this machine's home of its agent, as discovery finds it.
    env.set(written.agent.config_var(), written.agent.config_dir());
    let originals: Vec<Vec<u8>> = written
        .sessions()
        .iter()
        .map(|s| std::fs::read(&s.path).unwrap())
        .collect();
    for session in written.sessions() {
        fold_plumbing(&env, session, false);
        std::fs::remove_file(&session.path).unwrap();
    }
    resume_needs_the_file(&written);
    restore_all(&env, &written, &originals);
    let grown = resume_restored(&written, &originals[0]);

    let before = store_objects(&env);
    let parts = fold_plumbing(&env, &written.work, true);
    let (new_raw, new_stored) = new_stored_bytes(&parts, &before);
    let growth = (grown.len() - originals[0].len()) as u64;
    eprintln!(
        "{kind:?}: session {} -> {} bytes (+{growth}); second fold: {new_raw} new raw bytes, {new_stored} new stored bytes",
        originals[0].len(),
        grown.len()
    );
    assert!(
        new_stored < growth + max_chunk(),
        "{kind:?}: {new_stored} new stored bytes for a growth of {growth}"
    );
    assert!(
        new_raw <= growth + max_chunk(),
        "{kind:?}: {new_raw} new raw bytes for a growth of {growth}"
    );

    // The refolded session restores to the grown file.
    let copy = env.path("refolded.jsonl");
    env.run(
        "ctxfold",
        [
            "restore".as_ref(),
            written.work.id.as_ref(),
            "--to".as_ref(),
            copy.as_os_str(),
        ],
    )
    .ok();
    assert!(std::fs::read(&copy).unwrap() == grown);
}

#[test]
fn codex_sessions_fold_restore_and_resume() {
    plumbing_journey(Kind::Codex);
}

#[test]
fn pi_sessions_fold_restore_and_resume() {
    plumbing_journey(Kind::Pi);
}

#[test]
fn claude_sessions_fold_restore_and_resume() {
    plumbing_journey(Kind::Claude);
}

/// What the store's objects take: its loose files and packs.
fn objects_bytes(store: &Path) -> u64 {
    let (usage, _) = ctxfold::store::usage::measure(&Store::at(store)).unwrap();
    usage.stored_bytes
}

/// The whole journey through the porcelain of issues 3 and 4.
fn porcelain_journey(kind: Kind) {
    let written = write_sessions(kind);
    let mut env = Env::new();
    env.set(written.agent.config_var(), written.agent.config_dir());
    let originals: Vec<Vec<u8>> = written
        .sessions()
        .iter()
        .map(|s| std::fs::read(&s.path).unwrap())
        .collect();

    env.run(
        "ctxfold",
        ["fold", "--apply", "--remove-source", "--allow-active"],
    )
    .ok();
    restore_all(&env, &written, &originals);
    let grown = resume_restored(&written, &originals[0]);

    // `status --json`: {"id", "state", "path", "bytes", "folded_bytes"} per session found.
    let status = env.run("ctxfold", ["status", "--json"]).ok().stdout_text();
    let line: Value = status
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["id"] == written.work.id.as_str())
        .unwrap_or_else(|| panic!("{} not in status:\n{status}", written.work.id));
    assert_eq!(
        line["state"], "grown",
        "{kind:?}: the resumed session: {line}"
    );
    assert_eq!(line["bytes"], grown.len() as u64, "{kind:?}: {line}");
    assert_eq!(
        line["folded_bytes"],
        originals[0].len() as u64,
        "{kind:?}: {line}"
    );

    let before = objects_bytes(&env.store);
    // Growth is the normal path: no --overwrite.
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let new_stored = objects_bytes(&env.store) - before;
    let growth = (grown.len() - originals[0].len()) as u64;
    eprintln!("{kind:?}: porcelain refold: +{growth} bytes grown, {new_stored} new stored bytes");
    assert!(
        new_stored < growth + max_chunk(),
        "{kind:?}: {new_stored} new stored bytes for a growth of {growth}"
    );

    env.run("ctxfold", ["seeds"]).ok();
    let recall = env
        .run(
            "ctxfold",
            [
                "recall",
                "ctxfold-missing.toml",
                "--session",
                &written.work.id,
                "--field",
                "errors",
            ],
        )
        .ok()
        .stdout_text();
    assert!(
        recall.contains(script::FAILING_ERROR),
        "{kind:?}: recall did not pull back the failing command's span:\n{recall}"
    );
    let spans = env
        .run(
            "ctxfold",
            [
                "recall",
                "ctxfold-missing.toml",
                "--session",
                &written.work.id,
                "--json",
            ],
        )
        .ok()
        .stdout_text();
    // JSON Lines: `match` records (the seeds that matched), then `span` records (the blocks
    // pulled back, each verified against its sha256).
    let spans: Vec<Value> = spans
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "span")
        .collect();
    assert!(
        !spans.is_empty(),
        "{kind:?}: recall --json pulled back no span"
    );
    assert!(
        spans.iter().all(|s| s["verified"] == "yes"),
        "{kind:?}: a recalled span is not verified: {spans:?}"
    );
    assert!(
        spans.iter().any(|s| s["text"]
            .as_str()
            .is_some_and(|t| t.contains(script::FAILING_ERROR))),
        "{kind:?}: no recalled span holds the failing command's error: {spans:?}"
    );
}

#[test]
fn codex_porcelain_journey() {
    porcelain_journey(Kind::Codex);
}

#[test]
fn pi_porcelain_journey() {
    porcelain_journey(Kind::Pi);
}

#[test]
fn claude_porcelain_journey() {
    porcelain_journey(Kind::Claude);
}

/// The folder `ctxfold mount --agents` mounts over for `agent` (as `mount::agent_root` computes).
fn mount_root(agent: &Agent) -> std::path::PathBuf {
    match agent.kind {
        Kind::Codex => agent.config_dir(),
        Kind::Pi => agent.config_dir().join("sessions"),
        Kind::Claude => agent.config_dir().join("projects"),
    }
}

/// Transparent access: the sessions folded with `--remove-source`, gone from the disk; with
/// `ctxfold mount --agents` running, the agent's own resume finds the folded session at its
/// normal path, reads its history and appends its turn, which lands in a real file after the
/// original bytes; the session not resumed stays folded only. Once the mount stops, the next fold
/// folds the resumed one as growth and restore gives the grown bytes back.
fn mount_journey(kind: Kind) {
    let written = write_sessions(kind);
    let mut env = Env::new();
    env.set(written.agent.config_var(), written.agent.config_dir());
    let originals: Vec<Vec<u8>> = written
        .sessions()
        .iter()
        .map(|s| std::fs::read(&s.path).unwrap())
        .collect();
    env.run(
        "ctxfold",
        ["fold", "--apply", "--remove-source", "--allow-active"],
    )
    .ok();
    resume_needs_the_file(&written);
    for session in written.sessions() {
        assert!(!session.path.exists(), "{}", session.path.display());
    }

    let root = mount_root(&written.agent);
    let mount = daemon::Mount::agents(&env, &[root.as_path()], &[]);
    for (session, original) in written.sessions().into_iter().zip(&originals) {
        assert!(
            std::fs::read(&session.path).unwrap() == *original,
            "{kind:?}: {} through the mount",
            session.path.display()
        );
    }
    let grown = resume_restored(&written, &originals[0]);
    let (code, said) = mount.stop();
    assert_eq!(code, Some(0), "{said}");
    assert!(
        !said.contains("error"),
        "{kind:?}: the mount reported errors: {said}"
    );

    assert!(
        std::fs::read(&written.work.path).unwrap() == grown,
        "{kind:?}: the resumed session is not a real file holding the appended turn"
    );
    assert!(
        !written.small.path.exists(),
        "{kind:?}: a session nobody wrote to was made real"
    );
    let fold = env.run("ctxfold", ["fold", "--apply"]).ok().stdout_text();
    assert!(fold.contains("1 grown"), "{kind:?}: {fold}");
    let copy = env.path("grown.jsonl");
    env.run(
        "ctxfold",
        [
            "restore".as_ref(),
            written.work.id.as_ref(),
            "--to".as_ref(),
            copy.as_os_str(),
        ],
    )
    .ok();
    assert!(std::fs::read(&copy).unwrap() == grown);
    env.run("ctxfold", ["fsck", "--full"]).ok();
}

#[test]
fn codex_resumes_a_folded_session_through_the_mount() {
    mount_journey(Kind::Codex);
}

#[test]
fn pi_continues_a_folded_session_through_the_mount() {
    mount_journey(Kind::Pi);
}

#[test]
fn claude_resumes_a_folded_session_through_the_mount() {
    mount_journey(Kind::Claude);
}
