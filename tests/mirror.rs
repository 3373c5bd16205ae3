//! `ctxfold-mirror`: the store as commits on `refs/heads/ctxfold` of a bare git repository,
//! incremental, deterministic, and without empty commits.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::Env;

fn git(env: &Env, git_dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .env_clear()
        .env("HOME", &env.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fold(env: &Env, id: &str, file: &Path) {
    let parts = env
        .run("ctxfold-split", ["--write".as_ref(), file.as_os_str()])
        .ok();
    let args = [
        "--session-id".as_ref(),
        id.as_ref(),
        "--source".as_ref(),
        file.as_os_str(),
    ];
    env.run_with_stdin("ctxfold-write-manifest", args, &parts.stdout)
        .ok();
}

fn mirror(env: &Env) -> String {
    env.run("ctxfold-mirror", [] as [&str; 0])
        .ok()
        .stdout_text()
}

#[test]
fn mirrors_the_store_files_as_they_are_and_commits_only_changes() {
    let mut env = Env::new();
    env.set("SOURCE_DATE_EPOCH", "1700000000");
    let files = common::fixture_files();
    fold(&env, "one", &files[0]);
    fs::create_dir_all(env.store.join("context-fold/one")).unwrap();
    fs::write(
        env.store.join("context-fold/one/seed-index.jsonl"),
        "{\"seq\":1}\n",
    )
    .unwrap();
    let repo = env.store.join("mirror.git");

    let first = mirror(&env);
    assert_eq!(first.trim().len(), 40, "{first}");
    assert_eq!(mirror(&env), first, "nothing changed: no new commit");
    assert_eq!(
        git(&env, &repo, &["rev-list", "--count", "refs/heads/ctxfold"]),
        "1\n"
    );
    let commit = git(&env, &repo, &["cat-file", "-p", first.trim()]);
    assert!(
        commit.contains("\nauthor ctxfold <ctxfold@localhost> 1700000000 +0000\n"),
        "{commit}"
    );
    assert!(
        commit.contains("\ncommitter ctxfold <ctxfold@localhost> 1700000000 +0000\n"),
        "{commit}"
    );
    assert_eq!(
        git(&env, &repo, &["symbolic-ref", "HEAD"]),
        "refs/heads/ctxfold\n"
    );

    // Every store file is a blob with its bytes, and nothing else is in the tree.
    let listed = git(
        &env,
        &repo,
        &["ls-tree", "-r", "--name-only", "refs/heads/ctxfold"],
    );
    let mut expected: Vec<String> = Env::snapshot(&env.store)
        .into_iter()
        .filter(|(p, _)| p.is_file())
        .map(|(p, _)| {
            p.strip_prefix(&env.store)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        })
        .filter(|p| {
            [
                "manifests/",
                "objects/",
                "packs-ctxfold/",
                "seeds/",
                "context-fold/",
            ]
            .iter()
            .any(|d| p.starts_with(d))
        })
        .collect();
    expected.sort();
    assert_eq!(listed.lines().collect::<Vec<_>>(), expected);
    for rel in &expected {
        let blob = Command::new("git")
            .env_clear()
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &env.home)
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .arg("--git-dir")
            .arg(&repo)
            .args(["cat-file", "blob", &format!("refs/heads/ctxfold:{rel}")])
            .output()
            .unwrap();
        assert_eq!(blob.stdout, fs::read(env.store.join(rel)).unwrap(), "{rel}");
    }

    // A changed seed index and a new session: one new commit on top of the first.
    fs::write(
        env.store.join("context-fold/one/seed-index.jsonl"),
        "{\"seq\":1}\n{\"seq\":2}\n",
    )
    .unwrap();
    fold(&env, "two", &files[1]);
    env.run("ctxfold", ["seeds"]).ok();
    let catalog = fs::read_to_string(env.store.join("seeds/catalog.jsonl")).unwrap();
    let second = mirror(&env);
    assert_ne!(second, first);
    assert_eq!(
        git(&env, &repo, &["rev-parse", &format!("{}^", second.trim())]),
        first
    );
    let seeds = git(
        &env,
        &repo,
        &[
            "cat-file",
            "blob",
            "refs/heads/ctxfold:context-fold/one/seed-index.jsonl",
        ],
    );
    assert_eq!(seeds, "{\"seq\":1}\n{\"seq\":2}\n");
    let mirrored = git(
        &env,
        &repo,
        &["cat-file", "blob", "refs/heads/ctxfold:seeds/catalog.jsonl"],
    );
    assert_eq!(mirrored, catalog);
    assert!(
        git(&env, &repo, &["ls-tree", "-r", "--name-only", "HEAD"])
            .contains("manifests/two.json\n")
    );
    git(&env, &repo, &["fsck", "--strict", "--no-dangling"]);

    // The same store state is the same tree in any repository.
    let other = env.path("elsewhere.git");
    let again = env
        .run("ctxfold-mirror", ["--git", other.to_str().unwrap()])
        .ok()
        .stdout_text();
    assert_eq!(
        git(&env, &other, &["rev-parse", "refs/heads/ctxfold^{tree}"]),
        git(&env, &repo, &["rev-parse", "refs/heads/ctxfold^{tree}"])
    );
    assert_eq!(again.trim().len(), 40);
}

#[test]
fn an_empty_store_makes_no_commit_and_a_missing_store_is_an_error() {
    let env = Env::new();
    fs::create_dir_all(env.store.join("objects")).unwrap();
    assert_eq!(mirror(&env), "");
    assert_eq!(
        git(&env, &env.store.join("mirror.git"), &["for-each-ref"]),
        ""
    );
    env.run(
        "ctxfold-mirror",
        ["--store", env.path("nowhere").to_str().unwrap()],
    )
    .fails(1)
    .one_line_error("not a ctxfold store");
}

/// Paths under `dir` that anyone but their owner may read, write or enter.
fn not_private(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut open = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.permissions().mode() & 0o077 != 0 {
            open.push(format!(
                "{:o} {}",
                meta.permissions().mode(),
                path.display()
            ));
        }
        if meta.is_dir() {
            stack.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    open
}

#[test]
fn mirrors_are_private_whatever_the_umask() {
    let env = Env::new();
    let files = common::fixture_files();
    fold(&env, "one", &files[0]);
    let other = env.path("other.git");
    let remote = env.path("remote.git");
    git(&env, &remote, &["init", "--bare", "--quiet"]);
    // A umask most users have: 022. The mirror is created, committed to, fetched into and pushed
    // from (by the real git) under it.
    env.shell(&format!(
        "umask 022 && $BIN/ctxfold-mirror && $BIN/ctxfold-mirror --git {other} && \
         $BIN/ctxfold remote add origin {remote} && $BIN/ctxfold sync",
        other = other.display(),
        remote = remote.display()
    ))
    .ok();
    fold(&env, "two", &files[1]);
    env.shell("umask 022 && $BIN/ctxfold sync").ok();
    for repo in [env.store.join("mirror.git"), other] {
        assert!(repo.join("objects").is_dir());
        assert_eq!(
            not_private(&repo),
            Vec::<String>::new(),
            "{}",
            repo.display()
        );
    }
    let shared = git(
        &env,
        &env.store.join("mirror.git"),
        &["config", "core.sharedRepository"],
    );
    assert_eq!(shared.trim(), "0600");
}

#[test]
fn a_mirror_made_before_is_made_private() {
    let env = Env::new();
    let files = common::fixture_files();
    fold(&env, "one", &files[0]);
    let repo = env.store.join("mirror.git");
    git(&env, &repo, &["init", "--bare", "--quiet"]);
    let run = Command::new("chmod")
        .args(["-R", "go+rX"])
        .arg(&repo)
        .status()
        .unwrap();
    assert!(run.success());
    assert!(!not_private(&repo).is_empty());
    mirror(&env);
    assert_eq!(not_private(&repo), Vec::<String>::new());
}

/// Several ctxfolds that each need the mirror of a store that has none yet at once (scripts run
/// in parallel): each makes one beside its place, the first put in place is the one
/// every one of them uses, and none of theirs is left behind.
#[test]
fn mirrors_made_at_once_by_several_ctxfolds_end_as_one() {
    for round in 0..5 {
        let env = Env::new();
        let session = env.path("s.jsonl");
        fs::write(&session, b"{\"n\":1}\n").unwrap();
        fold(&env, "s", &session);
        let children: Vec<_> = (0..6)
            .map(|_| {
                env.command("ctxfold-mirror")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut names: Vec<String> = fs::read_dir(&env.store)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("mirror"))
            .collect();
        names.sort();
        assert_eq!(names, ["mirror.git"], "round {round}");
        let mirror = env.store.join("mirror.git");
        let head = git(&env, &mirror, &["symbolic-ref", "HEAD"]);
        assert_eq!(head.trim(), "refs/heads/ctxfold", "round {round}");
        assert!(not_private(&mirror).is_empty(), "round {round}");
    }
}

/// A creation of the mirror killed part-way leaves its folder beside the mirror's place (never at
/// it); the next open of the mirror (creating it, or not) removes those begun a minute ago or
/// more, and leaves a younger one (it may be another ctxfold's, still at work).
#[test]
fn folders_that_killed_creations_of_the_mirror_left_are_removed_once_old() {
    let env = Env::new();
    let session = env.path("s.jsonl");
    fs::write(&session, b"{\"n\":1}\n").unwrap();
    fold(&env, "s", &session);
    let (old, young) = (
        env.store.join(".mirror.git-new-AbCdEf"),
        env.store.join(".mirror.git-new-GhIjKl"),
    );
    for dir in [&old, &young] {
        fs::create_dir_all(dir.join("hooks")).unwrap();
        fs::write(dir.join("hooks/docs.url"), b"x").unwrap();
    }
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    fs::File::open(&old)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    mirror(&env);
    assert!(!old.exists() && young.exists());
    assert!(env.store.join("mirror.git/HEAD").is_file());
    // Once the mirror is there, the next open removes the one left young before.
    fs::File::open(&young)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    mirror(&env);
    assert!(!young.exists());
}

/// A creation of the mirror killed with -9 at any moment (making it, committing the store into
/// it): the next run makes or opens it and commits, a run after that has nothing to commit, and
/// git finds the mirror whole; what the killed run left beside it is never where the mirror goes.
#[test]
fn a_mirror_whose_creation_is_killed_anywhere_is_made_by_the_next_run() {
    let seed = common::seed("CTXFOLD_TEST_SEED");
    let mut rng = common::Rng::new(seed);
    for round in 0..common::setting("CTXFOLD_TEST_ROUNDS", 12) {
        let env = Env::new();
        let session = env.path("s.jsonl");
        fs::write(&session, b"{\"n\":1}\n").unwrap();
        fold(&env, "s", &session);
        let mut child = env
            .command("ctxfold-mirror")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let after = std::time::Duration::from_micros(rng.below(30_000));
        std::thread::sleep(after);
        child.kill().ok();
        child.wait().unwrap();
        let at = format!("round {round}, killed after {after:?} (seed {seed})");
        let first = mirror(&env);
        let again = mirror(&env);
        let mirror_dir = env.store.join("mirror.git");
        assert!(mirror_dir.join("HEAD").is_file(), "{at}");
        git(&env, &mirror_dir, &["fsck", "--no-progress"]);
        let head = git(&env, &mirror_dir, &["rev-parse", "refs/heads/ctxfold"]);
        assert_eq!(
            (first.as_str(), again.as_str()),
            (head.as_str(), head.as_str()),
            "{at}"
        );
        let log = git(
            &env,
            &mirror_dir,
            &["log", "--format=%H", "refs/heads/ctxfold"],
        );
        assert_eq!(log.lines().count(), 1, "{at}: one commit, the store's");
    }
}

/// A mirror killed while it moved the branch leaves git's lock file on it, which failed every
/// later mirror ("Could not prepare reference edit … File exists"): the next mirror, holding the
/// repository as a sync does, clears it and commits.
#[test]
fn a_ref_lock_a_killed_mirror_left_does_not_fail_the_next() {
    let env = Env::new();
    let session = env.path("s.jsonl");
    fs::write(&session, b"{\"n\":1}\n").unwrap();
    fold(&env, "s", &session);
    let first = mirror(&env);
    let mirror_dir = env.store.join("mirror.git");
    fs::write(mirror_dir.join("refs/heads/ctxfold.lock"), b"").unwrap();
    let more = env.path("t.jsonl");
    fs::write(&more, b"{\"n\":2}\n").unwrap();
    fold(&env, "t", &more);
    let second = mirror(&env);
    assert_ne!(second, first);
    assert!(!mirror_dir.join("refs/heads/ctxfold.lock").exists());
    let head = git(&env, &mirror_dir, &["rev-parse", "refs/heads/ctxfold"]);
    assert_eq!(second, head);
}

/// A mirror repository named by a relative path (`--git m.git`) is made and used as one named
/// absolutely: its creation beside its place looked for the folder of "m.git", which is "".
#[test]
fn a_mirror_named_by_a_relative_path_is_made_and_used() {
    let env = Env::new();
    let session = env.path("s.jsonl");
    fs::write(&session, b"{\"n\":1}\n").unwrap();
    fold(&env, "s", &session);
    let first = env
        .run("ctxfold-mirror", ["--git", "m.git"])
        .ok()
        .stdout_text();
    let again = env
        .run("ctxfold-mirror", ["--git", "m.git"])
        .ok()
        .stdout_text();
    let made = env.path("m.git");
    assert_eq!(first, again);
    assert_eq!(
        git(&env, &made, &["rev-parse", "refs/heads/ctxfold"]),
        first
    );
}
