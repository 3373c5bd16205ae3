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
            // A session that named objects of a pack that could not be written says why, not
            // that an object is missing (which reads as a damaged store).
            assert!(
                !run.stderr.contains("is missing"),
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

/// `count` sessions of JSONL whose text does not compress much (4 MB of random letters each,
/// about 2.5 MB stored), in `dir`, named s00.jsonl, s01.jsonl, …: a few fill a small disk.
fn incompressible_sessions(dir: &std::path::Path, count: usize) {
    fs::create_dir_all(dir).unwrap();
    let mut rng = common::Rng::new(0x5eed);
    for n in 0..count {
        let mut text = Vec::new();
        for line in 0..1000 {
            text.extend_from_slice(format!("{{\"n\":{line},\"text\":\"").as_bytes());
            for _ in 0..500 {
                let random = rng.below(u64::MAX).to_le_bytes();
                text.extend(random.iter().map(|b| b'a' + b % 26));
            }
            text.extend_from_slice(b"\"}\n");
        }
        fs::write(dir.join(format!("s{n:02}.jsonl")), text).unwrap();
    }
}

/// What `ctxfold CMD` that ran out of space said: status 5, two error lines, the first the
/// full disk's own; the second (its count of what failed and what was not started) is returned.
fn said_full_once<'a>(run: &'a common::Run, command: &str) -> &'a str {
    assert_eq!(run.code, Some(5), "{}", run.stderr);
    let prefix = format!("ctxfold {command}: error: ");
    let said: Vec<&str> = (run.stderr.lines())
        .filter(|l| l.starts_with(&prefix))
        .collect();
    assert_eq!(said.len(), 2, "{}", run.stderr);
    assert!(said[0].ends_with("No space left on device"), "{}", said[0]);
    said[1]
}

#[test]
fn a_fold_that_fills_the_disk_starts_no_more_sessions_and_says_so_once() {
    let mut env = Env::new();
    env.set("CTXFOLD_STORE", env.path("disk/store"));
    let sources = env.path("sources");
    incompressible_sessions(&sources, 12);
    // Room for about two sessions of twelve: the first full write stops the run.
    let command = format!(
        "($BIN/ctxfold fold --apply --force {}; status=$?; \
         ls -A {store}/tmp >&2; echo \"TMP:$(ls -A {store}/tmp | wc -l)\" >&2; exit $status)",
        sources.display(),
        store = env.path("disk/store").display(),
    );
    let Some(run) = on_a_full_disk(&env, "4m", &command) else {
        return;
    };
    let last = said_full_once(&run, "fold");
    assert!(last.contains("the store's disk is full: "), "{last}");
    let stdout = run.stdout_text();
    let total = (stdout.lines())
        .find(|l| l.starts_with("total: "))
        .unwrap_or_else(|| panic!("no totals: {stdout}"));
    let not_started: u64 = (total
        .split([',', ';'])
        .map(str::trim)
        .find_map(|part| part.strip_suffix(" not started")))
    .and_then(|n| n.parse().ok())
    .unwrap_or_else(|| panic!("nothing left unstarted: {total}"));
    assert!(not_started > 0 && not_started < 12, "{total}");
    assert!(
        last.contains(&format!("{not_started} sessions not started")),
        "{}",
        last
    );
    // The store is whole (fsck --full rebuilds every session committed), and no temp file of the
    // run is left in it.
    assert!(run.stderr.contains("FSCK:0"), "{}", run.stderr);
    assert!(run.stderr.contains("TMP:0"), "{}", run.stderr);
}

#[test]
fn a_restore_that_fills_the_disk_starts_no_more_sessions_and_says_so_once() {
    let mut env = Env::new();
    let sources = env.path("sources");
    incompressible_sessions(&sources, 8);
    env.run(
        "ctxfold",
        ["fold", "--apply", "--force", sources.to_str().unwrap()],
    )
    .ok();
    // Six sessions a group, room for two: the first group fills the disk before any of its
    // sessions is whole (they are written together, block by block), is written again one
    // session at a time until the third finds no room, and the second group is never started.
    env.set("CTXFOLD_TEST_RESTORE_GROUP_FILES", "6");
    let out = env.path("disk/out");
    let command = format!(
        "($BIN/ctxfold restore --all --to {out}/; status=$?; \
         echo \"FILES:$(ls -A {out} | tr '\\n' ' ')\" >&2; \
         for f in {out}/*; do cmp $f {src}/${{f##*/}} || echo DIFFERS >&2; done; \
         exit $status)",
        out = out.display(),
        src = sources.display(),
    );
    let Some(run) = on_a_full_disk(&env, "10m", &command) else {
        return;
    };
    let last = said_full_once(&run, "restore");
    assert!(
        last.contains(
            "the disk is full: 4 sessions failed for want of space, 2 sessions not started"
        ),
        "{last}"
    );
    // Two are whole, in place (which two depends on which the group's write finished first);
    // nothing else is left, not even a temp file.
    let files: Vec<&str> = (run.stderr.lines())
        .find_map(|l| l.strip_prefix("FILES:"))
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(files.len(), 2, "{}", run.stderr);
    assert!(!run.stderr.contains("DIFFERS"), "{}", run.stderr);
    let stdout = run.stdout_text();
    let restored: Vec<&str> = stdout.lines().collect();
    let expected: Vec<String> = (files.iter())
        .map(|f| out.join(f).display().to_string())
        .collect();
    assert_eq!(restored, expected);
}

/// A remote added on a full disk: its mirror is made beside its place and renamed in, so the
/// failure leaves no half-made repository that would refuse every later try; once there is room
/// again it is added. What an earlier ctxfold's failed creation left (git's hooks, no object, no
/// ref) is cleared; a folder holding anything else is left alone.
#[test]
fn a_remote_added_on_a_full_disk_leaves_no_half_made_mirror() {
    let mut env = Env::new();
    env.set("CTXFOLD_STORE", env.path("disk/store"));
    let remote = env.path("remote.git");
    let ok = env
        .command_for("git")
        .args(["init", "--quiet", "--bare", remote.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(ok.success());
    let fixture = common::own_fixture(common::own::CODEX_AGENT_SMALL);
    let (disk, store) = (env.path("disk"), env.path("disk/store"));
    let command = format!(
        "$BIN/ctxfold fold --apply -q {fixture} && \
         (dd if=/dev/zero of={disk}/filler bs=4k 2>/dev/null; true) && \
         $BIN/ctxfold remote add origin {remote}; echo \"FULL:$?\" >&2; \
         echo \"LEFT:$(ls -A {store} | grep -c mirror)\" >&2; \
         rm {disk}/filler; \
         mkdir -p {store}/mirror.git/hooks && echo x >{store}/mirror.git/hooks/docs.url && \
         $BIN/ctxfold remote add origin {remote} && $BIN/ctxfold remote >&2; \
         mkdir {disk}/other.git && echo mine >{disk}/other.git/notes.txt && \
         $BIN/ctxfold remote add --git {disk}/other.git origin {remote}; \
         echo \"OTHER:$? $(cat {disk}/other.git/notes.txt)\" >&2",
        fixture = fixture.display(),
        disk = disk.display(),
        store = store.display(),
        remote = remote.display(),
    );
    let Some(run) = on_a_full_disk(&env, "1m", &command) else {
        return;
    };
    assert!(run.stderr.contains("FULL:5"), "{}", run.stderr);
    assert!(
        run.stderr.contains("No space left on device"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("LEFT:0"), "{}", run.stderr);
    assert!(run.stderr.lines().any(|l| l == "origin"), "{}", run.stderr);
    assert!(run.stderr.contains("OTHER:"), "{}", run.stderr);
    assert!(!run.stderr.contains("OTHER:0"), "{}", run.stderr);
    assert!(run.stderr.contains(" mine"), "{}", run.stderr);
    assert!(run.stderr.contains("FSCK:0"), "{}", run.stderr);
}
