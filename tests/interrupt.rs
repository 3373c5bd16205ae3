//! A fold says what it did as it does it: each session's line as it commits, a note for what it
//! skips, and on Ctrl-C a summary, with what was committed left standing.

mod common;
mod homes;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::symlink;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Env;
use homes::json_lines;

#[test]
fn each_session_is_reported_as_it_commits() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // The last session's fold waits until the test has seen another session's line.
    let last = homes.sessions.iter().map(|s| &s.path).max().unwrap();
    let go = env.path("go");
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        format!(
            "[ \"$CTXFOLD_TEST_SOURCE\" != '{}' ] || while [ ! -e '{}' ]; do sleep 0.05; done",
            last.display(),
            go.display()
        ),
    );
    let mut child = env
        .command("ctxfold")
        .args(["fold", "--apply"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("new        folded"), "{first}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "it ended before the test let it"
    );
    std::fs::write(&go, b"").unwrap();
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        rest.iter()
            .filter(|l| l.contains(" folded ") && !l.starts_with("total:"))
            .count(),
        homes.sessions.len() - 1
    );
}

#[test]
fn ctrl_c_stops_cleanly_keeping_and_reporting_what_was_committed() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // Ctrl-C (SIGINT to the fold itself) as soon as the first session has been read.
    let first = homes.sessions.iter().map(|s| &s.path).min().unwrap();
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        format!(
            "[ \"$CTXFOLD_TEST_SOURCE\" != '{}' ] || {{ kill -INT $PPID; sleep 0.5; }}",
            first.display()
        ),
    );
    let started = Instant::now();
    let run = env.run("ctxfold", ["fold", "--apply", "--json"]).fails(130);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        run.stderr
            .contains("interrupted: finishing the sessions in progress"),
        "{}",
        run.stderr
    );
    let lines = json_lines(&run.stdout);
    let total = &lines.last().unwrap()["total"];
    let folded: Vec<&str> = lines
        .iter()
        .filter(|l| l["action"] == "fold")
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert!(!folded.is_empty());
    assert_eq!(total["fold"], folded.len());
    let not_started = total["not_started"].as_u64().unwrap() as usize;
    assert_eq!(folded.len() + not_started, homes.sessions.len(), "{total}");
    if not_started > 0 {
        assert!(
            run.stderr.contains(&format!(
                "interrupted: {} not started",
                ctxfold::cli::human::count(not_started as u64, "session")
            )),
            "{}",
            run.stderr
        );
    }
    // What it reported folded is in the store, whole; nothing else is.
    let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
    assert_eq!(listed.len(), folded.len());
    for id in folded {
        let placed = homes.get(id);
        assert!(env.run("ctxfold-cat-manifest", [id]).ok().stdout == placed.bytes);
    }
    env.run("ctxfold", ["fsck", "--full"]).ok();
    // Folding again finishes the job.
    env.set("CTXFOLD_TEST_AFTER_READ", "");
    env.run("ctxfold", ["fold", "--apply"]).ok();
    assert_eq!(
        json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout).len(),
        homes.sessions.len()
    );
}

#[test]
fn symbolic_links_in_the_session_folders_are_skipped_with_a_note() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let elsewhere = env.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside =
        elsewhere.join("rollout-2026-01-01T00-00-00-00000000-0000-4000-8000-00000000000a.jsonl");
    std::fs::write(
        &outside,
        b"{\"type\":\"session_meta\",\"payload\":{\"id\":\"linked\"}}\n",
    )
    .unwrap();
    let sessions = homes.codex.join("sessions");
    let file_link = sessions.join(outside.file_name().unwrap());
    symlink(&outside, &file_link).unwrap();
    let dir_link = sessions.join("2027");
    symlink(&elsewhere, &dir_link).unwrap();

    let run = env.run("ctxfold", ["fold"]).ok();
    assert!(
        run.stderr.contains(
            "skipped 2 symbolic links in the session folders (never followed; -v lists them)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stdout_text().contains("linked"),
        "{}",
        run.stdout_text()
    );
    let run = env.run("ctxfold", ["status", "-v"]).ok();
    for link in [&file_link, &dir_link] {
        assert!(
            run.stderr
                .contains(&format!("skipped symbolic link {}", link.display())),
            "{}",
            run.stderr
        );
    }
    let run = env.run("ctxfold", ["fold", "-q"]).ok();
    assert!(!run.stderr.contains("symbolic"), "{}", run.stderr);
}
