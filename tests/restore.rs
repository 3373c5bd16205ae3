//! `ctxfold restore` without `--to`: the target is the session's place under this machine's agent
//! homes, computed, never taken from a manifest, even one that came through a git remote; `fsck`,
//! `sync` and `clone` say which sessions restore will not place. Two "machines" share one temp dir:
//! A folds and syncs to a bare git remote, B (other HOME, CODEX_HOME and PI_CODING_AGENT_DIR)
//! clones and restores.

mod common;
mod homes;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;

use common::{Env, Run};
use homes::Homes;

/// Machine A's homes folded into its store (`env.store`) and synced to a bare remote.
struct World {
    env: Env,
    a: Homes,
    remote: PathBuf,
}

/// Machine B: its store and homes (which exist, as after running each agent once).
struct B {
    store: PathBuf,
    codex: PathBuf,
    pi: PathBuf,
}

impl World {
    fn new() -> Self {
        let mut env = Env::new();
        env.set("GIT_CONFIG_NOSYSTEM", "1");
        let own = homes::sets().remove(0);
        let a = homes::build(&mut env, own);
        env.run("ctxfold", ["fold", "--apply"]).ok();
        let remote = env.path("remote.git");
        let init = Command::new("git")
            .args(["init", "--quiet", "--bare"])
            .arg(&remote)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", &env.home)
            .output()
            .unwrap();
        assert!(init.status.success());
        env.run(
            "ctxfold",
            ["remote", "add", "origin", remote.to_str().unwrap()],
        )
        .ok();
        Self { env, a, remote }
    }

    fn sync_a(&self) -> Run {
        self.env.run("ctxfold", ["sync"]).ok()
    }

    /// Switch the environment to machine B and clone the remote into its store.
    fn clone_on_b(&mut self) -> (B, Run) {
        let b = B {
            store: self.env.path("b-store"),
            codex: self.env.path("b-home/.codex"),
            pi: self.env.path("b-home/.pi/agent"),
        };
        fs::create_dir_all(&b.codex).unwrap();
        fs::create_dir_all(&b.pi).unwrap();
        self.env.set("HOME", self.env.path("b-home"));
        self.env.set("CODEX_HOME", &b.codex);
        self.env.set("PI_CODING_AGENT_DIR", &b.pi);
        self.env.set("CTXFOLD_STORE", &b.store);
        let run = self
            .env
            .run("ctxfold", ["clone", self.remote.to_str().unwrap()])
            .ok();
        (b, run)
    }

    /// Rewrite a manifest of A's store in place, as someone with write access to it could.
    fn edit_manifest(&self, id: &str, edit: impl FnOnce(&mut serde_json::Value)) {
        let path = self.env.store.join(format!("manifests/{id}.json"));
        let mut manifest: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        edit(&mut manifest);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&path, serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
    }
}

/// The files and folders under the test's temp dir that are not in a store or the remote.
fn outside_stores(env: &Env) -> Vec<(PathBuf, Vec<u8>)> {
    let stores = [
        env.store.clone(),
        env.path("b-store"),
        env.path("remote.git"),
    ];
    Env::snapshot(env.dir.path())
        .into_iter()
        .filter(|(p, _)| !stores.iter().any(|s| p.starts_with(s)))
        .collect()
}

#[test]
fn honest_sessions_restore_into_the_other_machines_homes_byte_for_byte() {
    let mut w = World::new();
    w.sync_a();
    let (b, clone) = w.clone_on_b();
    assert!(!clone.stderr.contains("needs --to"), "{}", clone.stderr);
    let fsck = w.env.run("ctxfold", ["fsck"]).ok();
    assert_eq!(
        fsck.stdout_text().lines().count(),
        1,
        "{}",
        fsck.stdout_text()
    );
    assert!(
        fsck.stdout_text().contains("0 unplaced manifests"),
        "{}",
        fsck.stdout_text()
    );

    let before = outside_stores(&w.env);
    let mut expected = Vec::new();
    for placed in &w.a.sessions {
        // Where it was under A's home, re-rooted under B's.
        let target = match placed.rollout_path.strip_prefix(&w.a.codex) {
            Ok(rel) => b.codex.join(rel),
            Err(_) => {
                b.pi.join(placed.rollout_path.strip_prefix(&w.a.pi).unwrap())
            }
        };
        let run = w.env.run("ctxfold", ["restore", &placed.id]).ok();
        assert_eq!(run.stdout_text().trim_end(), target.to_str().unwrap());
        assert!(
            fs::read(&target).unwrap() == placed.bytes,
            "{} differs",
            placed.id
        );
        expected.push(target);
    }
    // Archived Codex sessions (a .jsonl.zst among them) come back under archived_sessions/.
    let archived: Vec<_> = expected
        .iter()
        .filter(|t| t.starts_with(b.codex.join("archived_sessions")))
        .collect();
    assert_eq!(archived.len(), w.a.archived().count());
    assert!(archived.iter().all(|t| t.extension().unwrap() == "jsonl"));

    // Nothing else was created, and nothing at all outside B's homes.
    for (path, _) in outside_stores(&w.env) {
        if before.iter().any(|(p, _)| *p == path) {
            continue;
        }
        assert!(
            path.starts_with(&b.codex) || path.starts_with(&b.pi),
            "{} created outside B's homes",
            path.display()
        );
        assert!(
            path.is_dir() || expected.contains(&path),
            "{} created",
            path.display()
        );
    }
    // A's homes were never written to.
    for placed in &w.a.sessions {
        assert!(placed.path.exists());
    }
}

#[test]
fn a_planted_rollout_path_from_a_remote_is_never_written_and_is_reported() {
    let mut w = World::new();
    let outside = w.env.path("outside");
    let evil = outside.join(".config/autostart-pwned/evil.desktop");
    let (absolute, dotted) = (w.a.get_codex(0), w.a.get_pi());
    w.edit_manifest(&absolute.id, |m| {
        m["session"]["rollout_path"] = evil.to_str().unwrap().into();
    });
    // A path whose ending has the right shape, reached through `..`.
    let sneaky = format!(
        "{}/sessions/../../outside/sessions/--x--/{}",
        w.a.pi.display(),
        dotted.rollout_path.file_name().unwrap().to_str().unwrap()
    );
    w.edit_manifest(&dotted.id, |m| {
        m["session"]["rollout_path"] = sneaky.clone().into();
    });
    // Locally, the edit is refused already.
    w.env
        .run("ctxfold", ["restore", &absolute.id])
        .fails(3)
        .one_line_error("use --to PATH");
    w.sync_a();

    let (_b, clone) = w.clone_on_b();
    for (id, why) in [
        (
            &absolute.id,
            "is not where Codex, Pi or Claude Code keeps this session",
        ),
        (&dotted.id, "has a \"..\" component"),
    ] {
        let note = clone
            .stderr
            .lines()
            .find(|l| l.contains(id.as_str()))
            .unwrap_or_else(|| panic!("no note for {id}: {}", clone.stderr));
        assert!(note.contains(why) && note.contains("needs --to"), "{note}");
    }
    assert_eq!(clone.stderr.lines().count(), 2, "{}", clone.stderr);

    // fsck says so, as notes: the store is sound.
    let fsck = w.env.run("ctxfold", ["fsck", "--full"]).ok();
    let text = fsck.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[..2]
            .iter()
            .all(|l| l.starts_with("unplaced manifest ")),
        "{text}"
    );
    assert!(text.contains(evil.to_str().unwrap()), "{text}");
    assert!(lines[2].contains("2 unplaced manifests"), "{text}");

    // restore refuses and creates nothing; --to works.
    let before = outside_stores(&w.env);
    for placed in [absolute, dotted] {
        w.env
            .run("ctxfold", ["restore", &placed.id])
            .fails(3)
            .one_line_error("use --to PATH");
        let to = w.env.path(&format!("chosen-{}.jsonl", placed.id));
        let chosen = ["--to", to.to_str().unwrap()];
        assert_eq!(outside_stores(&w.env), before);
        w.env
            .run("ctxfold", ["restore", &placed.id, chosen[0], chosen[1]])
            .ok();
        assert!(fs::read(&to).unwrap() == placed.bytes);
        fs::remove_file(&to).unwrap();
    }
    assert!(!outside.exists());
}

#[test]
fn restore_creates_no_agent_home_and_nothing_above_its_session_tree() {
    let mut w = World::new();
    w.sync_a();
    let (b, _) = w.clone_on_b();
    fs::remove_dir(&b.codex).unwrap();
    let before = outside_stores(&w.env);
    let session = w.a.get_codex(2);
    w.env
        .run("ctxfold", ["restore", &session.id])
        .fails(3)
        .one_line_error("does not exist (the Codex home: run Codex once, or set CODEX_HOME)");
    assert_eq!(outside_stores(&w.env), before);
    // With its home back, only its session tree is created.
    fs::create_dir(&b.codex).unwrap();
    w.env.run("ctxfold", ["restore", &session.id]).ok();
    let created: Vec<_> = fs::read_dir(&b.codex)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(created, ["sessions"]);
}

#[test]
fn a_remote_manifest_with_an_unsafe_session_id_is_refused_and_nothing_is_applied() {
    let mut w = World::new();
    let placed = w.a.get_codex(2);
    w.edit_manifest(&placed.id, |m| m["session"]["id"] = "../evil".into());
    w.sync_a();
    w.env.set("CTXFOLD_STORE", w.env.path("b-store"));
    w.env
        .run("ctxfold", ["clone", w.remote.to_str().unwrap()])
        .fails(4)
        .one_line_error("unsafe session id \"../evil\"");
    assert!(
        !w.env
            .path("b-store/manifests")
            .join(format!("{}.json", placed.id))
            .exists()
    );
    // Where it sits, fsck calls it what it is: a bad manifest.
    let store = w.env.store.clone();
    w.env.set("CTXFOLD_STORE", &store);
    let fsck = w.env.run("ctxfold", ["fsck"]).fails(4);
    assert!(
        fsck.stdout_text().contains("unsafe session id"),
        "{}",
        fsck.stdout_text()
    );
}

/// The own homes folded into the store, sources left where they are.
fn folded_homes() -> (Env, Homes) {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    (env, homes)
}

#[test]
fn a_unique_prefix_names_a_session_and_an_ambiguous_one_lists_its_matches() {
    let (env, homes) = folded_homes();
    let small = homes.get_codex(2);
    assert!(small.id.starts_with("01a22ec3-2142"), "{}", small.id);
    let out = env.path("out");
    let to = format!("{}/", out.display());
    let run = env
        .run("ctxfold", ["restore", "01a22ec3-2142", "--to", &to])
        .ok();
    let target = out.join(small.rollout_path.file_name().unwrap());
    assert_eq!(run.stdout_text().trim_end(), target.to_str().unwrap());
    assert!(fs::read(&target).unwrap() == small.bytes);

    // Three sessions start so: refused as bad usage, naming them, nothing written.
    let run = env
        .run("ctxfold", ["restore", "01a22ec3", "--to", &to])
        .fails(2)
        .one_line_error(
            "session id prefix \"01a22ec3\" is ambiguous: it matches 3 sessions: 01a22ec3-",
        );
    for id in homes
        .sessions
        .iter()
        .map(|s| &s.id)
        .filter(|id| id.starts_with("01a22ec3"))
    {
        assert!(
            run.stderr.contains(id.as_str()),
            "{id} not listed: {}",
            run.stderr
        );
    }
    assert!(run.stdout.is_empty());
    assert_eq!(fs::read_dir(&out).unwrap().count(), 1);
    env.run("ctxfold", ["restore", "ffff"])
        .fails(1)
        .one_line_error("no folded session \"ffff\"");
}

#[test]
fn a_session_in_place_already_is_a_quiet_success_and_other_bytes_are_refused() {
    let (env, homes) = folded_homes();
    let session = homes.get_codex(2);
    let before = fs::metadata(&session.path).unwrap();
    // The source is where restore puts it back: it is in place, and is not written.
    for _ in 0..2 {
        let run = env.run("ctxfold", ["restore", &session.id]).ok();
        assert_eq!(run.stdout_text().trim_end(), session.path.to_str().unwrap());
        assert_eq!(run.stderr, "");
    }
    let after = fs::metadata(&session.path).unwrap();
    assert_eq!(
        (before.ino(), before.mtime_nsec()),
        (after.ino(), after.mtime_nsec())
    );
    // Other bytes of the same size there are refused; --overwrite replaces them.
    let mut other = session.bytes.clone();
    other[0] ^= 1;
    fs::write(&session.path, &other).unwrap();
    env.run("ctxfold", ["restore", &session.id])
        .fails(3)
        .one_line_error("exists and holds other bytes (use --overwrite");
    assert!(fs::read(&session.path).unwrap() == other);
    env.run("ctxfold", ["restore", &session.id, "--overwrite"])
        .ok();
    assert!(fs::read(&session.path).unwrap() == session.bytes);
}

#[test]
fn to_dash_writes_the_session_to_stdout() {
    let (env, homes) = folded_homes();
    let session = homes.get_pi();
    let run = env
        .run("ctxfold", ["restore", &session.id, "--to", "-"])
        .ok();
    assert!(run.stdout == session.bytes);
    assert_eq!(run.stderr, "");
    assert!(!env.path("-").exists());
    env.run("ctxfold", ["restore", "--all", "--to", "-"])
        .fails(2)
        .one_line_error("--to - writes one SESSION to stdout");
}

#[test]
fn to_a_folder_puts_each_session_inside_under_its_own_name() {
    let (env, homes) = folded_homes();
    let session = homes.get_codex(3);
    // A folder that exists, named without a slash.
    let existing = env.path("existing");
    fs::create_dir(&existing).unwrap();
    env.run(
        "ctxfold",
        ["restore", &session.id, "--to", existing.to_str().unwrap()],
    )
    .ok();
    let name = session.rollout_path.file_name().unwrap();
    assert!(fs::read(existing.join(name)).unwrap() == session.bytes);
    // One that does not, named with a slash: created (private).
    let fresh = env.path("fresh/deeper");
    let to = format!("{}/", fresh.display());
    env.run("ctxfold", ["restore", &session.id, "--to", &to])
        .ok();
    assert!(fs::read(fresh.join(name)).unwrap() == session.bytes);
    assert_eq!(fs::metadata(&fresh).unwrap().mode() & 0o777, 0o700);
    // A file name takes one session only.
    let file = env.path("one.jsonl");
    let some = [homes.get_codex(2).id, session.id.clone()];
    env.run(
        "ctxfold",
        [
            "restore",
            &some[0],
            &some[1],
            "--to",
            file.to_str().unwrap(),
        ],
    )
    .fails(2)
    .one_line_error("--to FILE takes one SESSION");
    assert!(!file.exists());
}

#[test]
fn a_session_files_path_names_its_session_even_once_the_file_is_gone() {
    let (env, homes) = folded_homes();
    let session = homes.get_codex(3);
    let path = session.path.to_str().unwrap();
    // Still there: in place.
    env.run("ctxfold", ["restore", path]).ok();
    // Gone (as --remove-source leaves it): its name still names it, and it comes back.
    fs::remove_file(&session.path).unwrap();
    let run = env.run("ctxfold", ["restore", path]).ok();
    assert_eq!(run.stdout_text().trim_end(), path);
    assert!(fs::read(&session.path).unwrap() == session.bytes);
    // A Pi session file names its session by its header, whatever its name.
    let pi = homes.get_pi();
    let renamed = env.path("renamed.jsonl");
    fs::write(&renamed, &pi.bytes).unwrap();
    let out = env.path("out/");
    let run = env
        .run(
            "ctxfold",
            [
                "restore",
                renamed.to_str().unwrap(),
                "--to",
                out.to_str().unwrap(),
            ],
        )
        .ok();
    assert!(run.stdout_text().contains(&pi.id), "{}", run.stdout_text());
    // A file of no folded session, and a path to nothing, are negative answers.
    let stranger = env.path("stranger.jsonl");
    fs::write(&stranger, b"{}\n").unwrap();
    env.run("ctxfold", ["restore", stranger.to_str().unwrap()])
        .fails(1)
        .one_line_error("holds session stranger, which is not folded");
    env.run("ctxfold", ["restore", "./nothing/here.jsonl"])
        .fails(1)
        .one_line_error("No such file or directory");
}

#[test]
fn several_sessions_and_all_restore_together_each_reported() {
    let (env, homes) = folded_homes();
    let out = env.path("all");
    let to = format!("{}/", out.display());
    let run = env.run("ctxfold", ["restore", "--all", "--to", &to]).ok();
    assert_eq!(run.stdout_text().lines().count(), homes.sessions.len());
    for session in &homes.sessions {
        let restored = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_str().unwrap().contains(&session.id))
            .unwrap_or_else(|| panic!("{} not restored", session.id));
        assert!(
            fs::read(restored).unwrap() == session.bytes,
            "{}",
            session.id
        );
    }
    assert!(
        run.stderr
            .contains(&format!("restored {} sessions", homes.sessions.len())),
        "{}",
        run.stderr
    );
    // Again: every one is in place.
    let run = env
        .run("ctxfold", ["restore", "--all", "--to", &to, "--json"])
        .ok();
    let lines = homes::json_lines(&run.stdout);
    assert_eq!(lines.len(), homes.sessions.len() + 1);
    for line in &lines[..homes.sessions.len()] {
        assert_eq!(line["type"], "session");
        assert_eq!(line["outcome"], "in_place");
        assert!(line["error"].is_null());
        assert!(
            line["path"]
                .as_str()
                .unwrap()
                .starts_with(out.to_str().unwrap())
        );
    }
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["sessions"], homes.sessions.len());
    assert_eq!(summary["in_place"], homes.sessions.len());
    assert_eq!(summary["restored"], 0);
    assert_eq!(summary["not_started"], 0);

    // Several named, one of them not folded and one ambiguous: the rest restore, each failure is
    // reported on its own, and the status is the worst.
    let some = env.path("some");
    let to = format!("{}/", some.display());
    let (a, b) = (homes.get_codex(0), homes.get_pi());
    let run = env
        .run(
            "ctxfold",
            ["restore", &a.id, "nope", "01a22ec3", &b.id, "--to", &to],
        )
        .fails(2);
    assert_eq!(
        run.stdout_text().lines().count(),
        2,
        "{}",
        run.stdout_text()
    );
    let errors: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("error:"))
        .collect();
    assert_eq!(errors.len(), 2, "{}", run.stderr);
    assert!(errors[0].starts_with("ctxfold restore: error: restore nope: no folded session"));
    assert!(errors[1].starts_with("ctxfold restore: error: restore 01a22ec3: session id prefix"));
    assert!(
        run.stderr.contains("restored 2 sessions, 2 failed"),
        "{}",
        run.stderr
    );
    assert_eq!(fs::read_dir(&some).unwrap().count(), 2);
    // A not-found alone among successes is status 1.
    env.run("ctxfold", ["restore", &a.id, "nope", "--to", &to])
        .fails(1);
    env.run("ctxfold", ["restore", &a.id, &b.id, "--generation", "1"])
        .fails(2)
        .one_line_error("--generation takes one SESSION");
}

#[test]
fn all_without_to_puts_each_session_back_in_its_own_place() {
    let (env, homes) = folded_homes();
    // Two sources removed (as --remove-source leaves them); the rest are where they were.
    for session in [homes.get_codex(3), homes.get_pi()] {
        fs::remove_file(&session.path).unwrap();
    }
    let missing = homes
        .sessions
        .iter()
        .filter(|s| !s.rollout_path.exists())
        .count();
    assert!(missing >= 2);
    let run = env.run("ctxfold", ["restore", "--all"]).ok();
    assert!(
        run.stderr.contains(&format!(
            "restored {missing} sessions, {} already in place",
            homes.sessions.len() - missing
        )),
        "{}",
        run.stderr
    );
    for session in &homes.sessions {
        assert!(
            fs::read(&session.rollout_path).unwrap() == session.bytes,
            "{}",
            session.id
        );
    }
    // Nothing else was written: no temp file left in the homes.
    let leftovers = Env::snapshot(&homes.codex)
        .into_iter()
        .chain(Env::snapshot(&homes.pi))
        .filter(|(p, _)| p.to_str().unwrap().ends_with(".tmp"))
        .count();
    assert_eq!(leftovers, 0);
}

impl Homes {
    /// The `i`th Codex session placed (0 and 1 archived, the rest active).
    fn get_codex(&self, i: usize) -> homes::Placed {
        self.sessions
            .iter()
            .filter(|s| s.rollout_path.starts_with(&self.codex))
            .nth(i)
            .unwrap()
            .clone()
    }

    fn get_pi(&self) -> homes::Placed {
        self.sessions
            .iter()
            .find(|s| s.rollout_path.starts_with(&self.pi))
            .unwrap()
            .clone()
    }
}

#[test]
fn more_sessions_than_one_group_restore_to_a_folder_and_a_refused_one_fails_alone() {
    let env = Env::new();
    let sources = env.path("plain");
    fs::create_dir(&sources).unwrap();
    let count = ctxfold::restore::GROUP_FILES + 7;
    let mut files = Vec::new();
    for i in 0..count {
        let path = sources.join(format!("s{i:03}.jsonl"));
        let line = format!("{{\"n\":{i},\"text\":\"{}\"}}\n", "x".repeat(i * 97));
        fs::write(&path, line).unwrap();
        files.push(path);
    }
    let mut fold = vec!["fold".to_string(), "--apply".into()];
    fold.extend(files.iter().map(|p| p.display().to_string()));
    env.run("ctxfold", &fold).ok();
    let out = env.path("out");
    fs::create_dir(&out).unwrap();
    // A target in the second group holds other bytes: refused, the rest of its group restores.
    let taken = out.join(format!("s{:03}.jsonl", ctxfold::restore::GROUP_FILES + 2));
    fs::write(&taken, "other bytes").unwrap();
    let to = format!("{}/", out.display());
    let run = env
        .run("ctxfold", ["restore", "--all", "--to", &to])
        .fails(3);
    assert!(
        run.stderr
            .contains(&format!("restored {} sessions, 1 failed", count - 1)),
        "{}",
        run.stderr
    );
    assert_eq!(fs::read(&taken).unwrap(), b"other bytes");
    let restored = |out: &std::path::Path| {
        let mut names: Vec<String> = fs::read_dir(out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // Every session under its own name, and no temp file left.
    let expected: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(restored(&out), expected);
    for file in &files {
        let at = out.join(file.file_name().unwrap());
        if at != taken {
            assert_eq!(
                fs::read(&at).unwrap(),
                fs::read(file).unwrap(),
                "{}",
                at.display()
            );
            assert_eq!(fs::metadata(&at).unwrap().mode() & 0o777, 0o600);
        }
    }
    // With --overwrite it is replaced, and the others are in place already.
    let run = env
        .run("ctxfold", ["restore", "--all", "--to", &to, "--overwrite"])
        .ok();
    assert!(
        run.stderr.contains(&format!(
            "restored 1 session, {} already in place",
            count - 1
        )),
        "{}",
        run.stderr
    );
    assert_eq!(
        fs::read(&taken).unwrap(),
        fs::read(&files[ctxfold::restore::GROUP_FILES + 2]).unwrap()
    );
    assert_eq!(restored(&out), expected);
}

#[test]
fn sessions_sharing_objects_and_an_object_too_large_to_hold_restore_together_byte_for_byte() {
    let env = Env::new();
    let sources = env.path("plain");
    fs::create_dir(&sources).unwrap();
    let line = |text: &str| format!("{{\"type\":\"x\",\"payload\":{{\"output\":\"{text}\"}}}}\n");
    let shared = line(&"shared line\\n".repeat(3000));
    // A field of 9.6 MB: an object in a block of its own, larger than a block read whole.
    let large = line(&"0123456789abcdef".repeat(600_000));
    let texts = [
        format!("{shared}{{\"n\":1}}\n"),
        format!("{shared}{{\"n\":2}}\n"),
        format!("{large}{shared}"),
        format!("{{\"n\":3}}\n{large}"),
    ];
    let mut files = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let path = sources.join(format!("s{i}.jsonl"));
        fs::write(&path, text).unwrap();
        files.push(path);
    }
    let parts = env
        .run("ctxfold-split", [files[2].to_str().unwrap()])
        .ok()
        .stdout_text();
    assert!(
        parts.lines().any(|p| {
            let part: serde_json::Value = serde_json::from_str(p).unwrap();
            part["object"]["raw_bytes"].as_u64().unwrap() > 8 << 20
        }),
        "{parts}"
    );
    let mut fold = vec!["fold".to_string(), "--apply".into()];
    fold.extend(files.iter().map(|p| p.display().to_string()));
    env.run("ctxfold", &fold).ok();
    let out = env.path("out");
    let to = format!("{}/", out.display());
    let run = env.run("ctxfold", ["restore", "--all", "--to", &to]).ok();
    assert!(run.stderr.contains("restored 4 sessions"), "{}", run.stderr);
    for file in &files {
        let restored = out.join(file.file_name().unwrap());
        assert_eq!(fs::read(&restored).unwrap(), fs::read(file).unwrap());
    }
    assert_eq!(fs::read_dir(&out).unwrap().count(), files.len());
}
