//! `ctxfold restore` when things go wrong around it: a killed restore's temp file, a full disk.

mod common;
mod homes;

use std::fs::{self, File};
use std::process::Command;

use common::Env;

#[test]
fn a_killed_restores_temp_file_goes_at_the_next_restore_and_fsck_names_it() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply", "--remove-source"])
        .ok();
    let placed = homes.archived().find(|s| s.path == s.rollout_path).unwrap();
    assert!(!placed.path.exists());
    let dir = placed.rollout_path.parent().unwrap();
    let name = placed.rollout_path.file_name().unwrap().to_str().unwrap();
    // What a restore killed half-way leaves: its temp file, half written, locked by nobody.
    let dead = dir.join(format!(".{name}.restore-Ab12Cd.tmp"));
    fs::write(&dead, &placed.bytes[..placed.bytes.len() / 2]).unwrap();
    // And one a running restore of the same target is writing (it holds the lock).
    let live = dir.join(format!(".{name}.restore-Zz98Yx.tmp"));
    fs::write(&live, b"being written").unwrap();
    let held = File::open(&live).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();

    let run = env.run("ctxfold", ["fsck"]).ok();
    let text = run.stdout_text();
    assert!(
        text.contains(&format!("leftover restore temp file {}", dead.display()))
            && !text.contains(&live.display().to_string()),
        "{text}"
    );
    assert!(text.contains(", 1 leftover restore temp files;"), "{text}");

    let run = env
        .run(
            "ctxfold",
            [
                "restore",
                &placed.id,
                "--to",
                placed.rollout_path.to_str().unwrap(),
            ],
        )
        .ok();
    assert!(
        run.stderr.contains(&format!(
            "removed {}, left by an interrupted restore",
            dead.display()
        )),
        "{}",
        run.stderr
    );
    assert!(!dead.exists() && live.exists());
    assert!(fs::read(&placed.rollout_path).unwrap() == placed.bytes);
    let text = env.run("ctxfold", ["fsck"]).ok().stdout_text();
    assert!(!text.contains("leftover"), "{text}");
    drop(held);
}

/// Run `script` with `sh` in a private mount namespace (a tmpfs mounted there is seen by nobody
/// else and goes with it), or `None` where this machine does not allow one.
fn in_mount_namespace(env: &Env, script: &str) -> Option<std::process::Output> {
    let probe = Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"])
        .output()
        .ok()?;
    if !probe.status.success() {
        return None;
    }
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", script])
        .env("CTXFOLD_STORE", &env.store)
        .output()
        .unwrap();
    Some(out)
}

#[test]
fn a_restore_onto_a_full_disk_names_the_target() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let placed = homes.sessions.iter().max_by_key(|s| s.bytes.len()).unwrap();
    let full = env.path("full");
    fs::create_dir_all(&full).unwrap();
    let target = full.join("restored.jsonl");
    let script = format!(
        "mount -t tmpfs -o size=64k tmpfs {dir} && exec {bin} restore {id} --to {target}",
        dir = full.display(),
        bin = common::bin_dir().join("ctxfold").display(),
        id = placed.id,
        target = target.display(),
    );
    let Some(out) = in_mount_namespace(&env, &script) else {
        eprintln!("skipped: this machine does not let a test mount a tmpfs (unshare -m)");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    // Whichever write finds the disk full, the message names the target, not stdout.
    assert!(
        stderr.contains(&format!("{}: No space left on device", target.display())),
        "{stderr}"
    );
}
