//! Folding with the plumbing as bench/run does: ctxfold-train-dict (a dictionary trained on the
//! store's objects, used by later writes, named in their manifests, used again by every reader;
//! retraining never strands an object), and Codex's `.jsonl.zst` archives folded as plain JSONL.

mod common;

use common::{Env, fixture_files};

fn fold(env: &Env, file: &std::path::Path, id: &str) -> Vec<u8> {
    let parts = env
        .run(
            "ctxfold-split",
            [std::ffi::OsStr::new("--write"), file.as_os_str()],
        )
        .ok()
        .stdout;
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", id, "--source", file.to_str().unwrap()],
        &parts,
    )
    .ok();
    parts
}

fn manifest(env: &Env, id: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(env.store.join(format!("manifests/{id}.json"))).unwrap())
        .unwrap()
}

#[test]
fn folds_after_training_name_the_dictionary_and_restore_byte_for_byte() {
    let env = Env::new();
    let files = fixture_files();
    fold(&env, &files[0], "before");
    // Too few small objects to learn from: a clear refusal, nothing registered.
    env.run("ctxfold-train-dict", ["--max-object-bytes", "10"])
        .fails(3)
        .one_line_error("too few to train");
    assert!(!env.store.join("dictionaries").exists());
    for (i, file) in files.iter().enumerate().skip(1) {
        fold(&env, file, &format!("plain{i}"));
    }
    let first = env
        .run("ctxfold-train-dict", ["--max-size", "16384"])
        .ok()
        .stdout_text()
        .trim()
        .to_string();
    assert_eq!(first.len(), 64);
    assert!(env.store.join("dictionaries").join(&first).is_file());
    assert!(
        manifest(&env, "before")["settings"]
            .get("dictionary")
            .is_none()
    );

    // New objects (a session with the other sessions' lines shifted) are written with it.
    let mut shifted = b"{\"type\":\"shifted\"}\n".to_vec();
    for file in &files {
        shifted.extend_from_slice(&std::fs::read(file).unwrap());
    }
    let source = env.path("shifted.jsonl");
    std::fs::write(&source, &shifted).unwrap();
    fold(&env, &source, "after");
    assert_eq!(
        manifest(&env, "after")["settings"]["dictionary"],
        first.as_str()
    );

    // Retrain: the old dictionary stays registered, and every session still restores.
    let second = env
        .run("ctxfold-train-dict", ["--max-size", "8192"])
        .ok()
        .stdout_text()
        .trim()
        .to_string();
    assert_ne!(first, second);
    let out = env.path("restored");
    env.run(
        "ctxfold",
        ["restore", "after", "--to", out.to_str().unwrap()],
    )
    .ok();
    assert_eq!(std::fs::read(&out).unwrap(), shifted);
    let cat = env.run("ctxfold-cat-manifest", ["before"]).ok();
    assert_eq!(cat.stdout, std::fs::read(&files[0]).unwrap());

    // Switching: to none, then back; an unknown dictionary is refused.
    env.run("ctxfold-train-dict", ["--use", "none"]).ok();
    assert!(!env.store.join("dictionaries/CURRENT").exists());
    env.run("ctxfold-train-dict", ["--use", &first]).ok();
    let bogus = "0".repeat(64);
    env.run("ctxfold-train-dict", ["--use", &bogus])
        .fails(1)
        .one_line_error("is not in");
}

#[test]
fn a_manifest_naming_a_missing_dictionary_is_refused() {
    let env = Env::new();
    let file = &fixture_files()[0];
    fold(&env, file, "s");
    let path = env.store.join("manifests/s.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let bogus = "ab".repeat(32);
    let edited = text.replace(
        "\"compression\":\"zstd\"",
        &format!("\"compression\":\"zstd\",\"dictionary\":\"{bogus}\""),
    );
    assert_ne!(edited, text);
    std::fs::write(&path, edited).unwrap();
    env.run("ctxfold-cat-manifest", ["s"])
        .fails(4)
        .one_line_error(&format!("zstd dictionary {bogus} is not in"));
    let unknown = text.replace(
        "\"compression\":\"zstd\"",
        "\"compression\":\"zstd\",\"window_log\":31",
    );
    std::fs::write(&path, unknown).unwrap();
    env.run("ctxfold-cat-manifest", ["s"])
        .fails(4)
        .one_line_error("unknown field `window_log`");
}

#[test]
fn a_codex_zst_archive_folds_as_its_plain_bytes_and_restores_beside_it() {
    let mut env = Env::new();
    let file = &fixture_files()[0];
    let plain = std::fs::read(file).unwrap();
    let name = file.file_name().unwrap().to_str().unwrap();
    let id = &name[name.len() - ".jsonl".len() - 36..name.len() - ".jsonl".len()];
    let codex = env.path("codex");
    let archived = codex.join("archived_sessions");
    std::fs::create_dir_all(&archived).unwrap();
    env.set("CODEX_HOME", &codex);
    let archive = archived.join(format!("{name}.zst"));
    std::fs::write(&archive, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    fold(&env, &archive, id);
    let m = manifest(&env, id);
    assert_eq!(m["source"]["bytes"], plain.len() as u64);
    assert_eq!(
        m["session"]["rollout_path"],
        archived.join(name).to_str().unwrap()
    );
    env.run("ctxfold", ["restore", id]).ok();
    assert_eq!(std::fs::read(archived.join(name)).unwrap(), plain);
}

/// The porcelain with a dictionary: fold writes new objects with the current one and names it, gc
/// keeps every registered dictionary (no manifest part names it), fsck calls it neither missing nor
/// unreferenced, and every session restores.
#[test]
fn fold_uses_the_current_dictionary_and_gc_keeps_it() {
    let env = Env::new();
    let files = fixture_files();
    let (first, rest) = files.split_at(3);
    let folder = env.path("first");
    std::fs::create_dir_all(&folder).unwrap();
    for file in first {
        std::fs::copy(file, folder.join(file.file_name().unwrap())).unwrap();
    }
    env.run(
        "ctxfold",
        [
            std::ffi::OsStr::new("fold"),
            "--apply".as_ref(),
            folder.as_os_str(),
        ],
    )
    .ok();
    let dictionary = env
        .run(
            "ctxfold-train-dict",
            ["--max-size", "16384", "--max-object-bytes", "65536"],
        )
        .ok()
        .stdout_text()
        .trim()
        .to_string();
    let later = env.path("later");
    std::fs::create_dir_all(&later).unwrap();
    for file in rest {
        std::fs::copy(file, later.join(file.file_name().unwrap())).unwrap();
    }
    let run = env
        .run(
            "ctxfold",
            [
                std::ffi::OsStr::new("fold"),
                "--apply".as_ref(),
                "--json".as_ref(),
                later.as_os_str(),
            ],
        )
        .ok();
    let folded: Vec<(String, String)> = run
        .stdout_text()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["action"] == "fold")
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let ids: Vec<&String> = folded.iter().map(|(id, _)| id).collect();
    assert_eq!(ids.len(), rest.len());
    for id in &ids {
        assert_eq!(
            manifest(&env, id)["settings"]["dictionary"],
            dictionary.as_str(),
            "{id}"
        );
    }
    let object = env
        .store
        .join("objects")
        .join(&dictionary[..2])
        .join(format!("{dictionary}.zst"));
    assert!(object.exists());
    let marker = env.store.join("dictionaries").join(&dictionary);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&marker).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the registration is not private");
    env.run("ctxfold", ["gc", "--apply", "--prune=now"]).ok();
    assert!(object.exists(), "gc removed the dictionary");
    let fsck = env.run("ctxfold", ["fsck", "--full"]).ok();
    assert!(
        !fsck.stdout_text().contains(&dictionary),
        "{}",
        fsck.stdout_text()
    );
    for (id, path) in &folded {
        let target = env.path(&format!("{id}.restored"));
        env.run("ctxfold", ["restore", id, "--to", target.to_str().unwrap()])
            .ok();
        assert!(
            std::fs::read(&target).unwrap() == std::fs::read(path).unwrap(),
            "{id} differs"
        );
    }
}
