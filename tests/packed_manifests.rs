//! Packed manifests: gc moves loose manifests into `manifests/packed.json` and the objects it names,
//! every command reads them there, a loose one stands over a packed one, fsck checks the table,
//! unpack writes them back loose, and a sync's remote holds them as plain JSON.

mod common;
mod homes;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::Env;
use homes::{Homes, json_lines};

/// The store's manifest files on disk (loose ones and the table), relative to `manifests/`.
fn manifest_files(store: &Path) -> Vec<String> {
    let dir = store.join("manifests");
    let mut found: Vec<String> = Env::snapshot(&dir)
        .into_iter()
        .filter(|(p, _)| p.is_file())
        .map(|(p, _)| p.strip_prefix(&dir).unwrap().display().to_string())
        .collect();
    found.sort();
    found
}

/// Each session's manifest as `cat-manifest --json` prints it.
fn printed(env: &Env, homes: &Homes) -> Vec<Vec<u8>> {
    (homes.sessions.iter())
        .map(|s| {
            env.run("ctxfold-cat-manifest", ["--json", &s.id])
                .ok()
                .stdout
        })
        .collect()
}

/// Every session restores to its bytes, is listed, and fsck --full finds nothing.
fn sound(env: &Env, homes: &Homes) {
    for placed in &homes.sessions {
        let run = env.run("ctxfold-cat-manifest", [&placed.id]).ok();
        assert!(run.stdout == placed.bytes, "{} differs", placed.id);
    }
    let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
    assert_eq!(listed.len(), homes.sessions.len());
    env.run("ctxfold", ["fsck", "--full"]).ok();
}

fn gc(env: &Env) -> common::Run {
    env.run("ctxfold", ["gc", "--apply", "--prune=now"]).ok()
}

/// Fold every set, then gc: no manifest file per session is left, only the table.
fn folded_and_packed(test: impl Fn(Env, Homes)) {
    homes::each_set(|env, homes| {
        env.run("ctxfold", ["fold", "--apply"]).ok();
        test(env, homes);
    });
}

#[test]
fn gc_packs_every_manifest_into_one_table_and_every_command_reads_it() {
    folded_and_packed(|env, homes| {
        let before = printed(&env, &homes);
        let loose = manifest_files(&env.store);
        assert_eq!(loose.len(), homes.sessions.len(), "{loose:?}");
        let dry = env.run("ctxfold", ["gc"]).ok();
        assert!(
            dry.stdout_text().contains(&format!(
                "would pack {} loose manifests into manifests/packed.json",
                homes.sessions.len()
            )),
            "{}",
            dry.stdout_text()
        );
        assert_eq!(manifest_files(&env.store), loose, "a dry run packs nothing");
        gc(&env);
        assert_eq!(manifest_files(&env.store), ["packed.json"]);
        assert_eq!(printed(&env, &homes), before, "byte for byte as committed");
        sound(&env, &homes);
        let placed = &homes.sessions[0];
        let shown = env.run("ctxfold", ["show", &placed.id]).ok();
        assert!(!shown.stdout.is_empty());
        env.run("ctxfold", ["diff", &placed.id]).ok();
        env.run("ctxfold", ["log"]).ok();
        env.run("ctxfold", ["status"]).ok();
        let to = env.path("all");
        env.run(
            "ctxfold",
            ["restore", "--all", "--to", &format!("{}/", to.display())],
        )
        .ok();
        // A second gc has nothing to pack and keeps every body.
        let again = gc(&env);
        assert!(
            !again.stdout_text().contains("packed"),
            "{}",
            again.stdout_text()
        );
        sound(&env, &homes);
        // A fold of a session packed is up to date; one grown commits loose, over the packed.
        let fold = env.run("ctxfold", ["fold", "--apply"]).ok();
        assert!(
            fold.stdout_text().contains("0 folded"),
            "{}",
            fold.stdout_text()
        );
        assert_eq!(manifest_files(&env.store), ["packed.json"]);
    });
}

#[test]
fn a_loose_manifest_stands_over_a_packed_one_until_gc_packs_it() {
    folded_and_packed(|env, homes| {
        gc(&env);
        let id = &homes.sessions[0].id;
        let packed = env.run("ctxfold-cat-manifest", ["--json", id]).ok().stdout;
        let mut manifest: serde_json::Value = serde_json::from_slice(&packed).unwrap();
        manifest["session"]["title"] = "a title written loose".into();
        let loose = serde_json::to_vec_pretty(&manifest).unwrap();
        let path = env.store.join(format!("manifests/{id}.json"));
        fs::write(&path, &loose).unwrap();
        let printed = env.run("ctxfold-cat-manifest", ["--json", id]).ok().stdout;
        assert_eq!(printed, loose);
        let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
        let row = listed.iter().find(|l| l["id"] == id.as_str()).unwrap();
        assert_eq!(row["title"], "a title written loose", "{row}");
        assert_eq!(listed.len(), homes.sessions.len(), "listed once");
        env.run("ctxfold", ["fsck", "--full"]).ok();
        gc(&env);
        assert_eq!(manifest_files(&env.store), ["packed.json"]);
        let printed = env.run("ctxfold-cat-manifest", ["--json", id]).ok().stdout;
        assert_eq!(printed, loose, "gc packed the loose one, as it was");
        sound(&env, &homes);
    });
}

#[test]
fn generations_are_packed_and_restore_by_number() {
    folded_and_packed(|env, homes| {
        let placed = homes.active().next().unwrap().clone();
        let mut grown = placed.bytes.clone();
        grown.extend_from_slice(b"{\"type\":\"event_msg\",\"payload\":{\"grown\":1}}\n");
        fs::write(&placed.path, &grown).unwrap();
        env.run("ctxfold", ["fold", "--apply"]).ok();
        gc(&env);
        assert_eq!(manifest_files(&env.store), ["packed.json"]);
        let kept = env.run("ctxfold", ["ls", "--generations"]).ok();
        assert!(
            kept.stdout_text().contains(&format!("{}@1", placed.id)),
            "{}",
            kept.stdout_text()
        );
        let to = env.path("old.jsonl");
        let spec = format!("{}@1", placed.id);
        env.run("ctxfold", ["restore", &spec, "--to", to.to_str().unwrap()])
            .ok();
        assert!(fs::read(&to).unwrap() == placed.bytes);
        let json = env.run("ctxfold-cat-manifest", ["--json", &spec]).ok();
        let generation: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(generation["source"]["bytes"], placed.bytes.len());
        // The session grows again: the packed current manifest is kept as a generation.
        let once = grown.clone();
        grown.extend_from_slice(b"{\"type\":\"event_msg\",\"payload\":{\"grown\":2}}\n");
        fs::write(&placed.path, &grown).unwrap();
        env.run("ctxfold", ["fold", "--apply"]).ok();
        let to = env.path("middle.jsonl");
        env.run("ctxfold", ["restore", &spec, "--to", to.to_str().unwrap()])
            .ok();
        assert!(fs::read(&to).unwrap() == once);
        gc(&env);
        env.run("ctxfold", ["fsck", "--full"]).ok();
        // Removing every generation drops them from the table.
        env.run(
            "ctxfold",
            ["gc", "--apply", "--prune=now", "--prune-generations"],
        )
        .ok();
        let kept = env.run("ctxfold", ["ls", "--generations"]).ok();
        assert!(
            !kept.stdout_text().contains(&spec),
            "{}",
            kept.stdout_text()
        );
        env.run("ctxfold", ["rm", "--apply", &placed.id]).ok();
        let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
        assert_eq!(listed.len(), homes.sessions.len() - 1);
        env.run("ctxfold", ["fsck", "--full"]).ok();
    });
}

/// Rewrite the table's lines with `change` (each `<sha> <name>`).
fn lie(env: &Env, change: impl Fn(Vec<String>) -> Vec<String>) {
    let table = env.store.join("manifests/packed.json");
    let text = fs::read_to_string(&table).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let head = lines.remove(0);
    let mut out = vec![head];
    out.extend(change(lines));
    fs::write(&table, out.join("\n") + "\n").unwrap();
}

#[test]
fn fsck_catches_a_table_that_lies() {
    folded_and_packed(|env, homes| {
        gc(&env);
        let table = env.store.join("manifests/packed.json");
        let good = fs::read(&table).unwrap();
        let missing = "0".repeat(64);
        // A missing body.
        lie(&env, |mut lines| {
            let name = lines[0].split_once(' ').unwrap().1.to_string();
            lines[0] = format!("{missing} {name}");
            lines
        });
        let run = env.run("ctxfold", ["fsck"]).fails(4);
        assert!(
            run.stdout_text().contains("bad manifest"),
            "{}",
            run.stdout_text()
        );
        // A body of another session.
        fs::write(&table, &good).unwrap();
        lie(&env, |lines| {
            let (a, b) = (
                lines[0].split_once(' ').unwrap(),
                lines[1].split_once(' ').unwrap(),
            );
            let mut out = vec![format!("{} {}", b.0, a.1), format!("{} {}", a.0, b.1)];
            out.extend(lines[2..].iter().cloned());
            out
        });
        let run = env.run("ctxfold", ["fsck"]).fails(4);
        assert!(
            run.stdout_text().contains("names a body of session"),
            "{}",
            run.stdout_text()
        );
        let first = homes.sessions.iter().map(|s| &s.id).min().unwrap();
        env.run("ctxfold-cat-manifest", [first.as_str()])
            .fails(4)
            .one_line_error("names a body of session");
        // A sha that is no sha: the table does not read; fsck says where.
        fs::write(&table, &good).unwrap();
        lie(&env, |mut lines| {
            lines[0] = lines[0].replacen(|c: char| c.is_ascii_hexdigit(), "g", 1);
            lines
        });
        let run = env.run("ctxfold", ["fsck"]).fails(4);
        assert!(
            run.stdout_text().contains("manifests/packed.json:2: "),
            "{}",
            run.stdout_text()
        );
        env.run("ctxfold", ["ls"])
            .fails(4)
            .one_line_error("manifests/packed.json:2:");
        // gc removes nothing while the table lies.
        env.run("ctxfold", ["gc", "--apply", "--prune=now"])
            .fails(4);
        fs::write(&table, &good).unwrap();
        sound(&env, &homes);
    });
}

#[test]
fn unpack_writes_packed_manifests_back_loose() {
    folded_and_packed(|env, homes| {
        let committed: Vec<(String, Vec<u8>)> = Env::snapshot(&env.store.join("manifests"))
            .into_iter()
            .filter(|(p, _)| p.is_file())
            .map(|(p, b)| (p.file_name().unwrap().to_string_lossy().into_owned(), b))
            .collect();
        gc(&env);
        let copy = env.path("plain");
        env.run("ctxfold", ["unpack", "--to", copy.to_str().unwrap()])
            .ok();
        let unpacked = |store: &Path| -> Vec<(String, Vec<u8>)> {
            Env::snapshot(&store.join("manifests"))
                .into_iter()
                .filter(|(p, _)| p.is_file())
                .map(|(p, b)| (p.file_name().unwrap().to_string_lossy().into_owned(), b))
                .collect()
        };
        assert_eq!(unpacked(&copy), committed);
        assert_eq!(
            manifest_files(&env.store),
            ["packed.json"],
            "--to leaves the store as it is"
        );
        env.run("ctxfold", ["unpack"]).ok();
        assert_eq!(unpacked(&env.store), committed);
        sound(&env, &homes);
    });
}

fn git(args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[test]
fn a_packed_store_syncs_as_plain_manifests_and_clones() {
    folded_and_packed(|mut env, homes| {
        gc(&env);
        let remote = env.path("remote.git");
        git(&["init", "--bare", "--quiet", remote.to_str().unwrap()]);
        env.run(
            "ctxfold",
            ["remote", "add", "origin", remote.to_str().unwrap()],
        )
        .ok();
        env.run("ctxfold", ["sync"]).ok();
        // A git clone of the remote holds one contract manifest per session, no table.
        let checkout = env.path("checkout");
        git(&[
            "clone",
            "--quiet",
            "-b",
            "ctxfold",
            remote.to_str().unwrap(),
            checkout.to_str().unwrap(),
        ]);
        let mut files: Vec<PathBuf> = fs::read_dir(checkout.join("manifests"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert_eq!(files.len(), homes.sessions.len(), "{files:?}");
        for placed in &homes.sessions {
            let file = checkout.join(format!("manifests/{}.json", placed.id));
            let ours = env.run("ctxfold-cat-manifest", ["--json", &placed.id]).ok();
            assert_eq!(fs::read(file).unwrap(), ours.stdout);
        }
        // A clone restores every session, and syncs back with nothing to add.
        let other = env.path("other-store");
        env.set("CTXFOLD_STORE", &other);
        env.run("ctxfold", ["clone", remote.to_str().unwrap()]).ok();
        sound(&env, &homes);
        gc(&env);
        assert_eq!(manifest_files(&other), ["packed.json"]);
        let sync = env.run("ctxfold", ["sync"]).ok();
        assert!(
            sync.stdout_text().contains("0 sessions added"),
            "{}",
            sync.stdout_text()
        );
        sound(&env, &homes);
    });
}

#[test]
fn a_fold_that_leaves_many_manifests_loose_packs_them() {
    let env = Env::new();
    let dir = env.path("many");
    fs::create_dir_all(&dir).unwrap();
    let sessions: Vec<(PathBuf, Vec<u8>)> = (0..260)
        .map(|n| {
            let path = dir.join(format!("s{n:03}.jsonl"));
            let bytes = format!("{{\"n\":{n},\"text\":\"session {n}\"}}\n").into_bytes();
            fs::write(&path, &bytes).unwrap();
            (path, bytes)
        })
        .collect();
    let (first, rest) = sessions.split_at(200);
    let paths = |some: &[(PathBuf, Vec<u8>)]| -> Vec<String> {
        let mut args = vec!["fold".to_string(), "--apply".into(), "-q".into()];
        args.extend(some.iter().map(|(p, _)| p.display().to_string()));
        args
    };
    // Below the count a fold packs at: loose, as any Fold V1 reader expects them.
    env.run("ctxfold", paths(first)).ok();
    assert_eq!(manifest_files(&env.store).len(), 200);
    env.run("ctxfold", paths(rest)).ok();
    assert_eq!(manifest_files(&env.store), ["packed.json"]);
    let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
    assert_eq!(listed.len(), sessions.len());
    for row in listed.iter().step_by(37) {
        let id = row["id"].as_str().unwrap();
        let restored = env.run("ctxfold-cat-manifest", [id]).ok().stdout;
        assert!(sessions.iter().any(|(_, b)| *b == restored), "{id}");
    }
    env.run("ctxfold", ["fsck", "--full"]).ok();
}

/// What a reader of the contract that knows no packed manifests does with `manifests/`: takes
/// every `*.json` file there for a manifest and refuses to gc while one is not.
fn contract_manifests_are_all_valid(store: &Path) -> Result<usize, String> {
    let mut count = 0;
    for entry in fs::read_dir(store.join("manifests")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let value: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if value["version"] != 1 || value["kind"] != "fold-v1" {
            return Err(format!("{}: not a fold-v1 manifest", path.display()));
        }
        count += 1;
    }
    Ok(count)
}

#[test]
fn an_older_reader_takes_the_table_for_an_invalid_manifest_and_so_will_not_gc() {
    folded_and_packed(|env, homes| {
        assert_eq!(
            contract_manifests_are_all_valid(&env.store),
            Ok(homes.sessions.len())
        );
        gc(&env);
        let why = contract_manifests_are_all_valid(&env.store).unwrap_err();
        assert!(why.contains("manifests/packed.json"), "{why}");
        // Its first line tells the person that reader sends there what it is.
        let table = fs::read_to_string(env.store.join("manifests/packed.json")).unwrap();
        let head: serde_json::Value = serde_json::from_str(table.lines().next().unwrap()).unwrap();
        assert_eq!(head["format"], "ctxfold packed manifests v1");
        assert!(head["note"].as_str().unwrap().contains("ctxfold unpack"));
        // So no session can be named as the table is.
        let file = env.path("packed.jsonl");
        fs::write(&file, b"{\"a\":1}\n").unwrap();
        env.run("ctxfold", ["fold", "--apply", file.to_str().unwrap()])
            .fails(3)
            .one_line_error("\"packed\": it is reserved");
        assert_eq!(manifest_files(&env.store), ["packed.json"]);
        // Unpacked, it is a store of the contract again.
        env.run("ctxfold", ["unpack"]).ok();
        assert_eq!(
            contract_manifests_are_all_valid(&env.store),
            Ok(homes.sessions.len())
        );
        sound(&env, &homes);
    });
}

#[test]
fn a_table_the_first_packing_ctxfold_wrote_is_read_and_moved_by_the_next_gc() {
    folded_and_packed(|env, homes| {
        gc(&env);
        let dir = env.store.join("manifests");
        let table = fs::read_to_string(dir.join("packed.json")).unwrap();
        let (_, lines) = table.split_once('\n').unwrap();
        fs::write(
            dir.join("packed"),
            format!("# ctxfold packed manifests v1\n{lines}"),
        )
        .unwrap();
        fs::remove_file(dir.join("packed.json")).unwrap();
        sound(&env, &homes);
        assert_eq!(
            manifest_files(&env.store),
            ["packed"],
            "reading moves nothing"
        );
        gc(&env);
        assert_eq!(manifest_files(&env.store), ["packed.json"]);
        let moved = fs::read_to_string(dir.join("packed.json")).unwrap();
        assert_eq!(moved, table, "the same table, where older readers see it");
        sound(&env, &homes);
    });
}

#[test]
fn listings_read_packed_heads_from_their_cache_and_say_the_same_without_it() {
    folded_and_packed(|env, _homes| {
        let listings = |env: &Env| -> Vec<Vec<u8>> {
            [["ls", "--json"], ["log", "--json"], ["status", "--json"]]
                .iter()
                .map(|args| env.run("ctxfold", args).ok().stdout)
                .collect()
        };
        let loose = listings(&env);
        gc(&env);
        let cache = env.store.join("cache/heads.jsonl");
        assert!(!cache.exists(), "gc writes no heads");
        assert_eq!(listings(&env), loose, "packed, read whole");
        let written = fs::read_to_string(&cache).unwrap();
        let table = fs::read_to_string(env.store.join("manifests/packed.json")).unwrap();
        assert_eq!(
            written.lines().count(),
            table.lines().count() - 1,
            "one head per packed manifest"
        );
        assert!(!written.contains("\"parts\""), "{written}");
        assert_eq!(listings(&env), loose, "packed, from the cache");
        // A damaged cache is read around, and written again whole.
        fs::write(
            &cache,
            format!("not json\n{}", &written[..written.len() / 2]),
        )
        .unwrap();
        assert_eq!(listings(&env), loose, "from a damaged cache");
        assert_eq!(fs::read_to_string(&cache).unwrap(), written);
        // Heads of bodies the table no longer names go at the next save.
        env.run("ctxfold", ["unpack"]).ok();
        assert_eq!(listings(&env), loose, "loose again");
        assert_eq!(fs::read_to_string(&cache).unwrap(), "");
    });
}
