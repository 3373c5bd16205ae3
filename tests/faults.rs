//! Fault injection: `kill -9` at random moments of fold, gc (plain and --aggressive), repack,
//! unpack, restore and sync, each followed by the checks that say nothing was lost: `fsck --full`
//! finds no problem, every session the store holds restores to bytes its source really had, a
//! source is gone only if the store holds its last version, a killed restore never leaves a partial
//! target nor an empty temp file and the next restore cleans up after it, and the next sync
//! succeeds. Then the killed command is run again uncut, and the same checks hold.
//!
//! `CTXFOLD_FAULT_TRIALS` (default 16: each command twice, fold four times; run by `cargo test`)
//! and `CTXFOLD_FAULT_SEED` (default: the clock) set the run; `bench/faults` runs many trials and
//! prints the report.

mod common;
mod homes;

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Env, Rng};
use homes::json_lines;

/// A session as the trials know it: where its source is and every version it has had.
struct Session {
    path: PathBuf,
    versions: Vec<Vec<u8>>,
    active: bool,
}

struct World {
    env: Env,
    sessions: HashMap<String, Session>,
    rng: Rng,
    losses: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Fold,
    Gc,
    Restore,
    Sync,
    Repack,
    Unpack,
    GcAggressive,
}

fn git(args: &[&str], dir: &Path) {
    let ok = Command::new("git")
        .args(args)
        .arg(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

impl World {
    fn new(seed: u64) -> Self {
        let mut env = Env::new();
        let homes = homes::build(&mut env, homes::sets().remove(0));
        let sessions = homes
            .sessions
            .iter()
            .map(|s| {
                let session = Session {
                    path: s.path.clone(),
                    versions: vec![s.bytes.clone()],
                    active: !s.archived,
                };
                (s.id.clone(), session)
            })
            .collect();
        // The .zst sibling that loses to its plain file would be folded in its place once the
        // plain one is removed: another file's bytes, which the checks here cannot follow.
        fs::remove_file(&homes.shadowed).unwrap();
        let remote = env.path("remote.git");
        git(&["init", "--bare", "--quiet"], &remote);
        env.run("ctxfold", ["fold", "--apply"]).ok();
        env.run(
            "ctxfold",
            ["remote", "add", "origin", remote.to_str().unwrap()],
        )
        .ok();
        env.run("ctxfold", ["sync"]).ok();
        Self {
            env,
            sessions,
            rng: Rng::new(seed),
            losses: Vec::new(),
        }
    }

    /// Grow active sessions, as agents do, and now and then rewrite one (a changed session).
    fn mutate(&mut self) {
        let ids: Vec<String> = self.sessions.keys().cloned().collect();
        for id in ids {
            let roll = self.rng.below(10);
            let session = self.sessions.get_mut(&id).unwrap();
            if !session.active || !session.path.exists() || roll >= 6 {
                continue;
            }
            let mut bytes = fs::read(&session.path).unwrap();
            if roll == 0 {
                bytes.truncate(bytes.len() / 2);
            }
            bytes.extend_from_slice(
                format!("{{\"type\":\"event_msg\",\"payload\":{{\"trial\":{roll}}}}}\n").as_bytes(),
            );
            fs::write(&session.path, &bytes).unwrap();
            session.versions.push(bytes);
        }
    }

    fn args(&mut self, op: Op) -> Vec<String> {
        let mut args: Vec<String> = match op {
            Op::Fold => vec!["fold", "--apply", "--overwrite", "--remove-source"],
            Op::Gc => vec!["gc", "--apply", "--prune=now"],
            Op::Sync => vec!["sync"],
            Op::Restore => vec!["restore", "--overwrite"],
            Op::Repack => vec!["repack"],
            Op::Unpack => vec!["unpack"],
            Op::GcAggressive => vec!["gc", "--apply", "--prune=now", "--aggressive"],
        }
        .into_iter()
        .map(String::from)
        .collect();
        if op == Op::Restore {
            let (id, to) = self.restore_target();
            args.extend([id, "--to".into(), to.display().to_string()]);
        }
        args
    }

    /// A folded session, and where the restore trials put it.
    fn restore_target(&mut self) -> (String, PathBuf) {
        let mut ids: Vec<&String> = self.sessions.keys().collect();
        ids.sort();
        let id = ids[self.rng.below(ids.len() as u64) as usize].clone();
        let to = self.env.path("restored").join(format!("{id}.jsonl"));
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        (id, to)
    }

    /// Run `ctxfold ARGS`, killed with SIGKILL after a random moment; whether it was killed.
    fn run_killed(&mut self, op: Op, args: &[String]) -> bool {
        // About as long as each takes here, so that most kills land mid-way.
        let moment = match op {
            Op::Fold | Op::Sync => 400,
            Op::Gc | Op::Repack | Op::Unpack => 50,
            Op::GcAggressive => 300,
            Op::Restore => 30,
        };
        let mut child = self
            .env
            .command("ctxfold")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(self.rng.below(moment)));
        let killed = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        child.wait().unwrap();
        killed
    }

    fn lost(&mut self, what: String) {
        eprintln!("LOSS: {what}");
        self.losses.push(what);
    }

    /// Everything that must hold after any kill, and after the killed command is run again
    /// uncut: a command that finished must be as safe to repeat as one cut short.
    fn check(&mut self, op: Op, args: &[String]) {
        self.check_store(op, "killed");
        match op {
            Op::Restore => self.check_restore(args),
            Op::Sync => {
                let again = self.env.run("ctxfold", ["sync"]);
                if again.code != Some(0) {
                    self.lost(format!("sync after a killed sync: {}", again.stderr.trim()));
                }
            }
            Op::Fold | Op::Gc | Op::Repack | Op::Unpack | Op::GcAggressive => {
                let again = self.env.run("ctxfold", args);
                // A session `mutate` cut in half is no JSON Lines any more: fold refuses it (3).
                let refused = op == Op::Fold && again.code == Some(3);
                if again.code != Some(0) && !refused {
                    self.lost(format!(
                        "{op:?} run again after a kill: status {:?}: {}",
                        again.code,
                        again.stderr.trim()
                    ));
                }
            }
        }
        self.check_store(op, "run again");
    }

    /// The store whole: fsck --full clean, every session restoring to bytes its source had, no
    /// source gone that the store does not hold the last version of.
    fn check_store(&mut self, op: Op, when: &str) {
        let fsck = self.env.run("ctxfold", ["fsck", "--full"]);
        if fsck.code != Some(0) {
            self.lost(format!(
                "after {op:?} ({when}): fsck --full: {}",
                fsck.stdout_text()
            ));
        }
        let listed = json_lines(&self.env.run("ctxfold", ["ls", "--json"]).ok().stdout);
        let held: HashMap<String, ()> = listed
            .iter()
            .filter(|l| l["conflict"] == false)
            .map(|l| (l["id"].as_str().unwrap().to_string(), ()))
            .collect();
        let ids: Vec<String> = self.sessions.keys().cloned().collect();
        for id in ids {
            let session = &self.sessions[&id];
            let gone = !session.path.exists();
            if !held.contains_key(&id) {
                if gone {
                    self.lost(format!(
                        "after {op:?}: {id}: source removed, not in the store"
                    ));
                }
                continue;
            }
            let run = self.env.run("ctxfold-cat-manifest", [&id]);
            let session = &self.sessions[&id];
            if run.code != Some(0) || !session.versions.contains(&run.stdout) {
                self.lost(format!(
                    "after {op:?}: {id}: restores to bytes it never had"
                ));
            } else if gone && &run.stdout != session.versions.last().unwrap() {
                self.lost(format!(
                    "after {op:?}: {id}: source removed, store has an older version"
                ));
            }
        }
    }

    /// A killed restore leaves the target whole or absent; restoring again cleans up after it.
    fn check_restore(&mut self, args: &[String]) {
        let (id, to) = (&args[2], PathBuf::from(&args[4]));
        let expected = self.env.run("ctxfold-cat-manifest", [id]).stdout;
        // Whole: the version this restore wrote, or one an earlier trial did.
        if to.exists() && !self.sessions[id].versions.contains(&fs::read(&to).unwrap()) {
            self.lost(format!("restore {id}: a partial target"));
        }
        // A restore writes a file with no name: killed while writing, it leaves nothing; killed
        // between naming its file and the rename, the whole session, which the next one removes.
        let empty = leftovers(&to)
            .into_iter()
            .filter(|p| fs::metadata(p).unwrap().len() == 0 && !expected.is_empty())
            .count();
        if empty > 0 {
            self.lost(format!(
                "restore {id}: {empty} empty temp files left beside the target"
            ));
        }
        let again = self.env.run("ctxfold", args);
        let leftovers = leftovers(&to).len();
        if again.code != Some(0) || fs::read(&to).unwrap() != expected || leftovers > 0 {
            self.lost(format!(
                "restore {id} after a killed one: status {:?}, {leftovers} temp files left",
                again.code
            ));
        }
    }
}

/// The restore temp files beside `target`.
fn leftovers(target: &Path) -> Vec<PathBuf> {
    fs::read_dir(target.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with('.') && name.contains(".restore-")
        })
        .collect()
}

#[test]
fn nothing_is_lost_when_commands_are_killed_at_random_moments() {
    let trials = common::setting("CTXFOLD_FAULT_TRIALS", 16);
    let seed = common::seed("CTXFOLD_FAULT_SEED");
    let mut world = World::new(seed);
    let ops = [
        Op::Fold,
        Op::Gc,
        Op::Restore,
        Op::Sync,
        Op::Repack,
        Op::Unpack,
        Op::Fold,
        Op::GcAggressive,
    ];
    let mut tally: HashMap<Op, (u64, u64)> = HashMap::new();
    for trial in 0..trials {
        let op = ops[trial as usize % ops.len()];
        if op == Op::Fold {
            world.mutate();
        }
        let args = world.args(op);
        let killed = world.run_killed(op, &args);
        let entry = tally.entry(op).or_default();
        entry.0 += 1;
        entry.1 += u64::from(killed);
        world.check(op, &args);
    }
    let mut report = format!("fault trials (seed {seed}): {trials} trials");
    for (at, &op) in ops.iter().enumerate() {
        if ops[..at].contains(&op) {
            continue;
        }
        let (runs, killed) = tally.get(&op).copied().unwrap_or_default();
        report.push_str(&format!("; {op:?}: {runs} ({killed} killed mid-way)"));
    }
    report.push_str(&format!("; {} losses", world.losses.len()));
    eprintln!("{report}");
    let _ = std::io::stderr().flush();
    assert!(world.losses.is_empty(), "{report}\n{:#?}", world.losses);
}
