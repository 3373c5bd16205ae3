//! What is named on the command line but is no regular file: a FIFO would block a read until a
//! writer came (fold and hash-object once hung on one for ever), a symbolic link loop is not a
//! missing file. Each is refused at once, with a line that says what it is, and nothing is written.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::Env;

fn fifo(env: &Env) -> std::path::PathBuf {
    let path = env.path("session.jsonl");
    let ok = Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
    path
}

/// Run `program ARGS` with a deadline: a hang is a failure, not a stuck test.
fn run_quickly(env: &Env, program: &str, args: &[&str]) -> common::Run {
    let mut cmd = env.command(program);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let begun = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if begun.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("{program} {args:?} hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    common::Run {
        code: out.status.code(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn nothing_stored(env: &Env) {
    let manifests = env.store.join("manifests");
    let held = std::fs::read_dir(&manifests)
        .map(|d| d.filter(|e| e.as_ref().unwrap().path().is_file()).count())
        .unwrap_or(0);
    assert_eq!(held, 0, "something was folded");
}

#[test]
fn a_fifo_named_on_the_command_line_is_refused_not_waited_on() {
    let env = Env::new();
    let path = fifo(&env);
    let named = path.to_str().unwrap();
    run_quickly(&env, "ctxfold", &["fold", "--apply", named])
        .fails(3)
        .one_line_error("session.jsonl: not a regular file (a FIFO)");
    nothing_stored(&env);
    run_quickly(&env, "ctxfold", &["fold", "--apply", "--force", named])
        .fails(3)
        .one_line_error("not a regular file (a FIFO)");
    run_quickly(&env, "ctxfold-hash-object", &["-w", named])
        .fails(3)
        .one_line_error("session.jsonl: not a regular file (a FIFO)");
    run_quickly(&env, "ctxfold-split", &[named])
        .fails(3)
        .one_line_error("not a regular file (a FIFO)");
    // Standard input may well be a pipe: that is what --stdin is for.
    let run = env
        .run_with_stdin("ctxfold-hash-object", ["--stdin"], b"piped\n")
        .ok();
    assert_eq!(run.stdout_text().trim().len(), 64);
}

#[test]
fn a_symbolic_link_loop_is_said_to_be_one() {
    let env = Env::new();
    let looped = env.path("loop.jsonl");
    std::os::unix::fs::symlink(Path::new("loop.jsonl"), &looped).unwrap();
    let named = looped.to_str().unwrap();
    let run = run_quickly(&env, "ctxfold", &["fold", "--apply", named]).fails(3);
    assert!(
        run.stderr.contains("loop.jsonl: a symbolic link loop") && !run.stderr.contains("no such"),
        "{}",
        run.stderr
    );
    nothing_stored(&env);
    run_quickly(&env, "ctxfold-hash-object", &[named])
        .fails(3)
        .one_line_error("loop.jsonl: a symbolic link loop");
    // A file that is really missing is still said to be missing.
    let run = run_quickly(&env, "ctxfold", &["fold", "--apply", "missing.jsonl"]).fails(3);
    assert!(
        run.stderr
            .contains("missing.jsonl: no such file or directory"),
        "{}",
        run.stderr
    );
}
