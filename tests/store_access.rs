//! A store that others can write is refused; one that cannot be read, or is not a folder, says so.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{Env, Run};

fn folded() -> Env {
    let env = Env::new();
    let file = env.path("s.jsonl");
    fs::write(&file, b"{\"a\":1}\n").unwrap();
    env.run("ctxfold", ["fold", "--apply", file.to_str().unwrap()])
        .ok();
    env
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_store_others_can_write_is_refused_with_the_fix() {
    let env = folded();
    for (dir, mode) in [
        (env.store.clone(), 0o777),
        (env.store.join("manifests"), 0o770),
        (env.store.join("objects"), 0o702),
    ] {
        chmod(&dir, mode);
        for args in [&["ls"][..], &["fold", "--apply", "s.jsonl"], &["gc"]] {
            env.run("ctxfold", args).fails(3).one_line_error(&format!(
                "{} is writable by others (mode {mode:04o})",
                dir.display()
            ));
        }
        let run = env.run("ctxfold", ["ls"]).fails(3);
        assert!(
            run.stderr.contains(&format!("chmod 700 {}", dir.display())),
            "{}",
            run.stderr
        );
        chmod(&dir, 0o700);
        env.run("ctxfold", ["ls"]).ok();
    }
}

#[test]
fn a_store_path_that_is_a_file_says_so() {
    let env = Env::new();
    let file = env.path("not-a-folder");
    fs::write(&file, b"x").unwrap();
    let store = format!("--store={}", file.display());
    let says = format!("{}: exists and is not a directory", file.display());
    env.run("ctxfold", ["ls", &store])
        .fails(3)
        .one_line_error(&says);
    let session = env.path("s.jsonl");
    fs::write(&session, b"{\"a\":1}\n").unwrap();
    env.run(
        "ctxfold",
        ["fold", "--apply", &store, session.to_str().unwrap()],
    )
    .fails(3)
    .one_line_error(&says);
}

/// Run `ctxfold ARGS` unable to bypass file permissions: as root (tests run as root in CI), with
/// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH dropped by `setpriv`. `None` where neither works.
fn without_permission_bypass(env: &Env, args: &[&str]) -> Option<Run> {
    if !rustix::process::geteuid().is_root() {
        return Some(env.run("ctxfold", args));
    }
    let drop = "--bounding-set=-dac_override,-dac_read_search";
    let probe = Command::new("setpriv")
        .args([drop, "--", "true"])
        .status()
        .ok()?;
    if !probe.success() {
        return None;
    }
    let script = format!(
        "exec setpriv {drop} -- $BIN/ctxfold {}",
        args.iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    Some(env.shell(&script))
}

#[test]
fn a_store_that_cannot_be_read_says_permission_denied_with_the_path() {
    let env = folded();
    let parent = env.path("locked");
    fs::create_dir(&parent).unwrap();
    let store = parent.join("store");
    fs::rename(&env.store, &store).unwrap();
    let flag = format!("--store={}", store.display());
    // Under a folder that cannot be entered, then unreadable itself.
    for locked in [&parent, &store] {
        chmod(locked, 0o000);
        let run = without_permission_bypass(&env, &["ls", &flag]);
        chmod(locked, 0o700);
        let Some(run) = run else {
            eprintln!("skipped: running as root without setpriv, permissions cannot be denied");
            return;
        };
        let run = run.fails(5).one_line_error("Permission denied");
        assert!(
            run.stderr.contains(&store.display().to_string())
                && !run.stderr.contains("not a ctxfold store"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_folded_session_piped_into_a_closed_pipe_is_no_error_and_a_full_one_says_stdout() {
    let env = Env::new();
    let big = env.path("big.jsonl");
    let line = format!("{{\"text\":\"{}\"}}\n", "x".repeat(10_000));
    fs::write(&big, line.repeat(200)).unwrap();
    env.run("ctxfold", ["fold", "--apply", big.to_str().unwrap()])
        .ok();
    let run = env.shell("$BIN/ctxfold-cat-manifest big | head -c 10 >/dev/null");
    assert!(!run.stderr.contains("error"), "{}", run.stderr);
    env.shell("$BIN/ctxfold-cat-manifest big >/dev/full")
        .fails(5)
        .one_line_error("write to stdout: No space left on device");
}
