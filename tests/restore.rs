//! `ctxfold restore` without `--to`: the target is the session's place under this machine's agent
//! homes, computed, never taken from a manifest, even one that came through a git remote; `fsck`,
//! `sync` and `clone` say which sessions restore will not place. Two "machines" share one temp dir:
//! A folds and syncs to a bare git remote, B (other HOME, CODEX_HOME and PI_CODING_AGENT_DIR)
//! clones and restores.

mod common;
mod homes;

use std::fs;
use std::os::unix::fs::PermissionsExt;
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
