//! A store on a full disk, for real: a tmpfs too small for what is asked, in a private mount
//! namespace. Whatever write finds the disk full, the reason is on stderr (under `-q` too), the
//! status is 5, and the store holds nothing half-written.

mod common;

use std::fs;

use common::{Env, own_fixtures_dir};

/// A tmpfs of `size` at `dir`, then `command`, then `fsck --full` of the store on it (`FSCK:`
/// and its status), all in one mount namespace.
fn on_a_full_disk(env: &Env, size: &str, command: &str) -> Option<common::Run> {
    let dir = env.path("disk");
    fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "mount -t tmpfs -o size={size} tmpfs {dir} && {command}; status=$?; \
         $BIN/ctxfold fsck --full >/dev/null 2>&1; echo \"FSCK:$?\" >&2; exit $status",
        dir = dir.display(),
    );
    let run = env.in_mount_namespace(&script);
    if run.is_none() {
        eprintln!("skipped: this machine does not let a test mount a tmpfs (unshare -m)");
    }
    run
}

#[test]
fn a_fold_that_fills_the_disk_says_why_on_stderr_even_quiet() {
    let mut env = Env::new();
    env.set("CTXFOLD_STORE", env.path("disk/store"));
    let fixtures = own_fixtures_dir();
    let sources = ["codex", "pi", "claude"].map(|d| fixtures.join(d).display().to_string());
    // Sizes that run out at different writes: the first pack, a manifest, the seed catalog,
    // fold's own caches.
    for size in ["16k", "48k", "96k", "160k"] {
        for quiet in ["", "-q"] {
            let command = format!("$BIN/ctxfold fold --apply {quiet} {}", sources.join(" "));
            let Some(run) = on_a_full_disk(&env, size, &command) else {
                return;
            };
            assert_eq!(run.code, Some(5), "{size} {quiet}: {}", run.stderr);
            let errors: Vec<&str> = run
                .stderr
                .lines()
                .filter(|l| l.starts_with("ctxfold fold: error: "))
                .collect();
            assert!(!errors.is_empty(), "{size} {quiet}: {}", run.stderr);
            assert!(
                errors
                    .iter()
                    .any(|l| l.ends_with("No space left on device")),
                "{size} {quiet}: {}",
                run.stderr
            );
            // What was committed is whole: fsck --full finds nothing wrong.
            assert!(
                run.stderr.contains("FSCK:0"),
                "{size} {quiet}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn a_clone_short_of_space_says_it_is_out_of_space() {
    let mut env = Env::new();
    let remote = env.path("remote.git");
    let git = |args: &[&str]| {
        let ok = env.command_for("git").args(args).output().unwrap();
        assert!(ok.status.success(), "git {args:?}");
    };
    git(&["init", "--quiet", "--bare", remote.to_str().unwrap()]);
    let fixtures = own_fixtures_dir();
    for dir in ["codex", "pi", "claude"] {
        env.run(
            "ctxfold",
            ["fold", "--apply", fixtures.join(dir).to_str().unwrap()],
        )
        .ok();
    }
    env.run(
        "ctxfold",
        ["remote", "add", "origin", remote.to_str().unwrap()],
    )
    .ok();
    env.run("ctxfold", ["sync"]).ok();
    // Every fetch through index-pack, as a large one goes: it says only "fetch-pack: invalid
    // index-pack output" last.
    env.set("GIT_CONFIG_COUNT", "1");
    env.set("GIT_CONFIG_KEY_0", "fetch.unpackLimit");
    env.set("GIT_CONFIG_VALUE_0", "1");
    env.set("CTXFOLD_STORE", env.path("disk/store"));
    let command = format!("$BIN/ctxfold clone {}", remote.display());
    let Some(run) = on_a_full_disk(&env, "100k", &command) else {
        return;
    };
    assert_eq!(run.code, Some(5), "{}", run.stderr);
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.starts_with("FSCK:"))
        .collect();
    assert_eq!(said.len(), 1, "{}", run.stderr);
    assert!(
        said[0].contains("out of space") && said[0].contains("No space left on device"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("FSCK:0"), "{}", run.stderr);
}
