//! Every mutating command is safe to repeat: run twice and three times in a row, in random orders
//! and in every pairing, each step leaves `fsck --full` clean and every session the store holds
//! restoring byte for byte. A repack whose result is byte for byte the pack it read (a store packed
//! already) once removed that very pack, and every session with it.
//!
//! `CTXFOLD_REPEAT_STEPS` (default 24) random steps after the fixed ones; `CTXFOLD_REPEAT_SEED`
//! (default: the clock) replays a run.

mod common;
mod homes;

use std::collections::HashMap;
use std::fs;
use std::process::{Command, Stdio};

use common::{Env, Rng};
use homes::json_lines;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Fold,
    Gc,
    GcAggressive,
    Repack,
    RepackAggressive,
    Unpack,
    UnpackTo,
    Seeds,
    Sync,
    RmOther,
    RestoreAll,
}

const OPS: [Op; 11] = [
    Op::Fold,
    Op::Gc,
    Op::GcAggressive,
    Op::Repack,
    Op::RepackAggressive,
    Op::Unpack,
    Op::UnpackTo,
    Op::Seeds,
    Op::Sync,
    Op::RmOther,
    Op::RestoreAll,
];

struct World {
    env: Env,
    /// Each session's bytes, by id: what its source holds (no source is changed or removed here).
    sources: HashMap<String, Vec<u8>>,
    ids: Vec<String>,
    rng: Rng,
    copies: u32,
    steps: Vec<String>,
}

impl World {
    fn new(seed: u64) -> Self {
        let mut env = Env::new();
        let homes = homes::build(&mut env, homes::sets().remove(0));
        let sources: HashMap<String, Vec<u8>> = homes
            .sessions
            .iter()
            .map(|s| (s.id.clone(), s.bytes.clone()))
            .collect();
        let mut ids: Vec<String> = sources.keys().cloned().collect();
        ids.sort();
        let remote = env.path("remote.git");
        let ok = Command::new("git")
            .args(["init", "--bare", "--quiet"])
            .arg(&remote)
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git init --bare");
        env.run("ctxfold", ["fold", "--apply"]).ok();
        env.run(
            "ctxfold",
            ["remote", "add", "origin", remote.to_str().unwrap()],
        )
        .ok();
        Self {
            env,
            sources,
            ids,
            rng: Rng::new(seed),
            copies: 0,
            steps: Vec::new(),
        }
    }

    fn args(&mut self, op: Op) -> Vec<String> {
        let args: Vec<&str> = match op {
            Op::Fold => vec!["fold", "--apply"],
            Op::Gc => vec!["gc", "--apply", "--prune=now"],
            Op::GcAggressive => vec!["gc", "--apply", "--prune=now", "--aggressive"],
            Op::Repack => vec!["repack"],
            Op::RepackAggressive => vec!["repack", "--aggressive"],
            Op::Unpack => vec!["unpack"],
            Op::Seeds => vec!["seeds"],
            Op::Sync => vec!["sync"],
            Op::RestoreAll => vec!["restore", "--all"],
            Op::UnpackTo => {
                self.copies += 1;
                let to = self.env.path(&format!("copy-{}", self.copies));
                return vec!["unpack".into(), "--to".into(), to.display().to_string()];
            }
            Op::RmOther => {
                let id = self.ids[self.rng.below(self.ids.len() as u64) as usize].clone();
                return vec!["rm".into(), "--apply".into(), id];
            }
        };
        args.into_iter().map(String::from).collect()
    }

    /// Run `op` `times` times in a row, checking the store after each run.
    fn step(&mut self, op: Op, times: u32) {
        for nth in 1..=times {
            let args = self.args(op);
            self.steps.push(args.join(" "));
            let run = self.env.run("ctxfold", &args);
            // An rm of a session rm took out already finds nothing to take: said, status 1.
            let gone = op == Op::RmOther
                && run.code == Some(1)
                && run.stderr.contains("no folded session");
            if gone {
                self.check();
                continue;
            }
            assert_eq!(
                run.code,
                Some(0),
                "{op:?} (run {nth} of {times}) failed: {}\nsteps: {:#?}",
                run.stderr,
                self.steps
            );
            self.check();
        }
    }

    /// fsck --full finds nothing, every session held restores to its source's bytes, and what an
    /// rm took out is the only thing missing.
    fn check(&self) {
        let fsck = self.env.run("ctxfold", ["fsck", "--full"]);
        assert_eq!(
            fsck.code,
            Some(0),
            "fsck --full after {:#?}:\n{}",
            self.steps,
            fsck.stdout_text()
        );
        assert!(
            fsck.stdout_text().contains("\n0 problems")
                || fsck.stdout_text().starts_with("0 problems"),
            "{}",
            fsck.stdout_text()
        );
        let listed = json_lines(&self.env.run("ctxfold", ["ls", "--json"]).ok().stdout);
        assert!(
            !listed.is_empty(),
            "the store lost every session: {:#?}",
            self.steps
        );
        for line in listed {
            let id = line["id"].as_str().unwrap();
            let run = self.env.run("ctxfold-cat-manifest", [id]);
            assert!(
                run.code == Some(0) && run.stdout == self.sources[id],
                "{id} does not restore byte for byte after {:#?}: {}",
                self.steps,
                run.stderr
            );
        }
    }
}

#[test]
fn every_mutating_command_is_safe_to_repeat_in_any_order() {
    let steps = common::setting("CTXFOLD_REPEAT_STEPS", 24);
    let seed = common::seed("CTXFOLD_REPEAT_SEED");
    let mut world = World::new(seed);
    // Each command three times running, on the store the one before it left: packed, unpacked,
    // packed aggressively, and back.
    for op in OPS {
        world.step(op, 3);
    }
    // The cron case: an aggressive gc on a store an aggressive gc left, after an unpack and a
    // repack.
    for op in [
        Op::Unpack,
        Op::Repack,
        Op::Repack,
        Op::GcAggressive,
        Op::GcAggressive,
    ] {
        world.step(op, 1);
    }
    for _ in 0..steps {
        let op = OPS[world.rng.below(OPS.len() as u64) as usize];
        let times = 1 + world.rng.below(3) as u32;
        world.step(op, times);
    }
    // What rm took out, fold brings back; every session is held and whole at the end.
    world.step(Op::Fold, 1);
    let held = json_lines(&world.env.run("ctxfold", ["ls", "--json"]).ok().stdout).len();
    assert_eq!(held, world.ids.len(), "{:#?}", world.steps);
}

#[test]
fn a_repack_of_a_packed_store_keeps_its_pack_and_says_so() {
    let env = Env::new();
    let session = common::own_fixture(common::own::CODEX_AGENT_WORK);
    let bytes = fs::read(&session).unwrap();
    env.run("ctxfold", ["fold", "--apply", session.to_str().unwrap()])
        .ok();
    let packs = |env: &Env| -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(env.store.join("packs-ctxfold"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = packs(&env);
    assert_eq!(before.len(), 2, "{before:?}");
    let run = env.run("ctxfold", ["repack"]).ok();
    assert!(
        run.stdout_text().starts_with("already packed: pack "),
        "{}",
        run.stdout_text()
    );
    assert_eq!(packs(&env), before);
    let id = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let restored = env.run("ctxfold-cat-manifest", [&id]).ok();
    assert!(restored.stdout == bytes);
    // gc --aggressive twice: the second finds the first's pack as it would write it.
    env.run("ctxfold", ["gc", "--apply", "--aggressive"]).ok();
    let aggressive = packs(&env);
    let run = env.run("ctxfold", ["gc", "--apply", "--aggressive"]).ok();
    assert!(
        run.stdout_text().contains("was packed so already"),
        "{}",
        run.stdout_text()
    );
    assert_eq!(packs(&env), aggressive);
    env.run("ctxfold", ["fsck", "--full"]).ok();
    assert!(env.run("ctxfold-cat-manifest", [&id]).ok().stdout == bytes);
    // Counts read as English: one pack is a pack.
    let run = env.run("ctxfold", ["unpack"]).ok();
    assert!(
        run.stdout_text()
            .ends_with(" objects (0 loose already); removed 1 pack\n"),
        "{}",
        run.stdout_text()
    );
    let run = env.run("ctxfold", ["repack"]).ok();
    assert!(
        run.stdout_text().starts_with("repacked 0 packs and "),
        "{}",
        run.stdout_text()
    );
}

/// A repack killed between putting its pack in place and its index leaves the pack without an
/// index, its sources still there. The next gc removes such leftovers and repacks the same
/// sources into the very same pack: it once removed that pack after writing it (the leftover's
/// name), and every session with it.
#[test]
fn a_gc_after_a_repack_killed_before_its_index_keeps_the_pack_it_writes() {
    let env = Env::new();
    let session = common::own_fixture(common::own::CODEX_AGENT_WORK);
    let bytes = fs::read(&session).unwrap();
    env.run("ctxfold", ["fold", "--apply", session.to_str().unwrap()])
        .ok();
    // One pack of every object, the manifest's body with them, as the gc below writes it again.
    let gc = ["gc", "--apply", "--prune=now", "--aggressive"];
    env.run("ctxfold", gc).ok();
    let packs = env.store.join("packs-ctxfold");
    let pack = fs::read_dir(&packs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pack"))
        .unwrap();
    let pack_bytes = fs::read(&pack).unwrap();
    env.run("ctxfold", ["unpack"]).ok();
    assert!(!pack.exists());
    // The killed repack's pack, in place without its index; its loose sources still there.
    fs::write(&pack, &pack_bytes).unwrap();
    let run = env.run("ctxfold", gc).ok();
    assert!(
        run.stdout_text()
            .contains(&format!("removed temp file {}", pack.display())),
        "{}",
        run.stdout_text()
    );
    assert!(pack.exists() && pack.with_extension("idx").exists());
    env.run("ctxfold", ["fsck", "--full"]).ok();
    let id = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(env.run("ctxfold-cat-manifest", [&id]).ok().stdout == bytes);
}
