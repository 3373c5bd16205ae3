//! `ctxfold fold`, `restore`, `ls`, `status`, `stats` and `ctxfold-list-sessions` over fake Codex
//! and Pi homes built from each fixture set (the own fixtures, and the public ones when present).

mod common;
mod homes;

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;

use common::{Env, own, own_fixture};
use homes::{Homes, json_lines};

fn manifests(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = match fs::read_dir(env.store.join("manifests")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}

#[test]
fn list_sessions_finds_every_kind_with_its_fields() {
    homes::each_set(list_sessions_finds_every_kind_with_its_fields_in);
}

fn list_sessions_finds_every_kind_with_its_fields_in(env: Env, homes: Homes) {
    let run = env.run("ctxfold-list-sessions", [] as [&str; 0]).ok();
    let listed = json_lines(&run.stdout);
    assert_eq!(listed.len(), homes.sessions.len(), "{}", run.stdout_text());
    for placed in &homes.sessions {
        let entry = listed
            .iter()
            .find(|e| e["id"] == placed.id.as_str())
            .unwrap_or_else(|| panic!("{} not listed", placed.id));
        assert_eq!(entry["path"], placed.path.to_str().unwrap());
        assert_eq!(entry["rollout_path"], placed.rollout_path.to_str().unwrap());
        assert_eq!(entry["archived"], placed.archived);
        assert!(entry["cwd"].is_string(), "{entry}");
        assert!(entry["title"].is_string(), "{entry}");
    }
    // The shadowed .zst never appears; titles come from each source in its order of precedence.
    assert!(!run.stdout_text().contains(homes.shadowed.to_str().unwrap()));
    let title = |i: usize| {
        listed
            .iter()
            .find(|e| e["id"] == homes.sessions[i].id.as_str())
            .unwrap()["title"]
            .clone()
    };
    assert_eq!(title(2), "Indexed title");
    assert_eq!(title(3), "From the database");
    assert_eq!(title(0), homes.set.titles[0]);
    assert_eq!(title(5), homes.set.titles[1]);
    let agents: Vec<&str> = listed
        .iter()
        .map(|e| e["agent"].as_str().unwrap())
        .collect();
    assert_eq!(agents.iter().filter(|a| **a == "pi").count(), 2);
}

#[test]
fn a_dry_run_writes_nothing() {
    homes::each_set(a_dry_run_writes_nothing_in);
}

fn a_dry_run_writes_nothing_in(env: Env, homes: Homes) {
    // A copy of a rollout under another id: what it dedupes against the original counts as such.
    let original = &homes.sessions[3];
    let copy = homes.codex.join("sessions/2026/05/12/rollout-2026-05-12T00-00-00-00000000-0000-4000-8000-000000000001.jsonl");
    fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let text = String::from_utf8(original.bytes.clone()).unwrap();
    fs::write(
        &copy,
        text.replace(&original.id, "00000000-0000-4000-8000-000000000001"),
    )
    .unwrap();
    let before = Env::snapshot(env.dir.path());
    let run = env.run("ctxfold", ["fold"]).ok();
    assert!(
        run.stdout_text().contains("would fold"),
        "{}",
        run.stdout_text()
    );
    assert!(run.stderr.contains("dry run"), "{}", run.stderr);
    assert_eq!(
        Env::snapshot(env.dir.path()),
        before,
        "a dry run changed files"
    );
    assert!(!env.store.exists());

    // Its estimate is what folding then stores, dedupe between the sessions included.
    let estimate = json_lines(&env.run("ctxfold", ["fold", "--json"]).ok().stdout)
        .pop()
        .unwrap();
    let applied = json_lines(
        &env.run("ctxfold", ["fold", "--apply", "--json"])
            .ok()
            .stdout,
    )
    .pop()
    .unwrap();
    for key in ["new_raw_bytes", "new_objects", "dedup_raw_bytes"] {
        assert_eq!(estimate["total"][key], applied["total"][key], "{key}");
    }
    // Compressed sizes are estimated with blocks as a pack's are, not the same blocks.
    let stored = |run: &serde_json::Value| run["total"]["new_stored_bytes"].as_f64().unwrap();
    let (estimated, stored) = (stored(&estimate), stored(&applied));
    assert!(
        stored > 0.0 && (estimated - stored).abs() <= stored * 0.25,
        "estimated {estimated}, stored {stored}"
    );
    assert!(applied["total"]["dedup_raw_bytes"].as_u64().unwrap() > 0);

    // Against a store that exists, with a session grown since, too.
    let grown = homes.active().next().unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(&grown.path)
        .unwrap()
        .write_all(b"{\"more\":1}\n")
        .unwrap();
    let before = Env::snapshot(env.dir.path());
    let run = env
        .run(
            "ctxfold",
            [
                "fold",
                "--json",
                "--overwrite",
                "--remove-source",
                "--allow-active",
            ],
        )
        .ok();
    let lines = json_lines(&run.stdout);
    let total = &lines.last().unwrap()["total"];
    assert_eq!(total["fold"], 1, "{}", run.stdout_text());
    assert!(total["new_raw_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        Env::snapshot(env.dir.path()),
        before,
        "a dry run changed files"
    );
}

use std::io::Write;

#[test]
fn apply_then_restore_gives_every_file_back_byte_for_byte() {
    homes::each_set(apply_then_restore_gives_every_file_back_byte_for_byte_in);
}

fn apply_then_restore_gives_every_file_back_byte_for_byte_in(env: Env, homes: Homes) {
    let run = env.run("ctxfold", ["fold", "--apply", "--json"]).ok();
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.last().unwrap()["total"]["fold"], homes.sessions.len());
    assert_eq!(manifests(&env).len(), homes.sessions.len());
    for placed in &homes.sessions {
        let to = env.path(&format!("restored-{}", placed.id));
        env.run(
            "ctxfold",
            ["restore", &placed.id, "--to", to.to_str().unwrap()],
        )
        .ok();
        assert!(
            fs::read(&to).unwrap() == placed.bytes,
            "{} differs",
            placed.id
        );
        let manifest: serde_json::Value = serde_json::from_slice(
            &fs::read(env.store.join(format!("manifests/{}.json", placed.id))).unwrap(),
        )
        .unwrap();
        assert_eq!(
            manifest["session"]["rollout_path"],
            placed.rollout_path.to_str().unwrap()
        );
        assert_eq!(manifest["session"]["archived"], placed.archived);
    }
    // The .zst-only archive comes back as plain JSONL where Codex looks, by default.
    let packed = homes
        .sessions
        .iter()
        .find(|s| s.path != s.rollout_path)
        .unwrap();
    assert!(!packed.rollout_path.exists());
    env.run("ctxfold", ["restore", &packed.id]).ok();
    assert!(fs::read(&packed.rollout_path).unwrap() == packed.bytes);
    fs::remove_file(&packed.rollout_path).unwrap();

    // Folding again finds everything up to date and writes nothing new.
    let before = Env::snapshot(&env.store.join("manifests"));
    let run = env.run("ctxfold", ["fold", "--apply", "--json"]).ok();
    let total = &json_lines(&run.stdout).last().unwrap()["total"].clone();
    assert_eq!(
        total["up_to_date"],
        homes.sessions.len(),
        "{}",
        run.stdout_text()
    );
    assert_eq!(total["new_objects"], 0);
    assert_eq!(Env::snapshot(&env.store.join("manifests")), before);
    env.run("ctxfold", ["fsck", "--full"]).ok();

    // The seed index is carried into the store, and merged as a union when it grows.
    let stored = || env.stored_seed_index(&env.store, &homes.sessions[5].id);
    // The extension's lines, in its order, beside the records ctxfold extracted while folding.
    assert_eq!(
        foreign_lines(&stored()),
        fs::read_to_string(&homes.seed_index).unwrap()
    );
    assert!(stored().contains("\"harness\":\"ctxfold\""));
    // Nothing of it is left as a file: the store keeps it in objects the catalog lists.
    assert!(!env.store.join("context-fold").exists());
    // Unchanged, and the session's index unchanged since: not read again.
    let merged_already = |run: &common::Run| {
        run.stdout_text()
            .lines()
            .any(|l| l.contains(&homes.sessions[5].id) && l.contains("merged already from"))
    };
    let seeds = || Env::snapshot(&env.store.join("seeds"));
    let before = seeds();
    assert!(merged_already(
        &env.run("ctxfold", ["fold", "--apply"]).ok()
    ));
    assert_eq!(seeds(), before);
    // The cache of what was merged is a cache: without it the file is merged again, adding nothing.
    fs::remove_file(env.store.join("cache/seed-merges.jsonl.zst")).unwrap();
    let run = env.run("ctxfold", ["fold", "--apply"]).ok();
    assert!(
        run.stdout_text().contains("merged 0 new lines from"),
        "{}",
        run.stdout_text()
    );
    assert_eq!(seeds(), before);
    fs::write(
        &homes.seed_index,
        b"{\"v\":2,\"kind\":\"fold\",\"seq\":3}\n{\"v\":2,\"kind\":\"fold\",\"seq\":1}\n",
    )
    .unwrap();
    // Changed: merged as a union.
    assert!(!merged_already(
        &env.run("ctxfold", ["fold", "--apply"]).ok()
    ));
    assert_eq!(
        foreign_lines(&stored()),
        "{\"v\":2,\"kind\":\"fold\",\"seq\":1}\n{\"v\":2,\"kind\":\"fold\",\"seq\":2}\n{\"v\":2,\"kind\":\"fold\",\"seq\":3}\n"
    );
    assert!(merged_already(
        &env.run("ctxfold", ["fold", "--apply"]).ok()
    ));
    // The session's index changed by other means (its batches forgotten): merged again.
    let catalog = env.store.join("seeds/catalog.jsonl");
    let kept: String = fs::read_to_string(&catalog)
        .unwrap()
        .lines()
        .filter(|l| !l.contains(&homes.sessions[5].id))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&catalog, kept).unwrap();
    assert!(!merged_already(
        &env.run("ctxfold", ["fold", "--apply"]).ok()
    ));
    assert_eq!(
        foreign_lines(&stored()),
        "{\"v\":2,\"kind\":\"fold\",\"seq\":3}\n{\"v\":2,\"kind\":\"fold\",\"seq\":1}\n"
    );
}

/// The lines of a stored seed index that ctxfold did not write itself.
fn foreign_lines(index: &str) -> String {
    index
        .lines()
        .filter(|l| !l.contains("\"harness\":\"ctxfold\""))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn remove_source_takes_archived_sources_only_and_active_ones_with_allow_active() {
    homes::each_set(remove_source_takes_archived_sources_only_and_active_ones_with_allow_active_in);
}

fn remove_source_takes_archived_sources_only_and_active_ones_with_allow_active_in(
    env: Env,
    homes: Homes,
) {
    let run = env
        .run("ctxfold", ["fold", "--apply", "--remove-source"])
        .ok();
    for placed in homes.archived() {
        assert!(
            !placed.path.exists(),
            "{} kept:\n{}",
            placed.path.display(),
            run.stdout_text()
        );
    }
    for placed in homes.active() {
        assert!(placed.path.exists(), "{} removed", placed.path.display());
    }
    // Only the file folded goes: the shadowed .zst sibling stays.
    assert!(homes.shadowed.exists());
    // The sources kept as active are counted in one note, not one per session.
    let active = homes.active().count();
    let kept: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("active session"))
        .collect();
    assert_eq!(kept.len(), 1, "{}", run.stderr);
    assert!(
        kept[0].starts_with(&format!(
            "ctxfold fold: kept the sources of {active} active sessions: --remove-source removes"
        )) && kept[0].contains("--older-than AGE"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stdout_text().contains("active"),
        "{}",
        run.stdout_text()
    );

    // A folder that holds something besides sessions: it stays when they go.
    let codex_active: Vec<&Path> = homes
        .active()
        .map(|p| p.path.as_path())
        .filter(|p| p.starts_with(&homes.codex))
        .collect();
    let year_of = |path: &Path| path.ancestors().nth(3).unwrap().to_path_buf();
    let kept_year = year_of(codex_active[0]);
    fs::write(kept_year.join("notes.txt"), b"mine\n").unwrap();

    // With the plain archive gone, its .zst sibling (half its bytes) is found in its place: a
    // session that changed other than by an append, refused, and kept.
    let run = env
        .run(
            "ctxfold",
            ["fold", "--apply", "--remove-source", "--allow-active"],
        )
        .fails(3);
    assert!(
        run.stdout_text()
            .lines()
            .any(|l| l.starts_with("changed    refused")
                && l.ends_with(homes.shadowed.to_str().unwrap())),
        "{}",
        run.stdout_text()
    );
    assert!(homes.shadowed.exists());
    for placed in homes.active() {
        assert!(!placed.path.exists(), "{} kept", placed.path.display());
    }
    // The date folders Codex made for them go with them, up to the session tree, which stays.
    for source in &codex_active {
        let (day, month, year) = (
            source.parent().unwrap(),
            source.ancestors().nth(2).unwrap(),
            year_of(source),
        );
        assert!(!day.exists() && !month.exists(), "{} left", day.display());
        assert_eq!(year.exists(), year == kept_year, "{}", year.display());
    }
    assert!(homes.codex.join("sessions").is_dir());
    for placed in &homes.sessions {
        env.run("ctxfold", ["restore", &placed.id]).ok();
        assert!(
            fs::read(&placed.rollout_path).unwrap() == placed.bytes,
            "{} differs",
            placed.id
        );
    }
}

/// Replace an object's file with a valid zstd frame of other bytes (the store unpacked first, so
/// that the object has a file of its own).
fn corrupt_an_object_of(env: &Env, id: &str) {
    env.run("ctxfold", ["unpack"]).ok();
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(env.store.join(format!("manifests/{id}.json"))).unwrap())
            .unwrap();
    let sha = manifest["parts"][0]["object"]["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let path = env
        .store
        .join("objects")
        .join(&sha[..2])
        .join(format!("{sha}.zst"));
    let mut perms = fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
    fs::set_permissions(&path, perms).unwrap();
    fs::write(
        &path,
        zstd::encode_all(&b"not what was stored"[..], 3).unwrap(),
    )
    .unwrap();
}

/// The paths fold's stamp cache keeps (`cache/stamps.jsonl.zst`).
fn stamped_paths(env: &Env) -> Vec<String> {
    let compressed = fs::read(env.store.join("cache/stamps.jsonl.zst")).unwrap();
    let text = zstd::decode_all(&compressed[..]).unwrap();
    let mut paths: Vec<String> = (text.split(|&b| b == b'\n'))
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice::<serde_json::Value>(l).unwrap()["path"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    paths.sort();
    paths
}

/// A session folded by a relative path is known by its absolute one: `log` and `grep` look it
/// up by the path its manifest records, and a fold run from another folder keeps it, so that an
/// unchanged file is not read again by either.
#[test]
fn the_stamp_cache_keeps_a_session_folded_by_a_relative_path_by_its_absolute_one() {
    let env = Env::new();
    let fixture = own_fixture(own::CODEX_AGENT_SMALL);
    let name = fixture.file_name().unwrap().to_str().unwrap();
    fs::copy(&fixture, env.path(name)).unwrap();
    env.run("ctxfold", ["fold", "--apply", "-q", name]).ok();
    let absolute = env.path(name).display().to_string();
    assert_eq!(stamped_paths(&env), std::slice::from_ref(&absolute));
    // Another fold, from another folder, saves the cache again: the entry stays.
    let elsewhere = env.path("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let other = elsewhere.join("other.jsonl");
    fs::write(&other, b"{\"n\":1}\n").unwrap();
    let mut fold = env.command("ctxfold");
    fold.current_dir(&elsewhere)
        .args(["fold", "--apply", "-q", "--force", "other.jsonl"]);
    let run = Env::output(fold, b"");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let mut both = vec![absolute, other.display().to_string()];
    both.sort();
    assert_eq!(stamped_paths(&env), both);
    let listed = env.run("ctxfold", ["log"]).ok().stdout_text();
    assert!(
        listed.lines().filter(|l| l.contains(" folded ")).count() == 2,
        "{listed}"
    );
}

/// `fold --remove-source` of many sessions that share few folders, on both cores: two workers
/// remove the last sessions of one folder at once, and each then fsyncs the folder the other may
/// have removed, and climbs to remove it. Round after round, every source goes, with its folder
/// (the session tree stays), not a word is said on stderr, and every session restores to its place.
#[test]
fn remove_source_of_sessions_sharing_folders_races_without_a_word() {
    let env = Env::new();
    let tree = env.home.join(".pi/agent/sessions");
    let rounds = common::setting("CTXFOLD_TEST_RACE_ROUNDS", 12);
    let mut written = Vec::new();
    for round in 0..rounds {
        for n in 0..36 {
            let folder = n % 6;
            let id = format!("0f1d{round:04x}-0000-4000-8000-{n:012x}");
            let text = format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-11-30T10:00:00.000Z\",\"cwd\":\"/work/p{folder}\"}}\n\
                 {{\"type\":\"message\",\"id\":\"{n:08x}\",\"parentId\":null,\"timestamp\":\"2026-11-30T10:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"round {round}, session {n}\"}}]}}}}\n"
            );
            let dir = tree.join(format!("--work-p{folder}--"));
            fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("2026-11-30T10-00-00-000Z_{id}.jsonl"));
            fs::write(&path, &text).unwrap();
            written.push((path, text));
        }
        let run = env
            .run(
                "ctxfold",
                ["fold", "--apply", "--remove-source", "--allow-active"],
            )
            .ok();
        assert_eq!(run.stderr, "", "round {round}");
        let stdout = run.stdout_text();
        assert!(
            stdout.contains("36 folded (36 new, 0 grown, 0 changed)")
                && stdout.contains("; 36 sources removed;"),
            "round {round}: {stdout}"
        );
        let left: Vec<_> = fs::read_dir(&tree).unwrap().collect();
        assert!(left.is_empty(), "round {round}: {left:?} left");
    }
    env.run("ctxfold", ["restore", "--all", "-q"]).ok();
    for (path, text) in &written {
        assert_eq!(
            &fs::read_to_string(path).unwrap(),
            text,
            "{}",
            path.display()
        );
    }
}

#[test]
fn a_source_is_never_removed_when_its_reconstruction_fails() {
    homes::each_set(a_source_is_never_removed_when_its_reconstruction_fails_in);
}

fn a_source_is_never_removed_when_its_reconstruction_fails_in(env: Env, homes: Homes) {
    let archived = homes.archived().next().unwrap().clone();
    env.run(
        "ctxfold",
        ["fold", "--apply", archived.path.to_str().unwrap()],
    )
    .ok();
    corrupt_an_object_of(&env, &archived.id);
    let run = env
        .run(
            "ctxfold",
            [
                "fold",
                "--apply",
                "--remove-source",
                archived.path.to_str().unwrap(),
            ],
        )
        .fails(4);
    assert!(archived.path.exists(), "removed despite a corrupt store");
    assert!(
        run.stdout_text()
            .contains("reconstruction failed; the source is kept"),
        "{}",
        run.stdout_text()
    );

    // A new session whose objects are already (corruptly) there: its manifest commits (its parts
    // were hashed as written, and every object it names is present), but the read-back before a
    // removal catches the damage, and fsck names it.
    fs::remove_file(env.store.join(format!("manifests/{}.json", archived.id))).unwrap();
    env.run(
        "ctxfold",
        [
            "fold",
            "--apply",
            "--remove-source",
            archived.path.to_str().unwrap(),
        ],
    )
    .fails(4);
    assert!(archived.path.exists());
    assert_eq!(manifests(&env).len(), 1);
    let run = env.run("ctxfold", ["fsck", "--full"]).fails(4);
    assert!(
        run.stdout_text().contains("corrupt object"),
        "{}",
        run.stdout_text()
    );
}

#[test]
fn a_source_appended_to_between_the_reads_is_not_committed() {
    homes::each_set(a_source_appended_to_between_the_reads_is_not_committed_in);
}

fn a_source_appended_to_between_the_reads_is_not_committed_in(mut env: Env, homes: Homes) {
    let placed = homes.archived().next().unwrap().clone();
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        "printf '{}\\n' >> \"$CTXFOLD_TEST_SOURCE\"",
    );
    let run = env
        .run(
            "ctxfold",
            [
                "fold",
                "--apply",
                "--remove-source",
                placed.path.to_str().unwrap(),
            ],
        )
        .fails(3);
    assert!(
        run.stdout_text().contains("changed while it was read"),
        "{}",
        run.stdout_text()
    );
    assert!(manifests(&env).is_empty());
    assert!(placed.path.exists());
}

#[test]
fn a_grown_rollout_refolded_adds_little() {
    homes::each_set(a_grown_rollout_refolded_adds_little_in);
}

fn a_grown_rollout_refolded_adds_little_in(env: Env, homes: Homes) {
    // The largest active Codex rollout.
    let placed = homes
        .active()
        .filter(|s| s.path.to_str().unwrap().contains("/rollout-"))
        .max_by_key(|s| s.bytes.len())
        .unwrap();
    let path = placed.path.to_str().unwrap();
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    // Grow it by 1%: new lines, as an agent appends them.
    let target = placed.bytes.len() / 100;
    let mut extra = Vec::new();
    let mut turn = 0;
    while extra.len() < target {
        extra.extend_from_slice(format!("{{\"timestamp\":\"2026-06-01T00:00:{:02}.000Z\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"agent_message\",\"message\":\"turn {turn}: the build is green again after the fix to the parser\"}}}}\n", turn % 60).as_bytes());
        turn += 1;
    }
    fs::OpenOptions::new()
        .append(true)
        .open(&placed.path)
        .unwrap()
        .write_all(&extra)
        .unwrap();
    let status = env.run("ctxfold", ["status", "--json", path]).ok();
    assert_eq!(json_lines(&status.stdout)[0]["state"], "grown");
    // Growth is the normal path: no --overwrite needed.
    let run = env.run("ctxfold", ["fold", "--apply", "--json", path]).ok();
    let report = &json_lines(&run.stdout)[0];
    assert_eq!(report["state"], "grown");
    assert_eq!(report["action"], "fold");
    let new_stored = report["new_stored_bytes"].as_u64().unwrap();
    let size = (placed.bytes.len() + extra.len()) as u64;
    assert!(
        new_stored * 20 <= size,
        "{new_stored} new stored bytes for a {size}-byte rollout grown by 1%"
    );
    assert_eq!(
        json_lines(&env.run("ctxfold", ["status", "--json", path]).ok().stdout)[0]["state"],
        "up_to_date"
    );
}

#[test]
fn a_grown_session_is_indexed_from_where_its_last_extraction_ended_with_the_same_records() {
    homes::each_set(a_grown_session_is_indexed_from_where_its_last_extraction_ended_in);
}

/// A session's extraction checkpoint in `store`, as JSON.
fn checkpoint_path(store: &Path, id: &str) -> std::path::PathBuf {
    store.join(format!("cache/seed-resume/{id}.json.zst"))
}

fn edit_checkpoint(store: &Path, id: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = checkpoint_path(store, id);
    let bytes = zstd::decode_all(&fs::read(&path).unwrap()[..]).unwrap();
    let mut checkpoint: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    edit(&mut checkpoint);
    let bytes = serde_json::to_vec(&checkpoint).unwrap();
    fs::write(&path, zstd::encode_all(&bytes[..], 3).unwrap()).unwrap();
}

/// Every plain session cut to its first half of lines, as an agent was writing it: those sessions.
fn cut_to_their_first_half(homes: &Homes) -> Vec<&homes::Placed> {
    let grown: Vec<&homes::Placed> = (homes.sessions.iter())
        .filter(|s| s.path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    for placed in &grown {
        let half = placed.bytes.len() / 2;
        let cut = half
            + placed.bytes[half..]
                .iter()
                .position(|&b| b == b'\n')
                .unwrap()
            + 1;
        fs::write(&placed.path, &placed.bytes[..cut]).unwrap();
    }
    grown
}

fn a_grown_session_is_indexed_from_where_its_last_extraction_ended_in(mut env: Env, homes: Homes) {
    let grown = cut_to_their_first_half(&homes);
    // Sessions this small are walked whole again: none has a checkpoint, unless tests say so.
    let small = env.path("small");
    let store = small.to_str().unwrap();
    env.run("ctxfold", ["fold", "--apply", "--quiet", "--store", store])
        .ok();
    assert!(small.join("manifests").is_dir() && !small.join("cache/seed-resume").exists());
    env.set("CTXFOLD_TEST_CHECKPOINT_BYTES", "0");
    // The same history in two stores: in the second, every session is walked whole again.
    let (here, walked) = (env.store.clone(), env.path("walked-whole"));
    for store in [&here, &walked] {
        let store = store.to_str().unwrap();
        env.run("ctxfold", ["fold", "--apply", "--quiet", "--store", store])
            .ok();
    }
    // An archived session is not appended to: it is given no checkpoint.
    for placed in &grown {
        let kept = checkpoint_path(&here, &placed.id).is_file();
        assert_eq!(kept, !placed.archived, "{} has a checkpoint", placed.id);
    }
    let active: Vec<&str> = (grown.iter())
        .filter(|s| !s.archived)
        .map(|s| s.id.as_str())
        .collect();
    assert!(active.len() >= 4, "four plain active sessions to grow");
    fs::remove_dir_all(walked.join("cache/seed-resume")).unwrap();
    // A checkpoint is trusted when it fits: one planted with an identifier (from a large output,
    // long: it ranks first) and a seq past the index's shows that it was used, for the records
    // and for what the index holds.
    let planted = "PlantedByTheTestAsIfFromALargeToolOutputOfTheSessionBeforeItGrew";
    let plant = |c: &mut serde_json::Value| {
        let candidate = serde_json::json!({"count": 1, "large": true, "last": 0});
        c["midway"]["builder"]["identifiers"]["candidates"][planted] = candidate;
    };
    edit_checkpoint(&here, active[0], |c| {
        plant(c);
        c["held"]["last_seq"] = 5_000_000.into();
    });
    // Not one of another version's, nor one whose last record the index does not hold, nor what
    // the index held when it listed other batches.
    edit_checkpoint(&here, active[1], |c| {
        plant(c);
        c["version"] = "0.0.0".into();
    });
    edit_checkpoint(&here, active[2], |c| {
        plant(c);
        c["last"]["xxh3"] = "0".repeat(32).into();
    });
    edit_checkpoint(&here, active[3], |c| {
        c["held"]["basis"] = serde_json::json!([]);
        c["held"]["last_seq"] = 5_000_000.into();
    });
    // gc --aggressive compresses them again, smaller, saying the same (the fold below uses them).
    let checkpoints = || -> BTreeMap<String, (u64, Vec<u8>)> {
        (fs::read_dir(here.join("cache/seed-resume")).unwrap())
            .map(|e| e.unwrap().path())
            .map(|p| {
                let bytes = fs::read(&p).unwrap();
                let json = zstd::decode_all(&bytes[..]).unwrap();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, (bytes.len() as u64, json))
            })
            .collect()
    };
    let before = checkpoints();
    let store = here.to_str().unwrap();
    let gc = ["gc", "--apply", "--aggressive", "--json", "--store", store];
    let said = json_lines(&env.run("ctxfold", gc).ok().stdout);
    let said = said.iter().find(|l| l["type"] == "checkpoints").unwrap();
    let after = checkpoints();
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let total = |c: &BTreeMap<String, (u64, Vec<u8>)>| c.values().map(|(n, _)| n).sum::<u64>();
    assert_eq!(said["checkpoints"], before.len(), "{said}");
    assert_eq!(said["bytes_before"], total(&before), "{said}");
    assert_eq!(said["bytes_after"], total(&after), "{said}");
    assert!(total(&after) < total(&before), "{said}");
    for (name, (bytes, json)) in &after {
        assert!(*bytes < before[name].0, "{name}");
        assert_eq!(*json, before[name].1, "{name}");
    }
    for placed in &grown {
        fs::write(&placed.path, &placed.bytes).unwrap();
    }
    for store in [&here, &walked] {
        let store = store.to_str().unwrap();
        let run = env
            .run("ctxfold", ["fold", "--apply", "--json", "--store", store])
            .ok();
        let reports = json_lines(&run.stdout);
        for placed in &grown {
            let report = reports.iter().find(|r| r["id"] == placed.id.as_str());
            let report = report.unwrap();
            assert_eq!(report["state"], "grown", "{report}");
            assert!(report["seed_records"].as_u64().unwrap() >= 1, "{report}");
        }
    }
    for placed in &grown {
        let id = placed.id.as_str();
        let (index, whole) = (
            env.stored_seed_index(&here, id),
            env.stored_seed_index(&walked, id),
        );
        assert!(!whole.is_empty() && !whole.contains(planted), "{id}");
        if id == active[0] {
            assert!(index.contains(planted), "{id}'s checkpoint was not used");
            assert!(
                index.contains(r#""seq":5000001"#),
                "{id}'s held was not used"
            );
            assert_eq!(index.lines().count(), whole.lines().count(), "{id}");
        } else {
            assert_eq!(index, whole, "{id}");
        }
        // The checkpoint now is where the whole session's extraction ended.
        assert_eq!(
            checkpoint_path(&walked, id).is_file(),
            !placed.archived,
            "{id}"
        );
    }
    // A session grown that no longer gets one (here: the size is raised past it) loses its old
    // one, which would only take room.
    let placed = grown.iter().find(|s| s.id == active[1]).unwrap();
    let file = fs::OpenOptions::new().append(true).open(&placed.path);
    file.unwrap().write_all(b"\n").unwrap();
    let mut fold = env.command("ctxfold");
    fold.args(["fold", "--apply", "--quiet", placed.path.to_str().unwrap()]);
    fold.env("CTXFOLD_TEST_CHECKPOINT_BYTES", u64::MAX.to_string());
    Env::output(fold, b"").ok();
    assert!(!checkpoint_path(&here, active[1]).exists());
    assert!(checkpoint_path(&here, active[0]).is_file());
    let mut bytes = placed.bytes.clone();
    bytes.push(b'\n');
    // Restored byte for byte, as any grown session.
    for placed in &grown {
        let to = env.path(&format!("{}.restored", placed.id));
        let to = to.to_str().unwrap();
        env.run("ctxfold", ["restore", &placed.id, "--to", to]).ok();
        let expected = if placed.id == active[1] {
            &bytes
        } else {
            &placed.bytes
        };
        assert_eq!(&fs::read(to).unwrap(), expected, "{}", placed.id);
    }
}

#[test]
fn a_grown_session_hashed_on_from_its_midstate_folds_as_one_hashed_whole() {
    homes::each_set(a_grown_session_hashed_on_from_its_midstate_folds_as_one_hashed_whole_in);
}

fn a_grown_session_hashed_on_from_its_midstate_folds_as_one_hashed_whole_in(
    mut env: Env,
    homes: Homes,
) {
    let grown = cut_to_their_first_half(&homes);
    // Sessions this small keep no midstate, unless tests say so.
    let midstates = |store: &Path| store.join("cache/midstates.jsonl.zst");
    let small = env.path("small");
    let fold = |env: &Env, store: &Path| {
        let store = store.to_str().unwrap();
        env.run("ctxfold", ["fold", "--apply", "--json", "--store", store])
    };
    fold(&env, &small).ok();
    assert!(small.join("manifests").is_dir() && !midstates(&small).exists());
    env.set("CTXFOLD_TEST_MIDSTATE_BYTES", "0");
    // The same history in two stores: in the second, grown sessions are hashed whole again.
    let (here, whole) = (env.store.clone(), env.path("hashed-whole"));
    for store in [&here, &whole] {
        fold(&env, store).ok();
    }
    let kept = |store: &Path| -> Vec<serde_json::Value> {
        let text = fs::read(midstates(store)).map_or_else(
            |_| String::new(),
            |b| String::from_utf8(zstd::decode_all(&b[..]).unwrap()).unwrap(),
        );
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for placed in &grown {
        let path = placed.path.to_str().unwrap();
        assert!(
            kept(&here).iter().any(|k| k["path"] == path),
            "{} has a midstate",
            placed.id
        );
    }
    fs::remove_file(midstates(&whole)).unwrap();
    // One session's midstate damaged (a sha256 state of other bytes): it is hashed whole. Another,
    // the one with the most bytes before its last part, changed in its first line, not appended
    // to: found changed, midstate or not.
    let before_last = |placed: &homes::Placed| {
        let kept = kept(&here);
        let k = kept
            .iter()
            .find(|k| k["path"] == placed.path.to_str().unwrap());
        k.unwrap()["source"]["midstate"]["bytes"].as_u64().unwrap()
    };
    let changed = *grown.iter().max_by_key(|p| before_last(p)).unwrap();
    let damaged = *grown.iter().find(|p| p.id != changed.id).unwrap();
    let changed_at = changed
        .bytes
        .iter()
        .position(|b| b.is_ascii_lowercase())
        .unwrap();
    assert!(
        before_last(changed) > changed_at as u64,
        "a change before the last part"
    );
    let lines: Vec<String> = (kept(&here).into_iter())
        .map(|mut k| {
            if k["path"] == damaged.path.to_str().unwrap() {
                let state = k["source"]["midstate"]["sha256"].as_str().unwrap();
                let other = state.replace(|c| c != '0', "0");
                k["source"]["midstate"]["sha256"] = other.into();
            }
            k.to_string()
        })
        .collect();
    fs::write(midstates(&here), lines.join("\n") + "\n").unwrap();
    for placed in &grown {
        let mut bytes = placed.bytes.clone();
        if placed.id == changed.id {
            bytes[changed_at] = bytes[changed_at].to_ascii_uppercase();
        }
        fs::write(&placed.path, bytes).unwrap();
    }
    for store in [&here, &whole] {
        let reports = json_lines(&fold(&env, store).fails(3).stdout);
        for placed in &grown {
            let report = reports.iter().find(|r| r["id"] == placed.id.as_str());
            let state = match placed.id == changed.id {
                true => "changed",
                false => "grown",
            };
            assert_eq!(report.unwrap()["state"], state, "{}", placed.id);
        }
    }
    for placed in &grown {
        // What an object takes stored depends on the pack block it went into: all else is the same.
        let manifest = |store: &Path| {
            let path = store.join(format!("manifests/{}.json", placed.id));
            let mut manifest: serde_json::Value =
                serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
            for part in manifest["parts"].as_array_mut().unwrap() {
                part["object"]["stored_bytes"].take();
            }
            manifest
        };
        assert_eq!(manifest(&here), manifest(&whole), "{}", placed.id);
        let to = env.path(&format!("{}.restored", placed.id));
        let to = to.to_str().unwrap();
        env.run("ctxfold", ["restore", &placed.id, "--to", to]).ok();
        let expected = match placed.id == changed.id {
            true => &placed.bytes[..fs::read(to).unwrap().len()],
            false => &placed.bytes[..],
        };
        assert_eq!(fs::read(to).unwrap(), expected, "{}", placed.id);
    }
    // Each grown session's midstate is now of its grown bytes, here and in the other store.
    for store in [&here, &whole] {
        for placed in grown.iter().filter(|p| p.id != changed.id) {
            let path = placed.path.to_str().unwrap();
            let kept = kept(store);
            let k = kept.iter().find(|k| k["path"] == path).unwrap();
            assert_eq!(
                k["source"]["folded"]["bytes"],
                placed.bytes.len(),
                "{}",
                placed.id
            );
        }
    }
}

#[test]
fn seeds_extracted_alongside_a_fold_or_after_it_from_its_file_are_those_from_the_bytes_it_kept() {
    homes::each_set(seeds_extracted_alongside_a_fold_or_after_it_from_its_file_in);
}

fn seeds_extracted_alongside_a_fold_or_after_it_from_its_file_in(mut env: Env, homes: Homes) {
    let after = env.path("after");
    let fold = |env: &Env, store: &Path| {
        let store = store.to_str().unwrap();
        env.run("ctxfold", ["fold", "--apply", "--quiet", "--store", store])
    };
    fold(&env, &after).ok();
    // Nothing kept of what the fold read: the seed passes read each file again, checked.
    let read_again = env.path("read-again");
    env.set("CTXFOLD_TEST_KEEP_BYTES", "0");
    fold(&env, &read_again).ok();
    env.set("CTXFOLD_TEST_KEEP_BYTES", u64::MAX.to_string());
    // Every session large enough to be extracted while it is segmented, each folded alone (one
    // left when a fold takes it), its records in several batches (those the extraction makes go
    // into a pack of its own).
    env.set("CTXFOLD_TEST_ALONGSIDE_BYTES", "0");
    env.set("CTXFOLD_TEST_BATCH_BYTES", "4096");
    // And walked on a thread of their own, ahead of their records' builders.
    env.set("CTXFOLD_TEST_APART_BYTES", "0");
    // Each given a checkpoint, saved while its batches' pack is put in place.
    env.set("CTXFOLD_TEST_CHECKPOINT_BYTES", "0");
    for placed in &homes.sessions {
        let path = placed.path.to_str().unwrap();
        env.run("ctxfold", ["fold", "--apply", "--quiet", path])
            .ok();
        let kept = checkpoint_path(&env.store, &placed.id).is_file();
        assert_eq!(kept, !placed.archived, "{} has a checkpoint", placed.id);
    }
    env.set("CTXFOLD_TEST_CHECKPOINT_BYTES", u64::MAX.to_string());
    fold(&env, &env.store).ok();
    // All in one run, the last session taken goes alongside after others its worker folded: they
    // are committed while its seeds are extracted, its manifest staged meanwhile.
    let together = env.path("together");
    let store = together.to_str().unwrap();
    let run = env.run("ctxfold", ["fold", "--apply", "--json", "--store", store]);
    let lines = json_lines(&run.ok().stdout);
    assert_eq!(lines.last().unwrap()["total"]["fold"], homes.sessions.len());
    assert_eq!(fs::read_dir(together.join("tmp")).unwrap().count(), 0);
    for placed in &homes.sessions {
        let to = env.path(&format!("together-{}", placed.id));
        let args = [
            "restore",
            &placed.id,
            "--store",
            store,
            "--to",
            to.to_str().unwrap(),
        ];
        env.run("ctxfold", args).ok();
        assert!(fs::read(&to).unwrap() == placed.bytes, "{}", placed.id);
    }
    let batches = fs::read_to_string(env.store.join("seeds/catalog.jsonl")).unwrap();
    assert!(
        batches.lines().count() > homes.sessions.len(),
        "several batches a session"
    );
    for placed in &homes.sessions {
        let index = env.stored_seed_index(&after, &placed.id);
        for store in [&env.store, &read_again, &together] {
            let other = env.stored_seed_index(store, &placed.id);
            assert_eq!(index, other, "{} in {}", placed.id, store.display());
        }
    }
    let fsck = env.run("ctxfold", ["fsck", "--full"]).ok();
    assert!(
        fsck.stdout_text().contains(" 0 unreferenced objects"),
        "{}",
        fsck.stdout_text()
    );
    // A source appended to while it was read commits nothing, and its extraction leaves nothing
    // behind: what the store holds is what a fold without it leaves (the worker's pack).
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        "printf '{}\\n' >> \"$CTXFOLD_TEST_SOURCE\"",
    );
    let left = |env: &Env, name: &str| {
        for placed in &homes.sessions {
            fs::write(&placed.path, &placed.bytes).unwrap();
        }
        let changed = env.path(name);
        fold(env, &changed).fails(3);
        assert_eq!(fs::read_dir(changed.join("manifests")).unwrap().count(), 0);
        assert_eq!(fs::read_dir(changed.join("tmp")).unwrap().count(), 0);
        let store = changed.to_str().unwrap();
        let fsck = env.run("ctxfold", ["fsck", "--store", store]).ok();
        let packs = fs::read_dir(changed.join("packs-ctxfold")).unwrap().count();
        (fsck.stdout_text(), packs)
    };
    let alongside = left(&env, "changed-alongside");
    env.set("CTXFOLD_TEST_ALONGSIDE_BYTES", u64::MAX.to_string());
    assert_eq!(alongside, left(&env, "changed-after"));
}

#[test]
fn unsafe_session_ids_are_refused_before_anything_is_written() {
    let env = Env::new();
    let file = env.path("evil.jsonl");
    fs::write(
        &file,
        b"{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{\"id\":\"../x\"}}\n",
    )
    .unwrap();
    let run = env
        .run("ctxfold", ["fold", "--apply", file.to_str().unwrap()])
        .fails(3);
    assert!(
        run.stderr.contains("unsafe session id \"../x\""),
        "{}",
        run.stderr
    );
    assert!(!env.store.exists());
    assert!(!env.dir.path().join("x.json").exists());
}

#[test]
fn a_path_refused_is_an_error_as_its_exit_status_says() {
    let env = Env::new();
    let missing = env.path("nonexistent");
    for command in ["fold", "status"] {
        env.run("ctxfold", [command.as_ref(), missing.as_os_str()])
            .fails(3)
            .one_line_error(&format!(
                "ctxfold {command}: error: {}: no such file or directory",
                missing.display()
            ));
    }
}

#[test]
fn with_no_sessions_fold_still_says_something_useful() {
    let mut env = Env::new();
    env.set("CODEX_HOME", env.path("no-codex"));
    env.set("PI_CODING_AGENT_DIR", env.path("no-pi"));
    let run = env.run("ctxfold", ["fold"]).ok();
    for needle in [
        "no sessions found",
        "no-codex/sessions (missing)",
        "no-pi/sessions (missing)",
        "ctxfold fold PATH",
        "holds 0 folded sessions",
    ] {
        assert!(
            run.stderr.contains(needle),
            "{needle:?} not in: {}",
            run.stderr
        );
    }
    // With nothing to fold, --apply creates no store, and ls does not say it would.
    env.run("ctxfold", ["fold", "--apply"]).ok();
    assert!(!env.store.exists());
    env.run("ctxfold", ["ls"]).fails(1).one_line_error(
        "not a ctxfold store yet (no manifests/ or objects/): the first ctxfold fold --apply that \
         finds sessions creates it, as ctxfold clone URL does",
    );
}

#[test]
fn ls_status_and_stats_describe_the_store() {
    homes::each_set(ls_status_and_stats_describe_the_store_in);
}

fn ls_status_and_stats_describe_the_store_in(mut env: Env, homes: Homes) {
    // A Claude Code transcript too: the longest agent name in the AGENT column.
    let claude = env.path("claude");
    let transcript = own_fixture(own::CLAUDE_SESSION);
    let project = claude.join("projects/-home-dev-shop");
    fs::create_dir_all(&project).unwrap();
    fs::copy(&transcript, project.join(transcript.file_name().unwrap())).unwrap();
    env.set("CLAUDE_CONFIG_DIR", &claude);
    let run = env.run("ctxfold", ["status", "--json"]).ok();
    assert!(json_lines(&run.stdout).iter().all(|l| l["state"] == "new"));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    // A conflict kept by sync is listed and marked.
    let first = &homes.sessions[0];
    let conflicts = env.store.join("manifests/conflicts");
    fs::create_dir_all(&conflicts).unwrap();
    fs::copy(
        env.store.join(format!("manifests/{}.json", first.id)),
        conflicts.join(format!("{}@0123456789ab.json", first.id)),
    )
    .unwrap();

    let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
    assert_eq!(listed.len(), homes.sessions.len() + 2, "and the transcript");
    assert_eq!(listed.iter().filter(|l| l["conflict"] == true).count(), 1);
    for placed in &homes.sessions {
        let entry = listed
            .iter()
            .find(|l| l["id"] == placed.id.as_str() && l["conflict"] == false)
            .unwrap();
        assert_eq!(entry["source_bytes"], placed.bytes.len());
        assert!(entry["stored_bytes"].as_u64().unwrap() > 0);
        // Codex names every rollout after its start: its agent and start are known.
        if placed.path.starts_with(&homes.codex) {
            assert_eq!(entry["agent"], "codex", "{entry}");
            let started = entry["started"].as_str().unwrap();
            let name = placed.rollout_path.file_name().unwrap().to_str().unwrap();
            assert!(
                name.contains(&started.replace(':', "-")) && started.len() == 19,
                "{started} {name}"
            );
            assert!(entry["cwd"].as_str().unwrap().starts_with('/'), "{entry}");
        }
    }
    let human = env.run("ctxfold", ["ls"]).ok().stdout_text();
    assert!(
        human.contains("conflict") && human.contains("From the database"),
        "{human}"
    );
    let mut lines = human.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "ID", "STARTED", "AGENT", "STATE", "SOURCE", "STORED", "CWD", "TITLE"
        ]
    );
    let codex = homes
        .active()
        .find(|p| p.path.starts_with(&homes.codex))
        .unwrap();
    let line = lines.find(|l| l.starts_with(&codex.id)).unwrap();
    let entry = listed
        .iter()
        .find(|l| l["id"] == codex.id.as_str())
        .unwrap();
    let cwd = entry["cwd"].as_str().unwrap();
    let shown = match cwd.chars().count() > 24 {
        true => format!("…{}", &cwd[cwd.len() - 23..]),
        false => cwd.to_string(),
    };
    // Codex names its files in local time, whose zone no file records: said so, in ls as in --json.
    let started = entry["started"].as_str().unwrap();
    assert_eq!(started.len(), 19, "no zone: {started}");
    assert!(
        line.contains(&format!(
            "  {} local  codex   active  ",
            started[..16].replace('T', " ")
        )) && line.contains(&shown),
        "{line}"
    );
    // Pi names its files in UTC and says so: shown as ctxfold shows every time.
    let pi = homes.sessions.last().unwrap();
    let line = human.lines().find(|l| l.starts_with(&pi.id)).unwrap();
    assert!(
        line.contains("  2025-12-17 19:39Z       pi      active  "),
        "{line}"
    );
    // Every column starts under its header, whatever the agent.
    let header = human.lines().next().unwrap();
    let columns = ["AGENT", "STATE"].map(|c| header.find(c).unwrap());
    let mut agents = HashSet::new();
    for line in human
        .lines()
        .skip(1)
        .filter(|l| l.len() > 36 && l.as_bytes()[36] == b' ')
    {
        let word = |at: usize| line[at..].split_whitespace().next().unwrap();
        assert!(
            line.as_bytes()[columns[0] - 1] == b' '
                && ["active", "archived", "conflict"].contains(&word(columns[1]))
                && line.as_bytes()[columns[1] - 1] == b' ',
            "{header}\n{line}"
        );
        agents.insert(word(columns[0]).to_string());
    }
    assert_eq!(
        agents,
        ["codex", "pi", "claude"].map(String::from).into(),
        "{human}"
    );

    let status = json_lines(&env.run("ctxfold", ["status", "--json"]).ok().stdout);
    assert!(
        status.iter().all(|l| l["state"] == "up_to_date"),
        "{status:?}"
    );
    fs::write(&homes.sessions[2].path, b"rewritten\n").unwrap();
    let status = json_lines(&env.run("ctxfold", ["status", "--json"]).ok().stdout);
    assert_eq!(
        status
            .iter()
            .find(|l| l["id"] == homes.sessions[2].id.as_str())
            .unwrap()["state"],
        "changed"
    );
    let run = env.run("ctxfold", ["status"]);
    assert!(
        run.stderr
            .contains("1 session changed other than by an append since folded: "),
        "{}",
        run.stderr
    );

    let stats = &json_lines(&env.run("ctxfold", ["stats", "--json"]).ok().stdout)[0];
    let logical: u64 = homes
        .sessions
        .iter()
        .map(|s| s.bytes.len() as u64)
        .sum::<u64>()
        + first.bytes.len() as u64
        + fs::metadata(&transcript).unwrap().len();
    assert_eq!(stats["logical_bytes"], logical);
    assert_eq!(stats["manifests"], homes.sessions.len() + 2);
    assert!(stats["dedup_ratio"].as_f64().unwrap() > 1.0);
    assert!(stats["compression_ratio"].as_f64().unwrap() > 1.5);
    assert!(stats["disk_bytes"].as_u64().unwrap() >= stats["stored_bytes"].as_u64().unwrap());
    assert_eq!(stats["unreferenced_objects"], 0);
    assert!(Path::new(&env.store).join("objects").is_dir());
    // People read first what was folded, what it takes on disk now, and what that saves.
    let disk = stats["disk_bytes"].as_u64().unwrap();
    assert_eq!(stats["saved_bytes"], logical as i64 - disk as i64);
    let human = env.run("ctxfold", ["stats"]).ok().stdout_text();
    let lead: Vec<&str> = human.lines().take(3).collect();
    let size = ctxfold::cli::human::bytes;
    let n = homes.sessions.len() + 1;
    assert_eq!(
        lead[0],
        format!(
            "folded             {}: {n} sessions and 1 earlier or conflicting version",
            size(logical)
        )
    );
    assert_eq!(lead[1], format!("on disk now        {}", size(disk)));
    assert!(
        lead[2].starts_with(&format!("saved              {} (", size(logical - disk))),
        "{human}"
    );
}

#[test]
fn stats_says_when_a_store_saves_nothing_yet() {
    let env = Env::new();
    let one = env.path("one.jsonl");
    fs::write(&one, b"{\"a\":1}\n").unwrap();
    env.run("ctxfold", ["fold", "--apply", one.to_str().unwrap()])
        .ok();
    let human = env.run("ctxfold", ["stats"]).ok().stdout_text();
    assert!(
        human.starts_with("folded             8 B: 1 session\n"),
        "{human}"
    );
    assert!(
        human
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("saved              nothing yet: the store takes "),
        "{human}"
    );
}

#[test]
fn a_file_that_is_not_json_lines_is_refused_unless_forced_and_seeds_skip_it() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let notes = env.path("notes.txt");
    fs::write(&notes, b"buy milk\nand bread\n").unwrap();
    let notes = notes.to_str().unwrap();
    let run = env
        .run("ctxfold", ["fold", "--apply", notes])
        .fails(3)
        .one_line_error("notes.txt: not JSON Lines (its first line is not a JSON object)");
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout_text());
    assert!(!env.store.exists());

    // --force folds it as opaque bytes, and it comes back byte for byte.
    env.run("ctxfold", ["fold", "--apply", "--force", notes])
        .ok();
    let to = env.path("back.txt");
    env.run(
        "ctxfold",
        ["restore", "notes.txt", "--to", to.to_str().unwrap()],
    )
    .ok();
    assert_eq!(fs::read(&to).unwrap(), b"buy milk\nand bread\n");
    // JSON Lines that no agent wrote fold without --force.
    let events = env.path("events.jsonl");
    fs::write(&events, b"\n{\"event\":1}\nnot json\n").unwrap();
    env.run("ctxfold", ["fold", "--apply", events.to_str().unwrap()])
        .ok();

    // Seeds skip both with a note, every later run, and index the real ledgers.
    env.run("ctxfold", ["fold", "--apply", "--no-seeds"]).ok();
    for _ in 0..2 {
        let run = env.run("ctxfold", ["seeds"]).ok();
        for skipped in ["notes.txt", "events"] {
            assert!(
                run.stderr.contains(&format!(
                    "skipped {skipped}: not a Codex, Pi or Claude Code session ledger"
                )),
                "{}",
                run.stderr
            );
        }
        assert_eq!(
            run.stdout_text().lines().count(),
            homes.sessions.len(),
            "{}",
            run.stdout_text()
        );
    }
    // Named, it is refused.
    env.run("ctxfold", ["seeds", "notes.txt"]).fails(3);
}

#[test]
fn a_fold_that_loses_a_remove_source_race_reports_the_session_folded() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let placed = homes.archived().find(|s| s.path == s.rollout_path).unwrap();
    let path = placed.path.to_str().unwrap();
    // Between this fold's read and its commit, another fold commits the session and removes it.
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        "env -u CTXFOLD_TEST_AFTER_READ $CTXFOLD_EXEC_PATH/ctxfold fold --apply --remove-source \"$CTXFOLD_TEST_SOURCE\" >/dev/null",
    );
    let run = env
        .run(
            "ctxfold",
            ["fold", "--apply", "--remove-source", "--json", path],
        )
        .ok();
    assert!(!placed.path.exists());
    let report = &json_lines(&run.stdout)[0];
    assert_eq!(report["action"], "up_to_date", "{report}");
    assert_eq!(report["source"], "gone", "{report}");
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    let to = env.path("back.jsonl");
    env.run(
        "ctxfold",
        ["restore", &placed.id, "--to", to.to_str().unwrap()],
    )
    .ok();
    assert!(fs::read(&to).unwrap() == placed.bytes);
}

#[test]
fn a_session_another_run_folds_longer_meanwhile_is_not_replaced_by_the_shorter_fold() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    let placed = homes
        .active()
        .find(|s| s.path.to_str().unwrap().contains("/rollout-"))
        .unwrap();
    let path = placed.path.to_str().unwrap();
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    let line = |n: u32| {
        format!(
            "{{\"timestamp\":\"2026-06-01T00:00:0{n}.000Z\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"agent_message\",\"message\":\"turn {n}\"}}}}\n"
        )
    };
    // The session grows by a line; elsewhere, a copy of it by two, which another run folds
    // between this fold's read and its commit.
    let grown = [&placed.bytes[..], line(1).as_bytes()].concat();
    let longer = [&grown[..], line(2).as_bytes()].concat();
    fs::write(&placed.path, &grown).unwrap();
    let copy = env.path("elsewhere").join(placed.path.file_name().unwrap());
    fs::create_dir_all(copy.parent().unwrap()).unwrap();
    fs::write(&copy, &longer).unwrap();
    env.set(
        "CTXFOLD_TEST_AFTER_READ",
        format!(
            "env -u CTXFOLD_TEST_AFTER_READ $CTXFOLD_EXEC_PATH/ctxfold fold --apply {} >/dev/null",
            copy.display()
        ),
    );
    let run = env.run("ctxfold", ["fold", "--apply", "--json", path]);
    let report = &json_lines(&run.fails(3).stdout)[0];
    assert_eq!(report["action"], "unsettled", "{report}");
    // The longer fold stands, and the version both grew from is kept.
    let to = env.path("back.jsonl");
    let to = to.to_str().unwrap();
    env.run("ctxfold", ["restore", &placed.id, "--to", to]).ok();
    assert!(fs::read(to).unwrap() == longer);
    let kept = env.path("kept.jsonl");
    let kept = kept.to_str().unwrap();
    let first = format!("{}@1", placed.id);
    env.run("ctxfold", ["restore", &first, "--to", kept]).ok();
    assert!(fs::read(kept).unwrap() == placed.bytes);
}

#[test]
fn older_than_lets_go_of_active_sources_unchanged_that_long() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // Pi keeps no archive: every Pi session is active. One of them, and one active Codex
    // rollout, have not changed for ten days; the other active sessions just changed.
    let ten_days = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
    let pi: Vec<_> = homes
        .active()
        .filter(|p| p.path.starts_with(&homes.pi))
        .collect();
    let codex: Vec<_> = homes
        .active()
        .filter(|p| p.path.starts_with(&homes.codex))
        .collect();
    let old = [pi[0], codex[0]];
    for placed in old {
        fs::File::options()
            .append(true)
            .open(&placed.path)
            .unwrap()
            .set_modified(ten_days)
            .unwrap();
    }
    let fresh: Vec<_> = homes
        .active()
        .filter(|p| !old.iter().any(|o| o.id == p.id))
        .collect();
    assert!(!fresh.is_empty());

    // Bad ages are usage errors, and --older-than needs --remove-source.
    let bad = env
        .run(
            "ctxfold",
            ["fold", "--remove-source", "--older-than", "7 days"],
        )
        .fails(2)
        .fails(2);
    assert!(
        bad.stderr.contains("the unit must be s, m, h, d or w"),
        "{}",
        bad.stderr
    );
    env.run("ctxfold", ["fold", "--older-than", "7d"]).fails(2);
    env.run(
        "ctxfold",
        [
            "fold",
            "--remove-source",
            "--older-than",
            "7d",
            "--allow-active",
        ],
    )
    .fails(2);

    // The dry run says what it would remove, and removes nothing.
    let dry = env
        .run(
            "ctxfold",
            ["fold", "--remove-source", "--older-than", "7d", "--json"],
        )
        .ok();
    let lines = json_lines(&dry.stdout);
    for placed in &homes.sessions {
        let line = lines
            .iter()
            .find(|l| l["id"] == placed.id.as_str())
            .unwrap();
        let expected = match placed.archived || old.iter().any(|o| o.id == placed.id) {
            true => "would_remove",
            false => "kept_active",
        };
        assert_eq!(line["source"], expected, "{}", placed.id);
        assert!(placed.path.exists());
    }
    let total = &lines.last().unwrap()["total"];
    assert_eq!(total["kept_active"], fresh.len());
    assert_eq!(total["removed"], homes.sessions.len() - fresh.len());

    let run = env
        .run(
            "ctxfold",
            ["fold", "--apply", "--remove-source", "--older-than", "7d"],
        )
        .ok();
    for placed in homes.archived().chain(old) {
        assert!(!placed.path.exists(), "{} kept", placed.path.display());
    }
    for placed in &fresh {
        assert!(placed.path.exists(), "{} removed", placed.path.display());
    }
    assert!(
        run.stderr.contains(&format!(
            "kept the sources of {} active session",
            fresh.len()
        )),
        "{}",
        run.stderr
    );
    // What was removed restores.
    for placed in old {
        env.run("ctxfold", ["restore", &placed.id]).ok();
        assert!(fs::read(&placed.rollout_path).unwrap() == placed.bytes);
    }
}

#[test]
fn totals_say_folded_after_apply_and_paths_under_home_read_as_tilde() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // The agent homes under HOME, as they are on a machine.
    let home = homes.codex.parent().unwrap().to_path_buf();
    env.set("HOME", &home);
    let dry = env.run("ctxfold", ["fold"]).ok().stdout_text();
    let n = homes.sessions.len();
    assert!(
        dry.contains(&format!("total: {n} sessions: {n} to fold (")),
        "{dry}"
    );
    let applied = env.run("ctxfold", ["fold", "--apply"]).ok().stdout_text();
    assert!(
        applied.contains(&format!("total: {n} sessions: {n} folded (")),
        "{applied}"
    );
    let status = env.run("ctxfold", ["status", "-v"]).ok().stdout_text();
    let lines = applied.lines().filter(|l| !l.starts_with("total:"));
    for line in lines.chain(status.lines()) {
        assert!(line.contains(" ~/"), "{line}");
        assert!(!line.contains(home.to_str().unwrap()), "{line}");
    }
    // One session: no plural; --json keeps full paths.
    let one = homes
        .active()
        .find(|p| p.path.starts_with(&homes.codex))
        .unwrap();
    fs::write(&one.path, [one.bytes.as_slice(), b"{}\n"].concat()).unwrap();
    let run = env
        .run("ctxfold", ["fold", "--apply", one.path.to_str().unwrap()])
        .ok()
        .stdout_text();
    assert!(
        run.contains("total: 1 session: 1 folded (0 new, 1 grown"),
        "{run}"
    );
    let json = env
        .run("ctxfold", ["fold", "--json", one.path.to_str().unwrap()])
        .ok();
    assert_eq!(
        json_lines(&json.stdout)[0]["path"],
        one.path.to_str().unwrap()
    );
}

#[test]
fn a_fold_with_seeds_indexes_what_a_fold_without_left_unindexed() {
    homes::each_set(a_fold_with_seeds_indexes_what_a_fold_without_left_unindexed_in);
}

fn a_fold_with_seeds_indexes_what_a_fold_without_left_unindexed_in(env: Env, homes: Homes) {
    env.run("ctxfold", ["fold", "--apply", "--no-seeds"]).ok();
    let unindexed: Vec<&str> = homes
        .sessions
        .iter()
        .filter(|s| env.stored_seed_index(&env.store, &s.id).is_empty())
        .map(|s| s.id.as_str())
        .collect();
    assert!(unindexed.len() >= 4, "{unindexed:?}");
    // Up to date, each is indexed from the store: the records a fold with seeds gives.
    let run = env.run("ctxfold", ["fold", "--apply", "--json"]).ok();
    let reports = json_lines(&run.stdout);
    let direct = env.path("direct");
    env.run(
        "ctxfold",
        ["fold", "--apply", "--store", direct.to_str().unwrap()],
    )
    .ok();
    for id in &unindexed {
        let report = reports.iter().find(|r| r["id"] == *id).unwrap();
        assert_eq!(report["action"], "up_to_date", "{report}");
        assert!(report["seed_records"].as_u64().unwrap() >= 1, "{report}");
        let stored = env.stored_seed_index(&env.store, id);
        assert_eq!(stored, env.stored_seed_index(&direct, id), "{id}");
    }
    // Then there is nothing left to index: nothing is read again, nothing written.
    let seeds = Env::snapshot(&env.store.join("seeds"));
    let run = env.run("ctxfold", ["fold", "--apply", "--json"]).ok();
    let reports = json_lines(&run.stdout);
    assert!(
        reports.iter().all(|r| r["seed_records"].is_null()),
        "{}",
        run.stdout_text()
    );
    assert_eq!(Env::snapshot(&env.store.join("seeds")), seeds);
    let human = env.run("ctxfold", ["fold", "--apply", "--no-seeds"]).ok();
    assert!(!human.stdout_text().contains("indexed:"));
}

#[test]
fn a_pi_sessions_title_is_read_when_it_is_folded_and_follows_what_is_appended() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // The second Pi session: its title is its first user message, and it holds no session_info.
    let placed = (homes.sessions.iter())
        .filter(|s| s.path.starts_with(&homes.pi))
        .nth(1)
        .unwrap();
    let path = placed.path.to_str().unwrap();
    let manifest = env.store.join(format!("manifests/{}.json", placed.id));
    let title = || -> serde_json::Value {
        let manifest: serde_json::Value =
            serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
        manifest["session"]["title"].clone()
    };
    let append = |line: &str| {
        let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
        writeln!(file, "{line}").unwrap();
    };
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    assert_eq!(title(), homes.set.titles[1]);
    // Named, renamed, the name cleared: each fold of it grown gives the title the whole file has.
    for (line, expected) in [
        (
            r#"{"type":"session_info","id":"t1","name":"Named once"}"#,
            "Named once",
        ),
        (
            r#"{"type":"message","id":"t2","message":{"role":"user","content":"a later ask"}}"#,
            "Named once",
        ),
        (
            r#"{"type":"session_info","id":"t3","name":"Named again"}"#,
            "Named again",
        ),
        (r#"{"type":"session_info","id":"t4"}"#, homes.set.titles[1]),
    ] {
        append(line);
        let run = env.run("ctxfold", ["fold", "--apply", "--json", path]).ok();
        assert_eq!(json_lines(&run.stdout)[0]["state"], "grown");
        assert_eq!(title(), expected, "after {line}");
        let listed = env.run("ctxfold-list-sessions", [path]).ok();
        assert_eq!(json_lines(&listed.stdout)[0]["title"], expected);
    }
    // Only the appended lines are read for it: a title planted in the folded version stays while
    // they say nothing of one.
    let mut planted: serde_json::Value =
        serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
    planted["session"]["title"] = "Planted".into();
    fs::write(&manifest, serde_json::to_vec(&planted).unwrap()).unwrap();
    append(r#"{"type":"message","id":"t5","message":{"role":"user","content":"more"}}"#);
    env.run("ctxfold", ["fold", "--apply", path]).ok();
    assert_eq!(title(), "Planted");
}

/// A source another process holds open for writing (an agent idle in its terminal holds its
/// session) is kept whatever `--remove-source` allows, its line naming the process and one note
/// counting them; its session is folded all the same, and the source goes once it is closed.
#[test]
fn remove_source_keeps_a_source_another_process_holds_open_for_writing() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    // Once its plain sibling is folded away, it would be a session of its own.
    fs::remove_file(&homes.shadowed).unwrap();
    let held = homes.active().next().unwrap();
    let script = format!(
        "exec 3>>'{}'; echo ready; exec sleep 60",
        held.path.display()
    );
    let mut agent = std::process::Command::new("sh")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(agent.stdout.as_mut().unwrap()),
        &mut ready,
    )
    .unwrap();
    let args = ["fold", "--apply", "--remove-source", "--allow-active"];
    let run = env.run("ctxfold", args).ok();
    let line = (run.stdout_text().lines())
        .find(|l| l.ends_with(held.path.to_str().unwrap()))
        .map(str::to_string)
        .unwrap();
    let holder = format!("source kept: process {} (sleep) holds it open", agent.id());
    assert!(line.contains(&holder), "{line}");
    assert!(held.path.exists());
    let noted: Vec<&str> = (run.stderr.lines())
        .filter(|l| l.contains("another process holds open for writing"))
        .collect();
    assert_eq!(noted.len(), 1, "{}", run.stderr);
    assert!(
        noted[0].contains("kept the sources of 1 session"),
        "{}",
        run.stderr
    );
    for placed in homes.active().filter(|p| p.id != held.id) {
        assert!(!placed.path.exists(), "{} kept", placed.path.display());
    }
    let restored = env.path("held.jsonl");
    let to = restored.to_str().unwrap();
    env.run("ctxfold", ["restore", &held.id, "--to", to]).ok();
    assert!(fs::read(&restored).unwrap() == held.bytes);
    agent.kill().unwrap();
    agent.wait().unwrap();
    env.run("ctxfold", args).ok();
    assert!(!held.path.exists());
}
