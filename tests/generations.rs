//! Generations: a grown session folds without --overwrite, a changed one only with it, and the
//! version either replaces is kept (manifests/generations/) until an explicit prune, restorable as
//! ID@N.

mod common;
mod homes;

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;

use common::Env;
use homes::{Homes, Placed, json_lines};

fn setup() -> (Env, Homes, Placed) {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // The largest active Codex rollout.
    let placed = homes
        .active()
        .filter(|s| s.path.to_str().unwrap().contains("/rollout-"))
        .max_by_key(|s| s.bytes.len())
        .unwrap()
        .clone();
    (env, homes, placed)
}

fn restored(env: &Env, spec: &[&str], name: &str) -> Vec<u8> {
    let to = env.path(name);
    let mut args = vec!["restore"];
    args.extend_from_slice(spec);
    args.extend_from_slice(&["--to", to.to_str().unwrap()]);
    env.run("ctxfold", &args).ok();
    fs::read(&to).unwrap()
}

fn append(path: &std::path::Path, turn: usize) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(
            format!("{{\"type\":\"event_msg\",\"payload\":{{\"turn\":{turn}}}}}\n").as_bytes(),
        )
        .unwrap();
}

#[test]
fn overwriting_a_changed_session_keeps_the_original_through_gc() {
    let (env, _homes, placed) = setup();
    let path = placed.path.to_str().unwrap();
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    // Truncated to half, and edited.
    let mut damaged = placed.bytes[..placed.bytes.len() / 2].to_vec();
    damaged.extend_from_slice(b"{\"edited\":true}\n");
    fs::write(&placed.path, &damaged).unwrap();
    let status = json_lines(&env.run("ctxfold", ["status", "--json", path]).ok().stdout);
    assert_eq!(status[0]["state"], "changed");

    // Refused without --overwrite, with a line that says how, and nothing changes in the store.
    let manifests = Env::snapshot(&env.store.join("manifests"));
    let run = env.run("ctxfold", ["fold", "--apply", path]).fails(3);
    let line = run.stdout_text().lines().next().unwrap().to_string();
    assert!(
        line.starts_with("changed    refused") && line.contains("--overwrite folds it"),
        "{line}"
    );
    assert!(
        run.stderr.contains(
            "1 session changed other than by an append since folded: \
             'ctxfold diff ID' shows how; --overwrite folds again"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(Env::snapshot(&env.store.join("manifests")), manifests);

    let run = env
        .run(
            "ctxfold",
            ["fold", "--apply", "--overwrite", "--json", path],
        )
        .ok();
    let report = &json_lines(&run.stdout)[0];
    assert_eq!(report["state"], "changed");
    assert_eq!(report["action"], "fold");
    let kept = report["kept"].as_str().unwrap();
    assert!(
        kept.starts_with(&format!("manifests/generations/{}/", placed.id))
            && kept.contains("-changed-"),
        "{kept}"
    );

    // gc keeps every object the kept version needs, and the original comes back byte for byte.
    env.run("ctxfold", ["gc", "--apply", "--prune=now"]).ok();
    let fsck = env.run("ctxfold", ["fsck", "--full"]).ok().stdout_text();
    assert!(fsck.starts_with("0 problems, 0 unreferenced"), "{fsck}");
    assert!(restored(&env, &[&format!("{}@1", placed.id)], "a") == placed.bytes);
    assert!(restored(&env, &[&placed.id, "--generation", "1"], "b") == placed.bytes);
    assert!(restored(&env, &[&placed.id], "c") == damaged);
    assert!(restored(&env, &[&format!("{}@0", placed.id)], "d") == damaged);
    env.run(
        "ctxfold",
        ["restore", &format!("{}@2", placed.id), "--to", "x"],
    )
    .fails(1)
    .one_line_error("has 1 kept generations");

    // ls and status say so.
    let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
    let entry = listed
        .iter()
        .find(|l| l["id"] == placed.id.as_str())
        .unwrap();
    assert_eq!(entry["generations"], 1);
    let human = env
        .run("ctxfold", ["ls", "--generations"])
        .ok()
        .stdout_text();
    assert!(human.contains("[1 generation]"), "{human}");
    assert!(
        human.contains(&format!("  {}@1", placed.id)) && human.contains("changed since"),
        "{human}"
    );
    let status = json_lines(&env.run("ctxfold", ["status", "--json", path]).ok().stdout);
    assert_eq!(status[0]["state"], "up_to_date");
    assert_eq!(status[0]["generations"], 1);
    let human = env
        .run("ctxfold", ["status", "-v", path])
        .ok()
        .stdout_text();
    assert!(human.starts_with("up to date  "), "{human}");

    // Only an explicit prune removes it, and then its objects.
    let run = env
        .run("ctxfold", ["gc", "--prune-generations", "--prune=now"])
        .ok();
    assert!(
        run.stdout_text()
            .contains(&format!("would remove generation {}@1 (kept ", placed.id)),
        "{}",
        run.stdout_text()
    );
    let summary = run.stdout_text().lines().last().unwrap().to_string();
    assert!(
        !summary.starts_with("would remove 0 unreferenced objects"),
        "{summary}"
    );
    env.run(
        "ctxfold",
        ["gc", "--apply", "--prune=now", "--prune-generations"],
    )
    .ok();
    assert!(
        !env.store
            .join("manifests/generations")
            .join(&placed.id)
            .exists()
    );
    env.run(
        "ctxfold",
        ["restore", &format!("{}@1", placed.id), "--to", "y"],
    )
    .fails(1);
    let fsck = env.run("ctxfold", ["fsck", "--full"]).ok().stdout_text();
    assert!(fsck.starts_with("0 problems, 0 unreferenced"), "{fsck}");
    assert!(restored(&env, &[&placed.id], "e") == damaged);
}

/// The newest generation file of session `id` in `store`.
fn newest_generation(store: &std::path::Path, id: &str) -> std::path::PathBuf {
    let dir = store.join("manifests/generations").join(id);
    let names = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name());
    dir.join(names.max().unwrap())
}

#[test]
fn a_grown_session_folds_without_overwrite_keeping_the_last_three() {
    let (env, _homes, placed) = setup();
    let path = placed.path.to_str().unwrap();
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    let mut versions = vec![placed.bytes.clone()];
    let manifest = env.store.join(format!("manifests/{}.json", placed.id));
    for turn in 0..5 {
        append(&placed.path, turn);
        versions.push(fs::read(&placed.path).unwrap());
        let replaced = (
            fs::read(&manifest).unwrap(),
            fs::metadata(&manifest).unwrap().ino(),
        );
        let run = env.run("ctxfold", ["fold", "--apply", path]).ok();
        let line = run.stdout_text();
        assert!(
            line.starts_with("grown      folded")
                && line.contains(&format!("kept as {}@1", placed.id)),
            "{line}"
        );
        // The generation is the replaced manifest's file itself, kept under its new name.
        let newest = newest_generation(&env.store, &placed.id);
        assert_eq!(fs::read(&newest).unwrap(), replaced.0);
        assert_eq!(fs::metadata(&newest).unwrap().ino(), replaced.1);
    }
    // Three grown generations are kept (each a prefix of the next, so dropping older ones loses
    // nothing): the three versions before the current one, newest first.
    let kept = json_lines(
        &env.run("ctxfold", ["ls", "--generations", "--json"])
            .ok()
            .stdout,
    );
    let kept: Vec<_> = kept.iter().filter(|l| l["generation"].is_u64()).collect();
    assert_eq!(kept.len(), 3, "{kept:?}");
    assert!(kept.iter().all(|k| k["reason"] == "grown"));
    for n in 1..=3 {
        let bytes = restored(&env, &[&format!("{}@{n}", placed.id)], &format!("v{n}"));
        assert!(bytes == versions[5 - n], "generation {n}");
    }
    assert!(restored(&env, &[&placed.id], "now") == versions[5]);
    // Folding the same bytes again keeps nothing more.
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    let run = env.run("ctxfold", ["ls"]).ok().stdout_text();
    assert!(run.contains("[3 generations]"), "{run}");
}

#[test]
fn a_dry_run_says_what_it_would_keep_and_keeps_nothing() {
    let (env, _homes, placed) = setup();
    let path = placed.path.to_str().unwrap();
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    append(&placed.path, 1);
    let before = Env::snapshot(&env.store);
    let run = env.run("ctxfold", ["fold", path]).ok();
    assert!(
        run.stdout_text().starts_with("grown      would fold")
            && run
                .stdout_text()
                .contains(&format!("would keep the folded version as {}@1", placed.id)),
        "{}",
        run.stdout_text()
    );
    assert_eq!(Env::snapshot(&env.store), before);
}
