//! Bad stores and bad input: each gives a one-line error naming the object or file, exit 1 (2 for
//! bad usage), and leaves no restore target, temp file or manifest behind.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::Env;
use serde_json::Value;

/// A store holding one folded session "s" as loose objects (folded, then unpacked), whose only
/// field object is returned.
fn folded(env: &Env) -> (PathBuf, String, u64) {
    let folded = folded_packed(env);
    env.run("ctxfold", ["unpack"]).ok();
    folded
}

/// [`folded`], its objects left in the pack that `split --write` writes.
fn folded_packed(env: &Env) -> (PathBuf, String, u64) {
    let text = format!(
        "{{\"type\":\"x\",\"payload\":{{\"output\":\"{}\"}}}}\n{{\"n\":1}}\n",
        "output line\\n".repeat(800)
    );
    let source = env.path("source.jsonl");
    fs::write(&source, &text).unwrap();
    let parts = fold_by_plumbing(env, &source, "s");
    let field: Value = parts
        .split(|&b| b == b'\n')
        .map(|l| serde_json::from_slice::<Value>(l).unwrap())
        .find(|p| p["kind"] == "field")
        .unwrap();
    let sha = field["object"]["sha256"].as_str().unwrap().to_string();
    let raw = field["object"]["raw_bytes"].as_u64().unwrap();
    (source, sha, raw)
}

/// `source` folded as session `id` by `split --write` (its new objects in a pack of their own)
/// and `write-manifest`: the parts, as split prints them.
fn fold_by_plumbing(env: &Env, source: &Path, id: &str) -> Vec<u8> {
    let parts = env
        .run("ctxfold-split", ["--write", source.to_str().unwrap()])
        .ok()
        .stdout;
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", id, "--source", source.to_str().unwrap()],
        &parts,
    )
    .ok();
    parts
}

fn object_path(store: &Path, sha: &str) -> PathBuf {
    store
        .join("objects")
        .join(&sha[..2])
        .join(format!("{sha}.zst"))
}

/// Restore must fail with `needle` and leave the target directory exactly as it was (empty).
fn restore_fails(env: &Env, needle: &str) {
    let out_dir = env.path("out");
    fs::create_dir_all(&out_dir).unwrap();
    let target = out_dir.join("restored.jsonl");
    env.run(
        "ctxfold",
        ["restore", "s", "--to", target.to_str().unwrap()],
    )
    .fails(4)
    .one_line_error(needle);
    assert_eq!(
        fs::read_dir(&out_dir).unwrap().count(),
        0,
        "restore left something behind"
    );
    env.run("ctxfold-cat-manifest", ["s"])
        .fails(4)
        .one_line_error(needle);
}

#[test]
fn a_flipped_bit_is_caught() {
    let env = Env::new();
    let (_, sha, _) = folded(&env);
    let path = object_path(&env.store, &sha);
    let mut bytes = fs::read(&path).unwrap();
    let last = bytes.len() - 6;
    bytes[last] ^= 0x10;
    fs::write(&path, bytes).unwrap();
    restore_fails(&env, &format!("object {sha} is corrupt"));
    env.run("ctxfold-cat-object", ["-p", &sha])
        .fails(4)
        .one_line_error(&sha);
}

#[test]
fn a_truncated_object_is_caught() {
    let env = Env::new();
    let (_, sha, _) = folded(&env);
    let path = object_path(&env.store, &sha);
    let bytes = fs::read(&path).unwrap();
    fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    restore_fails(&env, &format!("object {sha} is corrupt"));
}

#[test]
fn a_frame_that_inflates_past_its_size_is_an_error_not_an_allocation() {
    let env = Env::new();
    let (_, sha, raw) = folded(&env);
    // A valid frame of far more bytes than the manifest records, under the same name.
    let bomb = zstd::encode_all(&vec![b'A'; (raw as usize) * 1000][..], 19).unwrap();
    fs::write(object_path(&env.store, &sha), bomb).unwrap();
    restore_fails(&env, "inflates past its recorded size");
}

#[test]
fn a_missing_object_is_named() {
    let env = Env::new();
    let (_, sha, _) = folded(&env);
    fs::remove_file(object_path(&env.store, &sha)).unwrap();
    restore_fails(&env, &format!("object {sha} is missing"));
}

#[test]
fn other_manifest_versions_and_kinds_are_refused() {
    for (from, to, needle) in [
        (
            "\"version\":1",
            "\"version\":2",
            "unsupported manifest version 2",
        ),
        ("\"fold-v1\"", "\"fold-v2\"", "kind \"fold-v2\""),
        ("\"residual\"", "\"record\"", "belongs to fold-v2"),
        ("\"bytes\":", "\"bytes\":1", "parts add up to"),
    ] {
        let env = Env::new();
        folded(&env);
        let path = env.store.join("manifests/s.json");
        let text = fs::read_to_string(&path).unwrap();
        fs::write(&path, text.replacen(from, to, 1)).unwrap();
        restore_fails(&env, needle);
        let run = env.run("ctxfold", ["restore", "s", "--to", "/dev/null/x"]);
        assert!(
            run.stderr.contains("manifests/s.json"),
            "error does not name the file: {}",
            run.stderr
        );
    }
}

#[test]
fn a_truncated_manifest_is_refused() {
    let env = Env::new();
    folded(&env);
    let path = env.store.join("manifests/s.json");
    let text = fs::read(&path).unwrap();
    fs::write(&path, &text[..text.len() / 2]).unwrap();
    restore_fails(&env, "invalid manifest");
}

/// Listing a store with a damaged manifest: the others are listed, the damaged one is an error
/// on stderr (as the status, 4, says), not a warning.
#[test]
fn ls_and_log_list_the_others_and_name_a_damaged_manifest_as_an_error() {
    let env = Env::new();
    folded(&env);
    let other = env.path("t.jsonl");
    fs::write(&other, b"{\"t\":1}\n").unwrap();
    env.run(
        "ctxfold",
        ["fold", "--apply", "--force", other.to_str().unwrap()],
    )
    .ok();
    let path = env.store.join("manifests/s.json");
    let text = fs::read(&path).unwrap();
    fs::write(&path, &text[..text.len() / 2]).unwrap();
    for command in ["ls", "log"] {
        let run = env.run("ctxfold", [command]).fails(4);
        let listed = run.stdout_text();
        assert!(
            listed
                .lines()
                .any(|l| l.contains(" t ") || l.starts_with("t ")),
            "{command}: {listed}"
        );
        assert!(
            !listed
                .lines()
                .any(|l| l.contains(" s ") || l.starts_with("s ")),
            "{command}: {listed}"
        );
        let said: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(said.len(), 1, "{command}: {}", run.stderr);
        assert!(
            said[0].starts_with(&format!("ctxfold {command}: error: "))
                && said[0].contains("manifests/s.json: invalid manifest"),
            "{command}: {}",
            run.stderr
        );
    }
}

#[test]
fn unsafe_session_ids_are_refused_before_anything_is_written() {
    let env = Env::new();
    let source = env.path("s.jsonl");
    fs::write(&source, b"{}\n").unwrap();
    let parts = env
        .run("ctxfold-split", ["--write", source.to_str().unwrap()])
        .ok()
        .stdout;
    let before = Env::snapshot(&env.store);
    for id in ["../x", "a/b", ".hidden", ""] {
        env.run_with_stdin(
            "ctxfold-write-manifest",
            ["--session-id", id, "--source", source.to_str().unwrap()],
            &parts,
        )
        .fails(2)
        .one_line_error("unsafe session id");
    }
    assert_eq!(Env::snapshot(&env.store), before);
    assert!(!env.dir.path().join("x.json").exists());
}

#[test]
fn write_manifest_refuses_missing_objects_lying_parts_and_existing_manifests() {
    let env = Env::new();
    let (source, _, _) = folded(&env);
    let src = source.to_str().unwrap();
    let before = Env::snapshot(&env.store);
    // Parts of another file: the reconstruction does not match the source.
    let other = env.path("other.jsonl");
    fs::write(&other, b"{\"other\":true}\n").unwrap();
    let parts = env
        .run("ctxfold-split", ["--write", other.to_str().unwrap()])
        .ok()
        .stdout;
    let after_split = Env::snapshot(&env.store);
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", "t", "--source", src],
        &parts,
    )
    .fails(3)
    .one_line_error("session \"t\" not committed: parts add up to");
    // Parts naming an object the store does not hold.
    let parts = env.run("ctxfold-split", [src]).ok().stdout;
    let fake = format!(
        "{{\"kind\":\"residual\",\"object\":{{\"sha256\":\"{}\",\"raw_bytes\":3}}}}\n",
        "ab".repeat(32)
    );
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", "u", "--source", src],
        fake.as_bytes(),
    )
    .fails(3)
    .one_line_error("is not in the store");
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", "v", "--source", src],
        b"not json\n",
    )
    .fails(3)
    .one_line_error("stdin line 1: not a part");
    assert_eq!(Env::snapshot(&env.store).len(), after_split.len());
    assert!(before.len() <= after_split.len());
    // An existing manifest needs --overwrite.
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", "s", "--source", src],
        &parts,
    )
    .fails(3)
    .one_line_error("session \"s\" is already folded; nothing committed");
    env.run_with_stdin(
        "ctxfold-write-manifest",
        ["--session-id", "s", "--source", src, "--overwrite"],
        &parts,
    )
    .ok();
}

#[test]
fn restore_keeps_an_existing_target_unless_overwrite_and_places_no_file_folded_by_path() {
    let env = Env::new();
    let (source, _, _) = folded(&env);
    let original = fs::read(&source).unwrap();
    let to = ["--to", source.to_str().unwrap()];
    // A file folded by path has no agent's place: restore names no target of its own.
    env.run("ctxfold", ["restore", "s"])
        .fails(3)
        .one_line_error("is not where Codex, Pi or Claude Code keeps this session");
    // The same bytes there already: in place, nothing to do.
    env.run("ctxfold", ["restore", "s", to[0], to[1]]).ok();
    fs::write(&source, b"changed").unwrap();
    env.run("ctxfold", ["restore", "s", to[0], to[1]])
        .fails(3)
        .one_line_error("exists and holds other bytes (use --overwrite");
    assert_eq!(fs::read(&source).unwrap(), b"changed");
    env.run("ctxfold", ["materialize", "s", to[0], to[1], "--overwrite"])
        .ok();
    assert_eq!(fs::read(&source).unwrap(), original);
    fs::remove_file(&source).unwrap();
    env.run("ctxfold", ["restore", "s"]).fails(3);
    assert!(!source.exists());
    env.run("ctxfold", ["restore", "s", to[0], to[1]]).ok();
    assert_eq!(fs::read(&source).unwrap(), original);
    env.run("ctxfold", ["restore", "nope"])
        .fails(1)
        .one_line_error("no folded session \"nope\"");
}

/// A store as the reference implementation writes it: pretty manifests with extra keys and
/// without title/cwd/json_path, frames with checksums and no content size.
#[test]
fn restores_stores_written_by_the_reference_implementation() {
    use ctxfold::digest::Digest;
    let env = Env::new();
    let chunks: [&[u8]; 3] = [b"{\"a\":", b"\"a reference field\"", b"}\n"];
    let mut parts = Vec::new();
    for chunk in chunks {
        let sha = Digest::of(chunk).to_string();
        let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        encoder.include_checksum(true).unwrap();
        encoder.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut encoder, chunk).unwrap();
        let frame = encoder.finish().unwrap();
        let path = object_path(&env.store, &sha);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, &frame).unwrap();
        parts.push(format!(
            "    {{\n      \"kind\": \"residual\",\n      \"object\": {{\"sha256\": \"{sha}\", \"raw_bytes\": {}, \"stored_bytes\": {}}}\n    }}",
            chunk.len(),
            frame.len()
        ));
    }
    let whole = chunks.concat();
    let manifest = format!(
        "{{\n  \"version\": 1,\n  \"kind\": \"fold-v1\",\n  \"created_at\": \"2026-07-01T10:00:00Z\",\n  \"session\": {{\"id\": \"ref\", \"rollout_path\": \"/nonexistent/r.jsonl\", \"archived\": true}},\n  \"source\": {{\"bytes\": {}, \"sha256\": \"{}\"}},\n  \"settings\": {{\"field_threshold\": 4096, \"max_json_line_bytes\": 33554432, \"cdc_min_bytes\": 4096, \"cdc_average_bytes\": 16384, \"cdc_max_bytes\": 65536, \"compression\": \"zstd\", \"record_threshold\": 1024}},\n  \"parts\": [\n{}\n  ]\n}}\n",
        whole.len(),
        Digest::of(&whole),
        parts.join(",\n")
    );
    fs::create_dir_all(env.store.join("manifests")).unwrap();
    fs::write(env.store.join("manifests/ref.json"), &manifest).unwrap();
    let out = env.run("ctxfold-cat-manifest", ["ref"]).ok();
    assert_eq!(out.stdout, whole);
    let target = env.path("r.jsonl");
    let restore = || {
        env.run(
            "ctxfold",
            [
                "restore",
                "ref",
                "--to",
                target.to_str().unwrap(),
                "--overwrite",
            ],
        )
        .ok();
        assert_eq!(fs::read(&target).unwrap(), whole);
    };
    restore();
    // gc packs its manifest byte for byte (pretty, with its extra keys), and unpack gives the file
    // back as the reference wrote it.
    env.run("ctxfold", ["gc", "--apply", "--prune=now"]).ok();
    assert!(!env.store.join("manifests/ref.json").exists());
    let printed = env.run("ctxfold-cat-manifest", ["--json", "ref"]).ok();
    assert_eq!(printed.stdout, manifest.as_bytes());
    restore();
    env.run("ctxfold", ["fsck", "--full"]).ok();
    env.run("ctxfold", ["unpack"]).ok();
    assert_eq!(
        fs::read(env.store.join("manifests/ref.json")).unwrap(),
        manifest.as_bytes()
    );
    assert!(!env.store.join("manifests/packed.json").exists());
    restore();
}

/// The store's packs, by path.
fn packs(store: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(store.join("packs-ctxfold"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    found.sort();
    found
}

/// Two sessions, "s" and "t", each folded by its own `split --write` (so in a pack of its own).
/// Returns the pack holding "s" and the source of "t".
fn two_packs(env: &Env) -> (PathBuf, PathBuf) {
    folded_packed(env);
    let [s_pack] = packs(&env.store, "pack").try_into().unwrap();
    let other = env.path("other.jsonl");
    let text = format!(
        "{{\"type\":\"y\",\"payload\":{{\"output\":\"{}\"}}}}\n",
        "another line\\n".repeat(700)
    );
    fs::write(&other, &text).unwrap();
    fold_by_plumbing(env, &other, "t");
    assert_eq!(packs(&env.store, "pack").len(), 2);
    (s_pack, other)
}

/// "s" no longer restores, and leaves nothing behind; "t" still does, byte for byte; fsck --full
/// names the damage (and the session it hits, when `names_session`).
fn only_s_is_lost(env: &Env, other: &Path, needle: &str, names_session: bool) {
    restore_fails(env, needle);
    let target = env.path("t.jsonl");
    env.run(
        "ctxfold",
        ["restore", "t", "--to", target.to_str().unwrap()],
    )
    .ok();
    assert_eq!(fs::read(&target).unwrap(), fs::read(other).unwrap());
    let run = env.run("ctxfold", ["fsck", "--full"]).fails(4);
    let report = run.stdout_text();
    assert!(report.contains("bad pack"), "{report}");
    if names_session {
        assert!(report.contains("sessions hit: s"), "{report}");
    }
}

#[test]
fn a_flipped_byte_in_a_pack_loses_only_the_sessions_of_its_block() {
    let env = Env::new();
    let (pack, other) = two_packs(&env);
    let mut bytes = fs::read(&pack).unwrap();
    // Inside the first block's frame, past the pack header.
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    fs::write(&pack, bytes).unwrap();
    only_s_is_lost(&env, &other, "is corrupt", true);
}

#[test]
fn sessions_restored_together_that_share_a_damaged_block_each_fail_and_the_rest_restore() {
    let env = Env::new();
    let (pack, other) = two_packs(&env);
    // "u" holds the objects of "s" (its lines) and one of its own, written to a pack of its own.
    let source = env.path("source.jsonl");
    let grown = env.path("grown.jsonl");
    let mut text = fs::read(&source).unwrap();
    text.extend_from_slice(b"{\"n\":2}\n");
    fs::write(&grown, &text).unwrap();
    fold_by_plumbing(&env, &grown, "u");
    let mut bytes = fs::read(&pack).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    fs::write(&pack, bytes).unwrap();

    let out = env.path("out");
    let to = format!("{}/", out.display());
    let run = env
        .run("ctxfold", ["restore", "s", "t", "u", "--to", &to])
        .fails(4);
    let errors = &run.stderr;
    assert!(errors.contains("restored 1 session, 2 failed"), "{errors}");
    for id in ["s", "u"] {
        assert!(
            errors
                .lines()
                .any(|l| l.contains(&format!("{id}:")) && l.contains("is corrupt")),
            "{errors}"
        );
    }
    // Only "t" (under its source's name), byte for byte, and no temp file of the others.
    let names: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["other.jsonl"]);
    assert_eq!(
        fs::read(out.join("other.jsonl")).unwrap(),
        fs::read(&other).unwrap()
    );
}

#[test]
fn a_truncated_pack_does_not_open_and_says_so() {
    let env = Env::new();
    let (pack, other) = two_packs(&env);
    let bytes = fs::read(&pack).unwrap();
    fs::write(&pack, &bytes[..bytes.len() - 10]).unwrap();
    only_s_is_lost(&env, &other, "does not open", false);
}

#[test]
fn an_index_that_lies_is_caught_by_the_object_hash() {
    use sha2::{Digest as _, Sha256};
    let env = Env::new();
    let (_, sha, _) = folded_packed(&env);
    let [pack] = packs(&env.store, "idx").try_into().unwrap();
    // The field object's record: digest, raw size, block, offset. Move its offset by one byte and
    // make the index's own checksum agree, as a buggy writer would.
    let mut index = fs::read(&pack).unwrap();
    let digest = hex(&sha);
    let at = index
        .windows(32)
        .position(|w| w == digest.as_slice())
        .unwrap();
    let offset = at + 32 + 8 + 4;
    index[offset + 7] = index[offset + 7].wrapping_add(1);
    let body = index.len() - 32;
    let checksum = Sha256::digest(&index[..body]);
    index[body..].copy_from_slice(&checksum);
    fs::write(&pack, index).unwrap();
    restore_fails(&env, &format!("object {sha} is corrupt"));
    let run = env.run("ctxfold", ["fsck", "--full"]).fails(4);
    assert!(
        run.stdout_text().contains("bad pack"),
        "{}",
        run.stdout_text()
    );
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}
