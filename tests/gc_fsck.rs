//! `ctxfold fsck` and `ctxfold gc`, alone and beside folds running at the same moment.

mod common;
mod homes;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::Env;
use homes::{Homes, json_lines};

/// Run `test` over the homes of each fixture set, folded.
fn each_folded(test: impl Fn(Env, Homes)) {
    homes::each_set(|env, homes| {
        env.run("ctxfold", ["fold", "--apply"]).ok();
        test(env, homes);
    });
}

/// Every file objects live in: loose objects and packs.
fn object_files(store: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["objects", "packs-ctxfold"]
        .iter()
        .flat_map(|dir| Env::snapshot(&store.join(dir)))
        .map(|(p, _)| p)
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn writable(path: &Path) {
    let mut perms = fs::metadata(path).unwrap().permissions();
    perms.set_mode(0o600);
    fs::set_permissions(path, perms).unwrap();
}

fn some_object(env: &Env, id: &str, part: usize) -> (String, PathBuf) {
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(env.store.join(format!("manifests/{id}.json"))).unwrap())
            .unwrap();
    let sha = manifest["parts"][part]["object"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let path = env
        .store
        .join("objects")
        .join(&sha[..2])
        .join(format!("{sha}.zst"));
    (sha, path)
}

/// Take every session out of the store's manifests, loose or packed (by an earlier gc), leaving
/// their objects unreferenced.
fn unreference_all(env: &Env) {
    let manifests = env.store.join("manifests");
    for (path, _) in Env::snapshot(&manifests) {
        let top = path.parent() == Some(manifests.as_path());
        if top && path.is_file() && path.extension().is_some_and(|e| e == "json") {
            fs::remove_file(path).unwrap();
        }
    }
    let _ = fs::remove_file(manifests.join("packed.json"));
}

fn every_session_restores(env: &Env, homes: &Homes) {
    for placed in &homes.sessions {
        let run = env.run("ctxfold-cat-manifest", [&placed.id]).ok();
        assert!(run.stdout == placed.bytes, "{} differs", placed.id);
    }
}

#[test]
fn fsck_finds_a_flipped_bit_a_deleted_object_and_a_truncated_manifest() {
    each_folded(fsck_finds_a_flipped_bit_a_deleted_object_and_a_truncated_manifest_in);
}

fn fsck_finds_a_flipped_bit_a_deleted_object_and_a_truncated_manifest_in(env: Env, homes: Homes) {
    let run = env.run("ctxfold", ["fsck", "--full"]).ok();
    assert!(
        run.stdout_text()
            .starts_with("0 problems, 0 unreferenced objects"),
        "{}",
        run.stdout_text()
    );
    assert_eq!(run.stdout_text().lines().count(), 1);
    let lines = json_lines(&env.run("ctxfold", ["fsck", "--json"]).ok().stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0],
        serde_json::json!({"type": "summary", "problems": 0, "unreferenced_objects": 0,
            "unplaced_manifests": 0, "leftover_restore_temps": 0, "leftover_temp_folders": 0,
            "full": false})
    );

    // Loose objects, to damage one at a time (packs have their own tests in corruption.rs).
    env.run("ctxfold", ["unpack"]).ok();
    let (flipped, path) = some_object(&env, &homes.sessions[3].id, 1);
    writable(&path);
    let mut bytes = fs::read(&path).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    fs::write(&path, bytes).unwrap();
    env.run("ctxfold", ["fsck"]).ok();
    let run = env.run("ctxfold", ["fsck", "--full"]).fails(4);
    assert!(
        run.stdout_text()
            .contains(&format!("corrupt object {flipped}")),
        "{}",
        run.stdout_text()
    );
    // As JSON Lines: the finding, typed, then the summary; the same exit status.
    let run = env.run("ctxfold", ["fsck", "--full", "--json"]).fails(4);
    let lines = json_lines(&run.stdout);
    let corrupt: Vec<_> = lines
        .iter()
        .filter(|l| l["type"] == "corrupt_object")
        .collect();
    assert!(
        !corrupt.is_empty() && corrupt.iter().all(|l| l["why"].is_string()),
        "{lines:?}"
    );
    assert!(corrupt.iter().any(|l| l["sha256"] == flipped.as_str()));
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["full"], true);
    assert_eq!(
        summary["problems"],
        lines.len()
            - 1
            - lines
                .iter()
                .filter(|l| l["type"] == "unreferenced_object")
                .count()
    );

    let (deleted, path) = some_object(&env, &homes.sessions[4].id, 0);
    fs::remove_file(&path).unwrap();
    let run = env.run("ctxfold", ["fsck"]).fails(4);
    assert!(
        run.stdout_text()
            .contains(&format!("missing object {deleted}")),
        "{}",
        run.stdout_text()
    );

    let manifest = env
        .store
        .join(format!("manifests/{}.json", homes.sessions[0].id));
    writable(&manifest);
    let text = fs::read(&manifest).unwrap();
    fs::write(&manifest, &text[..text.len() / 2]).unwrap();
    let run = env.run("ctxfold", ["fsck"]).fails(4);
    assert!(
        run.stdout_text()
            .contains(&format!("bad manifest {}", manifest.display())),
        "{}",
        run.stdout_text()
    );
    // --json lists every unreferenced object too (scripts count them), and the same faults.
    let lines = json_lines(&env.run("ctxfold", ["fsck", "--json"]).fails(4).stdout);
    let summary = lines.last().unwrap();
    let unreferenced = lines
        .iter()
        .filter(|l| l["type"] == "unreferenced_object")
        .count();
    assert!(unreferenced > 0);
    assert_eq!(summary["unreferenced_objects"], unreferenced);
    let bad = lines.iter().find(|l| l["type"] == "bad_manifest").unwrap();
    assert_eq!(bad["path"], manifest.to_str().unwrap());
    let missing = lines
        .iter()
        .find(|l| l["type"] == "missing_object")
        .unwrap();
    assert_eq!(missing["sha256"], deleted.as_str());
    // The truncated manifest's objects are now unreferenced: a note, one line for them all…
    assert!(
        !run.stdout_text().contains("unreferenced object "),
        "{}",
        run.stdout_text()
    );
    let summary = run.stdout_text().lines().last().unwrap().to_string();
    assert!(
        summary.contains("unreferenced objects (gc removes them, -v lists them)")
            && !summary.starts_with("3 problems, 0 "),
        "{summary}"
    );
    // …and the list with -v.
    let run = env.run("ctxfold", ["fsck", "-v"]).fails(4);
    assert!(
        run.stdout_text().contains("unreferenced object "),
        "{}",
        run.stdout_text()
    );
    let faults = |run: &common::Run| {
        run.stdout_text()
            .lines()
            .filter(|l| !l.starts_with("unreferenced") && !l.contains(" problems, "))
            .count()
    };
    assert_eq!(faults(&run), 2, "{}", run.stdout_text());
    let run = env.run("ctxfold", ["fsck", "--full"]).fails(4);
    assert_eq!(faults(&run), 3, "{}", run.stdout_text());
    assert!(
        run.stdout_text()
            .contains(&format!("corrupt object {flipped}")),
        "{}",
        run.stdout_text()
    );
}

#[test]
fn gc_removes_exactly_the_unreferenced_objects() {
    each_folded(gc_removes_exactly_the_unreferenced_objects_in);
}

fn gc_removes_exactly_the_unreferenced_objects_in(env: Env, homes: Homes) {
    // Packs what fold left loose (the seed batch the extension's index became).
    env.run("ctxfold", ["gc", "--apply"]).ok();
    let referenced = object_files(&env.store);
    let junk = env.path("junk");
    fs::write(&junk, b"nobody names me").unwrap();
    let run = env
        .run("ctxfold-hash-object", ["-w", junk.to_str().unwrap()])
        .ok();
    let orphan = run.stdout_text().trim().to_string();
    let orphan_path = env
        .store
        .join("objects")
        .join(&orphan[..2])
        .join(format!("{orphan}.zst"));
    assert!(orphan_path.exists());
    let stale_temp = env.store.join("tmp/.object-abandoned.tmp");
    fs::write(&stale_temp, b"half").unwrap();
    fs::File::options()
        .write(true)
        .open(&stale_temp)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(7200))
        .unwrap();
    let fresh_temp = env.store.join("tmp/.object-in-use.tmp");
    fs::write(&fresh_temp, b"busy").unwrap();

    // A dry run lists, and removes nothing.
    let before = Env::snapshot(&env.store);
    let run = env.run("ctxfold", ["gc"]).ok();
    assert!(
        run.stdout_text().contains("temp file"),
        "{}",
        run.stdout_text()
    );
    assert!(
        run.stdout_text()
            .contains("; 1 unreferenced object younger than --prune kept"),
        "{}",
        run.stdout_text()
    );
    // The summary says what it would do first, as each line before it does.
    assert!(
        run.stdout_text().lines().last().unwrap().starts_with(
            "would remove 0 unreferenced objects, 1 temp file, 0 generations; would repack 0 packs and "
        ),
        "{}",
        run.stdout_text()
    );
    assert_eq!(Env::snapshot(&env.store), before);
    // The same as JSON Lines: what would go, then the summary.
    let lines = json_lines(&env.run("ctxfold", ["gc", "--json"]).ok().stdout);
    let temps: Vec<_> = lines.iter().filter(|l| l["type"] == "temp_file").collect();
    assert_eq!(temps.len(), 1, "{lines:?}");
    assert_eq!(temps[0]["path"], stale_temp.to_str().unwrap());
    assert_eq!(temps[0]["action"], "would_remove");
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["applied"], false);
    assert_eq!(
        (
            &summary["objects"],
            &summary["temp_files"],
            &summary["young_objects_kept"]
        ),
        (&0.into(), &1.into(), &1.into())
    );
    assert!(summary["referenced_objects"].as_u64().unwrap() > 0);
    assert_eq!(Env::snapshot(&env.store), before);
    // Within the grace period the orphan stays; the stale temp file goes.
    env.run("ctxfold", ["gc", "--apply"]).ok();
    assert!(orphan_path.exists());
    assert!(!stale_temp.exists() && fresh_temp.exists());
    // With --prune=now exactly the orphan goes, and --json says so.
    let run = env
        .run("ctxfold", ["gc", "--apply", "--prune=now", "--json"])
        .ok();
    let lines = json_lines(&run.stdout);
    let removed: Vec<_> = lines.iter().filter(|l| l["type"] == "object").collect();
    assert_eq!(removed.len(), 1, "{lines:?}");
    assert_eq!(removed[0]["sha256"], orphan.as_str());
    assert_eq!(removed[0]["action"], "removed");
    let summary = lines.last().unwrap();
    assert_eq!(
        (&summary["applied"], &summary["objects"]),
        (&true.into(), &1.into())
    );
    // The sessions' objects were packed by the gc before: no pack is written this time.
    assert!(summary["pack"].is_null(), "{summary}");
    assert!(!orphan_path.exists());
    assert_eq!(object_files(&env.store), referenced);
    env.run("ctxfold", ["fsck", "--full"]).ok();
    every_session_restores(&env, &homes);
}

#[test]
fn gc_removes_nothing_while_a_manifest_is_unreadable() {
    each_folded(gc_removes_nothing_while_a_manifest_is_unreadable_in);
}

fn gc_removes_nothing_while_a_manifest_is_unreadable_in(env: Env, homes: Homes) {
    let manifest = env.store.join(format!(
        "manifests/generations/{}.json",
        homes.sessions[1].id
    ));
    fs::create_dir_all(manifest.parent().unwrap()).unwrap();
    fs::write(&manifest, b"{\"version\":1,").unwrap();
    // Make every object of one session unreferenced by the readable manifests.
    fs::remove_file(
        env.store
            .join(format!("manifests/{}.json", homes.sessions[1].id)),
    )
    .unwrap();
    let before = object_files(&env.store);
    let run = env
        .run("ctxfold", ["gc", "--apply", "--prune=now"])
        .fails(4);
    assert!(
        run.stderr
            .contains("gc removes nothing while a manifest is unreadable"),
        "{}",
        run.stderr
    );
    assert_eq!(object_files(&env.store), before);
}

#[test]
fn seed_batches_are_roots_and_fsck_names_a_bad_catalog_line_and_a_missing_batch() {
    each_folded(seed_batches_are_roots_and_fsck_names_a_bad_catalog_line_and_a_missing_batch_in);
}

fn seed_batches_are_roots_and_fsck_names_a_bad_catalog_line_and_a_missing_batch_in(
    env: Env,
    homes: Homes,
) {
    let indexes = |env: &Env| -> Vec<String> {
        homes
            .sessions
            .iter()
            .map(|s| env.stored_seed_index(&env.store, &s.id))
            .collect()
    };
    let before = indexes(&env);
    assert!(before.iter().any(|i| !i.is_empty()));
    env.run("ctxfold", ["gc", "--apply", "--prune=now", "--aggressive"])
        .ok();
    assert_eq!(indexes(&env), before, "gc keeps every seed batch");
    let stats = env.run("ctxfold", ["stats", "--json"]).ok();
    let stats = &json_lines(&stats.stdout)[0];
    assert_eq!(stats["unreferenced_objects"], 0, "{stats}");
    let raw: usize = before.iter().map(String::len).sum();
    assert_eq!(stats["seed_index_bytes"], raw, "{stats}");

    let catalog = env.store.join("seeds/catalog.jsonl");
    let good = fs::read_to_string(&catalog).unwrap();
    let lines = good.lines().count();
    fs::write(&catalog, format!("{good}{{\"session\":\"x\"}}\n")).unwrap();
    let run = env.run("ctxfold", ["fsck"]).fails(4);
    assert!(
        run.stdout_text().contains(&format!(
            "bad seed catalog line seeds/catalog.jsonl:{}: ",
            lines + 1
        )),
        "{}",
        run.stdout_text()
    );
    let objects = object_files(&env.store);
    env.run("ctxfold", ["gc", "--apply", "--prune=now"])
        .fails(4)
        .one_line_error("gc removes nothing while a catalog line is unreadable");
    assert_eq!(object_files(&env.store), objects);

    let zeros = "0".repeat(64);
    let missing = format!(
        "{{\"session\":\"{}\",\"object\":\"{zeros}\",\"bytes\":9}}\n",
        homes.sessions[0].id
    );
    fs::write(&catalog, format!("{good}{missing}")).unwrap();
    let run = env.run("ctxfold", ["fsck"]).fails(4);
    assert!(
        run.stdout_text().contains(&format!(
            "missing object {zeros} (named by {})",
            catalog.display()
        )),
        "{}",
        run.stdout_text()
    );
    // Reading that session's index names what is wrong, in one line.
    env.run(
        "ctxfold-read-seeds",
        ["--session", homes.sessions[0].id.as_str()],
    )
    .fails(4)
    .one_line_error(&zeros);
}

/// Run the commands at once, each started `delay` after the one before; all must succeed.
/// (The delay varies the interleaving; nothing asserts on time.)
fn at_once(env: &Env, commands: &[&[&str]], delay: Duration) {
    let mut children = Vec::new();
    for (at, args) in commands.iter().enumerate() {
        if at > 0 {
            std::thread::sleep(delay);
        }
        let mut cmd = env.command("ctxfold");
        cmd.args(*args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        children.push((cmd.spawn().unwrap(), args));
    }
    for (child, args) in children {
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{args:?} failed:\n{stdout}{stderr}");
    }
}

#[test]
fn two_folds_at_once_leave_a_sound_store() {
    for _ in 0..3 {
        homes::each_set(|env, homes| {
            at_once(
                &env,
                &[&["fold", "--apply"], &["fold", "--apply"]],
                Duration::ZERO,
            );
            env.run("ctxfold", ["fsck", "--full"]).ok();
            every_session_restores(&env, &homes);
        });
    }
}

#[test]
fn two_folds_and_a_gc_aggressive_at_once_leave_a_sound_store() {
    for round in 0..3 {
        homes::each_set(|env, homes| {
            // A first fold, so that gc --aggressive has packs to rewrite while the others fold.
            env.run(
                "ctxfold",
                ["fold", "--apply", homes.sessions[0].path.to_str().unwrap()],
            )
            .ok();
            at_once(
                &env,
                &[
                    &["gc", "--apply", "--prune=now", "--aggressive"],
                    &["fold", "--apply"],
                    &["fold", "--apply"],
                ],
                Duration::from_millis(50 * round),
            );
            env.run("ctxfold", ["fsck", "--full"]).ok();
            every_session_restores(&env, &homes);
        });
    }
}

#[test]
fn gc_beside_a_fold_leaves_a_sound_store() {
    each_folded(gc_beside_a_fold_leaves_a_sound_store_in);
}

fn gc_beside_a_fold_leaves_a_sound_store_in(env: Env, homes: Homes) {
    for round in 0..6 {
        // Unreference everything: the fold that follows reuses the very objects gc wants to remove.
        unreference_all(&env);
        at_once(
            &env,
            &[&["fold", "--apply"], &["gc", "--apply", "--prune=now"]],
            Duration::from_millis(150 * round),
        );
        let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
        assert_eq!(listed.len(), homes.sessions.len());
        env.run("ctxfold", ["fsck", "--full"]).ok();
        every_session_restores(&env, &homes);
    }
}

#[test]
fn a_gc_started_between_a_folds_writes_and_its_commit_waits_for_it() {
    each_folded(a_gc_started_between_a_folds_writes_and_its_commit_waits_for_it_in);
}

fn a_gc_started_between_a_folds_writes_and_its_commit_waits_for_it_in(mut env: Env, homes: Homes) {
    unreference_all(&env);
    // Once the first session's objects are written (reused: they are all there, unreferenced),
    // start a gc that would remove every one of them, and go on only once it waits for the lock
    // (or, were the lock not taken, once it has finished).
    let marker = env.path("gc-started");
    let log = env.path("gc.log");
    let gc = common::bin_dir().join("ctxfold");
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        format!(
            "[ -e '{m}' ] || {{ touch '{m}'; '{gc}' gc --apply --prune=now > '{l}' 2>&1 & \
             i=0; while ! grep -q -e waiting -e referenced '{l}' 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; }}",
            m = marker.display(),
            gc = gc.display(),
            l = log.display()
        ),
    );
    env.run("ctxfold", ["fold", "--apply"]).ok();
    assert!(marker.exists());
    // The gc ran after the fold released the lock; wait for it to finish.
    let mut tries = 0;
    while !fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("objects referenced")
    {
        tries += 1;
        assert!(
            tries < 600,
            "gc never finished: {}",
            fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let gc_log = fs::read_to_string(&log).unwrap();
    assert!(gc_log.contains("waiting for running folds"), "{gc_log}");
    env.run("ctxfold", ["fsck", "--full"]).ok();
    every_session_restores(&env, &homes);
}

/// A sync killed in its merge leaves its staging folder in `<store>/tmp/`: fsck names it, a dry
/// gc lists it, gc removes it once past the grace period (at once with --prune=now), and a sync
/// running holds the lock that keeps fsck and a dry gc from calling its folder a leftover.
#[test]
fn the_staging_folder_of_a_killed_sync_is_named_by_fsck_and_removed_by_gc() {
    let env = Env::new();
    let session = common::own_fixture(common::own::CODEX_AGENT_WORK);
    env.run("ctxfold", ["fold", "--apply", session.to_str().unwrap()])
        .ok();
    // What a sync killed in its merge leaves: objects and a pack being staged.
    let staging = env.store.join("tmp/.sync-Ab12Cd");
    fs::create_dir_all(staging.join("objects/ab")).unwrap();
    fs::create_dir_all(staging.join("packs-ctxfold")).unwrap();
    fs::write(staging.join("objects/ab/cd.zst"), vec![7u8; 3000]).unwrap();
    fs::write(staging.join("packs-ctxfold/half.pack"), vec![9u8; 1000]).unwrap();

    let text = env.run("ctxfold", ["fsck"]).ok().stdout_text();
    assert!(
        text.contains(&format!(
            "leftover temp folder {} (3.9 KiB; a killed sync's staging, gc --apply removes it)",
            staging.display()
        )) && text.contains(", 1 unplaced manifest, 1 leftover temp folder;"),
        "{text}"
    );
    let json = json_lines(&env.run("ctxfold", ["fsck", "--json"]).ok().stdout);
    assert!(
        json.iter()
            .any(|l| l["type"] == "leftover_temp_folder" && l["bytes"] == 4000)
    );
    assert_eq!(json.last().unwrap()["leftover_temp_folders"], 1);

    // Young: kept by the default grace period, listed by --prune=now's dry run.
    env.run("ctxfold", ["gc", "--apply"]).ok();
    assert!(staging.exists());
    let dry = env.run("ctxfold", ["gc", "--prune=now"]).ok().stdout_text();
    assert!(
        dry.contains(&format!("would remove temp folder {}", staging.display())),
        "{dry}"
    );
    assert!(staging.exists());
    env.run("ctxfold", ["gc", "--apply", "--prune=now"]).ok();
    assert!(!staging.exists());
    let text = env.run("ctxfold", ["fsck"]).ok().stdout_text();
    assert!(!text.contains("leftover"), "{text}");

    // While another ctxfold holds the store lock (a sync in its merge), its folder is no leftover.
    fs::create_dir_all(&staging).unwrap();
    let lock = fs::File::open(env.store.join("locks/objects.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockShared).unwrap();
    let text = env.run("ctxfold", ["fsck"]).ok().stdout_text();
    assert!(!text.contains("leftover"), "{text}");
    // Nor is it what a dry gc would remove, even with no grace period; it says why.
    let dry = env.run("ctxfold", ["gc", "--prune=now"]).ok();
    assert!(
        !dry.stdout_text().contains("temp folder"),
        "{}",
        dry.stdout_text()
    );
    assert!(
        dry.stderr
            .contains("another ctxfold holds the store (a fold or a sync running)"),
        "{}",
        dry.stderr
    );
    drop(lock);
    // Once that one is done, it is a leftover again.
    let dry = env.run("ctxfold", ["gc", "--prune=now"]).ok().stdout_text();
    assert!(
        dry.contains(&format!("would remove temp folder {}", staging.display())),
        "{dry}"
    );
}

/// `stats` run while folds write: the temp files they rename and the loose manifests their packing
/// removes, gone between stats' listing and its look at them, are not errors.
#[test]
fn stats_beside_folds_says_no_error() {
    let env = Env::new();
    let sessions = common::small_sessions(&env.path("sessions"), 300);
    let fold = |batch: &[PathBuf]| {
        let mut args = vec!["fold", "--apply", "-q"];
        args.extend(batch.iter().map(|p| p.to_str().unwrap()));
        env.run("ctxfold", args).ok();
    };
    fold(&sessions[..30]);
    let runs = std::thread::scope(|scope| {
        let folds = scope.spawn(|| {
            for batch in sessions[30..].chunks(30) {
                fold(batch);
            }
        });
        let mut runs = 0;
        while !folds.is_finished() {
            let run = env.run("ctxfold", ["stats"]);
            assert_eq!(run.code, Some(0), "{}", run.stderr);
            runs += 1;
        }
        folds.join().unwrap();
        runs
    });
    assert!(runs > 0);
    let listed = env.run("ctxfold", ["ls", "--json"]).ok().stdout_text();
    assert_eq!(listed.lines().count(), sessions.len());
}
