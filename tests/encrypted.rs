//! Encrypted remotes (`ctxfold key`, `remote add --encrypt`, `remote recipients`) against a real
//! bare repository: the host holds nothing it can read, a machine with a recipient's identity
//! clones every session byte for byte, one without fails cleanly, a changed blob is refused before
//! anything is merged, and a change of recipients takes effect.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, Run, own, own_fixtures_dir, public_fixtures_dir};

/// A bare remote, and machines, each a store and a configuration folder of its own.
struct World {
    env: Env,
    remote: PathBuf,
}

/// One machine: its store and its `XDG_CONFIG_HOME`.
struct Machine {
    store: PathBuf,
    config: PathBuf,
}

impl World {
    fn new() -> Self {
        let mut env = Env::new();
        env.set_git_identity();
        let remote = env.path("remote.git");
        let world = Self { env, remote };
        world.git(&["init", "--quiet", "--bare", world.remote.to_str().unwrap()]);
        world
    }

    fn machine(&self, name: &str) -> Machine {
        Machine {
            store: self.env.path(&format!("{name}-store")),
            config: self.env.path(&format!("{name}-config")),
        }
    }

    /// git in the remote, its stdout as bytes.
    #[track_caller]
    fn git(&self, args: &[&str]) -> Vec<u8> {
        self.git_in(args, b"")
    }

    #[track_caller]
    fn git_in(&self, args: &[&str], stdin: &[u8]) -> Vec<u8> {
        let mut cmd = self.env.command_for("git");
        cmd.arg("--git-dir").arg(&self.remote).args(args);
        let run = Env::output(cmd, stdin);
        assert_eq!(run.code, Some(0), "git {args:?}: {}", run.stderr);
        run.stdout
    }

    fn text(&self, args: &[&str]) -> String {
        String::from_utf8(self.git(args))
            .unwrap()
            .trim()
            .to_string()
    }

    /// `ctxfold ARGS` on `machine` (its store, its configuration folder).
    fn ctxfold(&self, machine: &Machine, args: &[&str]) -> Run {
        let mut cmd = self.env.command("ctxfold");
        cmd.args(args).env("XDG_CONFIG_HOME", &machine.config);
        // `key` reads no store.
        if args[0] != "key" {
            cmd.arg("--store").arg(&machine.store);
        }
        Env::output(cmd, b"")
    }

    /// A new identity on `machine`, and its recipient.
    fn key(&self, machine: &Machine) -> String {
        let key = self.ctxfold(machine, &["key", "new"]).ok().stdout_text();
        key.trim().to_string()
    }

    fn remote_url(&self) -> &str {
        self.remote.to_str().unwrap()
    }

    /// Every object of the remote, as `git cat-file --batch-all-objects --batch` prints them.
    fn remote_objects(&self) -> Vec<u8> {
        self.git(&["cat-file", "--batch-all-objects", "--batch"])
    }

    /// Every blob of the remote's branch, by path.
    fn remote_blobs(&self) -> Vec<(String, String)> {
        self.text(&["ls-tree", "-r", "ctxfold"])
            .lines()
            .map(|l| {
                let (meta, path) = l.split_once('\t').unwrap();
                (
                    meta.split(' ').nth(2).unwrap().to_string(),
                    path.to_string(),
                )
            })
            .collect()
    }
}

/// Fold the session files under `dirs` into `machine`'s store with `fold --apply` (titles, cwds,
/// seeds and all, as people fold).
fn fold(w: &World, machine: &Machine, dirs: &[PathBuf]) {
    let mut args = vec!["fold", "--apply", "-q"];
    let dirs: Vec<String> = dirs
        .iter()
        .map(|d| d.to_str().unwrap().to_string())
        .collect();
    args.extend(dirs.iter().map(String::as_str));
    w.ctxfold(machine, &args).ok();
}

/// The fixture folders of real sessions: the own ones, and the public ones when they are there.
fn fixture_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![own_fixtures_dir()];
    dirs.extend(public_fixtures_dir());
    dirs
}

/// Each manifest of a store: (session id, the source it was folded from).
fn sessions(store: &Path) -> Vec<(String, PathBuf, serde_json::Value)> {
    let mut found = Vec::new();
    for entry in fs::read_dir(store.join("manifests")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let manifest: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        let session = &manifest["session"];
        found.push((
            session["id"].as_str().unwrap().to_string(),
            PathBuf::from(session["rollout_path"].as_str().unwrap()),
            manifest.clone(),
        ));
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

/// Everything a host must not learn from a store: session ids, titles, cwds, source paths, every
/// sha256 its manifests and seed catalog name, and every line of every session (8 bytes or more).
fn secrets_of(store: &Path) -> BTreeSet<Vec<u8>> {
    let mut needles = BTreeSet::new();
    let hex = regex::bytes::Regex::new("[0-9a-f]{64}").unwrap();
    for (id, source, manifest) in sessions(store) {
        needles.insert(id.into_bytes());
        needles.insert(source.to_str().unwrap().as_bytes().to_vec());
        for field in ["title", "cwd"] {
            if let Some(text) = manifest["session"][field].as_str().filter(|t| t.len() >= 8) {
                needles.insert(text.as_bytes().to_vec());
            }
        }
        let text = serde_json::to_vec(&manifest).unwrap();
        needles.extend(hex.find_iter(&text).map(|m| m.as_bytes().to_vec()));
        for line in fs::read(&source).unwrap().split(|b| *b == b'\n') {
            if line.len() >= 8 {
                needles.insert(line.to_vec());
            }
        }
    }
    if let Ok(catalog) = fs::read(store.join("seeds/catalog.jsonl")) {
        needles.extend(hex.find_iter(&catalog).map(|m| m.as_bytes().to_vec()));
    }
    needles
}

/// Which of `needles` the remote's objects hold.
fn found_in(haystack: &[u8], needles: &BTreeSet<Vec<u8>>) -> Vec<String> {
    let finder = aho_corasick::AhoCorasick::new(needles).unwrap();
    let mut found: BTreeSet<usize> = BTreeSet::new();
    for m in finder.find_overlapping_iter(haystack) {
        found.insert(m.pattern().as_usize());
    }
    let needles: Vec<&Vec<u8>> = needles.iter().collect();
    found
        .into_iter()
        .map(|n| String::from_utf8_lossy(&needles[n][..needles[n].len().min(80)]).into_owned())
        .collect()
}

/// `to`, given `from`'s identity (copied), clones the remote, and restores every session of
/// `from` byte for byte.
fn clones_whole_with_identity_of(w: &World, to: &Machine, from: &Machine) {
    fs::create_dir_all(to.config.join("ctxfold")).unwrap();
    fs::copy(
        from.config.join("ctxfold/identity.txt"),
        to.config.join("ctxfold/identity.txt"),
    )
    .unwrap();
    w.ctxfold(to, &["clone", w.remote_url()]).ok();
    restores_every_session(w, to, &from.store);
}

/// Each session of `from` restored from `store` is its source, byte for byte.
fn restores_every_session(w: &World, machine: &Machine, from: &Path) {
    let expected = sessions(from);
    assert!(!expected.is_empty());
    assert_eq!(
        sessions(&machine.store)
            .iter()
            .map(|s| &s.0)
            .collect::<Vec<_>>(),
        expected.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    for (id, source, _) in expected {
        let to = w.env.path(&format!("restored-{id}"));
        let _ = fs::remove_file(&to);
        w.ctxfold(
            machine,
            &["restore", &id, "--to", to.to_str().unwrap(), "-q"],
        )
        .ok();
        assert!(fs::read(&to).unwrap() == fs::read(&source).unwrap(), "{id}");
        fs::remove_file(&to).unwrap();
    }
}

/// What a store holds (its mirror repository aside, which a fetch adds to).
fn store_state(store: &Path) -> Vec<Vec<(PathBuf, Vec<u8>)>> {
    [
        "manifests",
        "objects",
        "packs-ctxfold",
        "seeds",
        "dictionaries",
    ]
    .iter()
    .map(|dir| Env::snapshot(&store.join(dir)))
    .collect()
}

/// git in a store's mirror repository, its stdout as text.
#[track_caller]
fn mirror_git(mirror: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(mirror)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A failed clone into a new store leaves no store behind.
fn holds_nothing(store: &Path) -> bool {
    !store.exists()
}

#[test]
fn an_encrypted_remote_holds_nothing_readable_and_clones_for_its_recipients_only() {
    let w = World::new();
    let a = w.machine("a");
    let recipient = w.key(&a);
    let shown = w.ctxfold(&a, &["key", "show"]).ok().stdout_text();
    assert_eq!(shown.trim(), recipient);
    // A key is never replaced unasked.
    w.ctxfold(&a, &["key", "new"])
        .fails(3)
        .one_line_error("exists already");
    fold(&w, &a, &fixture_dirs());
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    let pushed = w.ctxfold(&a, &["sync"]).ok().stdout_text();
    // What was pushed is named as the remote holds it (the encrypted commit, not the plain one).
    let tip = w.text(&["rev-parse", "ctxfold"]);
    assert!(pushed.contains(&format!("pushed {tip}:")), "{pushed}");
    // The listing says which remote is encrypted, and to whom.
    let listed = w.ctxfold(&a, &["remote", "-v"]).ok().stdout_text();
    assert_eq!(listed, format!("origin\t{}\tencrypted\n", w.remote_url()));
    let listed = w
        .ctxfold(&a, &["remote", "list", "--json"])
        .ok()
        .stdout_text();
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["encrypted"], true);
    assert_eq!(listed["recipients"], serde_json::json!([recipient]));
    // The encrypted objects were written into a pack of the mirror, never as loose objects (which
    // doubled the loose objects a first sync leaves, and cost a repack of them all).
    let mirror = a.store.join("mirror.git");
    let sent = mirror_git(&mirror, &["rev-list", "--objects", &tip]);
    let sent: Vec<&str> = (sent.lines())
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, path)| !matches!(*path, "recipients" | "key.age"))
        .map(|(id, _)| id)
        .collect();
    assert!(sent.len() > 10, "{sent:?}");
    for id in sent {
        let loose = mirror.join("objects").join(&id[..2]).join(&id[2..]);
        assert!(!loose.exists(), "{id} is loose");
    }
    // The manifests are sealed together, in one group here (they compress against each other):
    // the remote holds one file for every plain file but the manifests, and one for them all.
    let plain = mirror_git(&mirror, &["ls-tree", "-r", "--name-only", "ctxfold"]);
    let manifests = plain
        .lines()
        .filter(|p| p.starts_with("manifests/"))
        .count();
    assert!(manifests > 5, "{plain}");
    assert_eq!(
        w.remote_blobs().len(),
        plain.lines().count() - manifests + 1 + 2,
        "{plain}"
    );

    // Nothing of the sessions is anywhere in the remote: every object checked.
    let objects = w.remote_objects();
    assert!(objects.len() > 1000, "the remote holds the store");
    let needles = secrets_of(&a.store);
    let leaked = found_in(&objects, &needles);
    assert!(leaked.is_empty(), "the remote shows {leaked:?}");
    // The same check finds in the plain mirror this machine keeps every session id (the check
    // works; the sessions' lines are zstd there, but their ids and hashes are in clear).
    let plain = Command::new("git")
        .arg("--git-dir")
        .arg(&mirror)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    let shown = found_in(&plain.stdout, &needles);
    for (id, _, _) in sessions(&a.store) {
        assert!(shown.contains(&id), "{id}");
    }
    // Its names are keyed hashes; its recipients are named in clear.
    for (_, path) in w.remote_blobs() {
        let named = path == "recipients" || path == "key.age";
        let hashed = path.len() == 65 && path.as_bytes()[2] == b'/';
        assert!(named || hashed, "{path}");
    }
    assert_eq!(w.text(&["show", "ctxfold:recipients"]), recipient);
    // The identity is a standard age identity file: age itself (when installed) reads it.
    if common::which("age").is_some() {
        let sealed = w.env.path("key.age");
        fs::write(&sealed, w.git(&["show", "ctxfold:key.age"])).unwrap();
        let identity = a.config.join("ctxfold/identity.txt");
        let mut cmd = w.env.command_for("age");
        cmd.arg("-d").arg("-i").arg(&identity).arg(&sealed);
        let opened = Env::output(cmd, b"").ok();
        assert!(opened.stdout.starts_with(b"ctxfold sealed remote v1\n"));
        fs::remove_file(&sealed).unwrap();
    }

    // A second sync with nothing new pushes nothing.
    let head = w.text(&["rev-parse", "ctxfold"]);
    w.ctxfold(&a, &["sync"]).ok();
    assert_eq!(w.text(&["rev-parse", "ctxfold"]), head);

    // A second machine with the identity (copied) clones every session byte for byte.
    let b = w.machine("b");
    clones_whole_with_identity_of(&w, &b, &a);
    // So does one that names the identity file.
    let named = w.machine("named");
    let identity = a.config.join("ctxfold/identity.txt");
    w.ctxfold(
        &named,
        &[
            "clone",
            w.remote_url(),
            "--identity",
            identity.to_str().unwrap(),
        ],
    )
    .ok();
    assert_eq!(sessions(&named.store).len(), sessions(&a.store).len());

    // One with another key is refused, told which recipients the remote expects, and writes
    // nothing.
    let c = w.machine("c");
    let other = w.key(&c);
    let refused = w
        .ctxfold(&c, &["clone", w.remote_url()])
        .fails(3)
        .one_line_error(&recipient);
    assert!(refused.stderr.contains(&other), "{}", refused.stderr);
    assert!(holds_nothing(&c.store));
    // One with no key at all is told how to make one.
    let d = w.machine("d");
    w.ctxfold(&d, &["clone", w.remote_url()])
        .fails(3)
        .one_line_error("ctxfold key new");
    assert!(holds_nothing(&d.store));
}

/// The remote's branch with the blob at `path` (a path of `ls-tree -r`) changed by one flipped
/// byte, as a commit on top of it; returns the commit.
fn flipped(w: &World, path: &str) -> String {
    let tip = w.text(&["rev-parse", "ctxfold"]);
    let tree = w.text(&["rev-parse", "ctxfold^{tree}"]);
    let new_tree = replace(w, &tree, path, &|blob| {
        let mut bytes = w.git(&["cat-file", "blob", blob]);
        let at = bytes.len() / 2;
        bytes[at] ^= 0x01;
        String::from_utf8(w.git_in(&["hash-object", "-w", "--stdin"], &bytes))
            .unwrap()
            .trim()
            .to_string()
    });
    w.text(&["commit-tree", &new_tree, "-p", &tip, "-m", "changed"])
}

/// `tree` with the blob at `path` replaced by what `change` makes of it.
fn replace(w: &World, tree: &str, path: &str, change: &dyn Fn(&str) -> String) -> String {
    let (first, rest) = match path.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (path, None),
    };
    let listing = String::from_utf8(w.git(&["ls-tree", tree])).unwrap();
    let mut lines = Vec::new();
    for line in listing.lines() {
        let (meta, name) = line.split_once('\t').unwrap();
        let mut fields: Vec<String> = meta.split(' ').map(str::to_string).collect();
        if name == first {
            fields[2] = match rest {
                Some(rest) => replace(w, &fields[2], rest, change),
                None => change(&fields[2]),
            };
        }
        lines.push(format!("{}\t{name}\n", fields.join(" ")));
    }
    String::from_utf8(w.git_in(&["mktree"], lines.concat().as_bytes()))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn a_changed_blob_of_an_encrypted_remote_is_refused_before_anything_is_merged() {
    let w = World::new();
    let (a, b) = (w.machine("a"), w.machine("b"));
    w.key(&a);
    fold(&w, &a, &[own_fixtures_dir().join("codex")]);
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    w.ctxfold(&a, &["sync"]).ok();
    clones_whole_with_identity_of(&w, &b, &a);
    // A pushes more; each of its blobs changed in turn is refused by B's sync, naming the file.
    fold(&w, &a, &[own_fixtures_dir().join("pi")]);
    w.ctxfold(&a, &["sync"]).ok();
    let good = w.text(&["rev-parse", "ctxfold"]);
    let before = store_state(&b.store);
    let blobs = w.remote_blobs();
    assert!(blobs.len() > 10, "{blobs:?}");
    for (_, path) in &blobs {
        let bad = flipped(&w, path);
        w.git(&["update-ref", "refs/heads/ctxfold", &bad]);
        let refused = w.ctxfold(&b, &["sync"]).fails(4);
        let named = match path.as_str() {
            "recipients" | "key.age" => path.as_str(),
            _ => path.split('/').take(2).last().unwrap(),
        };
        assert!(refused.stderr.contains(named), "{path}: {}", refused.stderr);
        assert!(store_state(&b.store) == before, "{path}: nothing merged");
        w.git(&["update-ref", "refs/heads/ctxfold", &good]);
    }
    // The remote as A pushed it merges.
    let merged = w.ctxfold(&b, &["sync"]).ok().stdout_text();
    assert!(merged.contains("added"), "{merged}");
    restores_every_session(&w, &b, &a.store);
}

#[test]
fn recipients_added_can_clone_and_removed_ones_cannot_read_what_follows() {
    let w = World::new();
    let (a, b) = (w.machine("a"), w.machine("b"));
    w.key(&a);
    let theirs = w.key(&b);
    fold(&w, &a, &[own_fixtures_dir().join("codex")]);
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    w.ctxfold(&a, &["sync"]).ok();
    w.ctxfold(&b, &["clone", w.remote_url()]).fails(3);

    // Added: one commit, re-encrypting what the remote holds; the new key clones it all.
    let before = w.text(&["rev-list", "--count", "ctxfold"]);
    w.ctxfold(&a, &["remote", "recipients", "add", "origin", &theirs])
        .ok();
    let after = w.text(&["rev-list", "--count", "ctxfold"]);
    assert_eq!(
        after.parse::<u32>().unwrap(),
        before.parse::<u32>().unwrap() + 1
    );
    assert!(w.text(&["show", "ctxfold:recipients"]).contains(&theirs));
    let listed = w
        .ctxfold(&a, &["remote", "recipients", "list", "origin"])
        .ok()
        .stdout_text();
    assert!(listed.contains(&theirs), "{listed}");
    let b2 = Machine {
        store: w.env.path("b2-store"),
        config: b.config.clone(),
    };
    w.ctxfold(&b2, &["clone", w.remote_url()]).ok();
    restores_every_session(&w, &b2, &a.store);
    w.ctxfold(&a, &["remote", "recipients", "add", "origin", &theirs])
        .fails(3);

    // Removed: what A pushes afterwards is not for that key.
    w.ctxfold(&a, &["remote", "recipients", "remove", "origin", &theirs])
        .ok();
    assert!(!w.text(&["show", "ctxfold:recipients"]).contains(&theirs));
    fold(&w, &a, &[own_fixtures_dir().join("pi")]);
    w.ctxfold(&a, &["sync"]).ok();
    let b3 = Machine {
        store: w.env.path("b3-store"),
        config: b.config.clone(),
    };
    w.ctxfold(&b3, &["clone", w.remote_url()])
        .fails(3)
        .one_line_error("none of them");
    assert!(holds_nothing(&b3.store));
    w.ctxfold(&b2, &["sync"]).fails(3);
    w.ctxfold(&a, &["remote", "recipients", "remove", "origin", &theirs])
        .fails(1);
}

#[test]
fn an_encrypted_push_sends_sessions_holding_secrets_and_keeps_under_the_file_cap() {
    let w = World::new();
    let (a, b) = (w.machine("a"), w.machine("b"));
    w.key(&a);
    let leaky = w.env.path("leaky");
    fs::create_dir_all(&leaky).unwrap();
    let token = format!("ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
    let line = serde_json::json!({"type": "note", "text": format!("use {token}")});
    let mut session = fs::read(common::own_fixture(own::CODEX_SHELL_CRLF)).unwrap();
    session.extend_from_slice(format!("{line}\n").as_bytes());
    fs::write(leaky.join("leaky.jsonl"), &session).unwrap();
    fold(&w, &a, &[leaky, own_fixtures_dir().join("pi")]);
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    // A cap small enough for these sessions' packs and objects to be cut.
    let mirror = a.store.join("mirror.git");
    let out = Command::new("git")
        .args([
            "--git-dir",
            mirror.to_str().unwrap(),
            "config",
            "ctxfold.maxFileSize",
            "4k",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let pushed = w.ctxfold(&a, &["sync"]).ok().stdout_text();
    assert!(pushed.contains(", 1 session holding secrets"), "{pushed}");
    let objects = w.remote_objects();
    assert!(!objects.windows(token.len()).any(|w| w == token.as_bytes()));
    let sizes = String::from_utf8(w.git(&[
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objecttype) %(objectsize)",
    ]))
    .unwrap();
    let blobs: Vec<u64> = sizes
        .lines()
        .filter_map(|l| l.strip_prefix("blob ")?.parse().ok())
        .collect();
    assert!(blobs.iter().all(|&n| n <= 4096), "{blobs:?}");
    assert!(
        w.text(&["ls-tree", "-r", "ctxfold"])
            .contains("/part-000001"),
        "something was cut"
    );
    clones_whole_with_identity_of(&w, &b, &a);
}

#[test]
fn bad_encryption_options_change_nothing() {
    let w = World::new();
    let a = w.machine("a");
    // No identity here yet: an encrypted remote has nobody to encrypt to (and `remote add` has no
    // --identity to suggest).
    let refused = w
        .ctxfold(
            &a,
            &["remote", "add", "origin", w.remote_url(), "--encrypt"],
        )
        .fails(3)
        .one_line_error("ctxfold key new");
    assert!(!refused.stderr.contains("--identity"), "{}", refused.stderr);
    w.key(&a);
    w.ctxfold(
        &a,
        &[
            "remote",
            "add",
            "origin",
            w.remote_url(),
            "--encrypt",
            "--recipient",
            "age1nope",
        ],
    )
    .fails(2)
    .one_line_error("age1nope");
    w.ctxfold(
        &a,
        &[
            "remote",
            "add",
            "origin",
            w.remote_url(),
            "--recipient",
            "age1x",
        ],
    )
    .fails(2);
    assert!(!a.store.exists(), "nothing written");
    // A plain remote has no recipients to change.
    w.ctxfold(&a, &["remote", "add", "plain", w.remote_url()])
        .ok();
    w.ctxfold(&a, &["remote", "recipients", "list", "plain"])
        .fails(3)
        .one_line_error("no encrypted remote");
}

#[test]
fn the_ledger_keeps_what_the_remote_holds_and_nothing_else() {
    let w = World::new();
    let (a, b) = (w.machine("a"), w.machine("b"));
    w.key(&a);
    fold(&w, &a, &[own_fixtures_dir().join("codex")]);
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    w.ctxfold(&a, &["sync"]).ok();
    // Sessions removed, then others added: each sync changes the group of manifests.
    let (gone, _, _) = sessions(&a.store).remove(0);
    w.ctxfold(&a, &["rm", "--apply", "-q", &gone]).ok();
    w.ctxfold(&a, &["sync"]).ok();
    fold(&w, &a, &[own_fixtures_dir().join("pi")]);
    w.ctxfold(&a, &["sync"]).ok();
    fold(&w, &a, &[own_fixtures_dir().join("claude")]);
    w.ctxfold(&a, &["sync"]).ok();
    // The ledger names the sealed files the remote's branch holds, no more, and few commits.
    let ledger = a
        .store
        .join("mirror.git/ctxfold-sealed")
        .join(hex(b"origin"));
    let ledger = fs::read_to_string(ledger).unwrap();
    let files: BTreeSet<&str> = ledger
        .lines()
        .filter(|l| l.starts_with("f ") || l.starts_with("g "))
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    let held: BTreeSet<String> = w
        .remote_blobs()
        .into_iter()
        .filter(|(_, path)| path != "recipients" && path != "key.age")
        .map(|(id, _)| id)
        .collect();
    assert_eq!(
        files,
        held.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    let commits = ledger.lines().filter(|l| l.starts_with("c ")).count();
    assert!(commits <= 2, "{ledger}");
    // Pruned, it still serves: a clone elsewhere, then a sync here sending nothing new.
    clones_whole_with_identity_of(&w, &b, &a);
    let head = w.text(&["rev-parse", "ctxfold"]);
    w.ctxfold(&a, &["sync"]).ok();
    assert_eq!(w.text(&["rev-parse", "ctxfold"]), head);
}

#[test]
fn a_plain_remote_is_not_encrypted_in_place_and_the_refusal_says_how() {
    let w = World::new();
    let a = w.machine("a");
    w.key(&a);
    fold(&w, &a, &[own_fixtures_dir().join("pi")]);
    w.ctxfold(&a, &["remote", "add", "origin", w.remote_url()])
        .ok();
    w.ctxfold(&a, &["sync"]).ok();
    let head = w.text(&["rev-parse", "ctxfold"]);
    w.ctxfold(&a, &["remote", "remove", "origin"]).ok();
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    w.ctxfold(&a, &["sync"])
        .fails(3)
        .one_line_error("new empty repository");
    assert_eq!(w.text(&["rev-parse", "ctxfold"]), head, "nothing pushed");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn an_encrypted_remote_added_after_a_plain_one_gets_what_the_mirror_dropped() {
    if !common::partial_mirrors() {
        return;
    }
    let w = World::new();
    let a = w.machine("a");
    w.key(&a);
    fold(&w, &a, &[own_fixtures_dir()]);
    let plain = w.env.path("plain.git");
    let mut init = w.env.command_for("git");
    init.args(["init", "--quiet", "--bare"]).arg(&plain);
    Env::output(init, b"").ok();
    w.ctxfold(&a, &["remote", "add", "plain", plain.to_str().unwrap()])
        .ok();
    w.ctxfold(&a, &["sync", "plain"]).ok();
    // The plain remote holds the packs: the mirror dropped its copies of them.
    let mirror = a.store.join("mirror.git");
    let packs = mirror_git(&mirror, &["ls-tree", "-r", "ctxfold", "packs-ctxfold"]);
    let dropped: Vec<&str> = (packs.lines())
        .filter(|l| l.ends_with(".pack"))
        .map(|l| l.split(' ').nth(2).unwrap().split('\t').next().unwrap())
        .collect();
    assert!(!dropped.is_empty(), "{packs}");
    for id in &dropped {
        let mut has = w.env.command_for("git");
        has.env("GIT_NO_LAZY_FETCH", "1")
            .arg("--git-dir")
            .arg(&mirror)
            .args(["cat-file", "-e", id]);
        assert_ne!(Env::output(has, b"").code, Some(0), "{id} kept");
    }

    // Sealed for the encrypted remote all the same, and cloned back whole from it.
    w.ctxfold(
        &a,
        &["remote", "add", "origin", w.remote_url(), "--encrypt"],
    )
    .ok();
    w.ctxfold(&a, &["sync", "origin"]).ok();
    let b = w.machine("b");
    clones_whole_with_identity_of(&w, &b, &a);
    let leaked = found_in(&w.remote_objects(), &secrets_of(&a.store));
    assert!(leaked.is_empty(), "the remote shows {leaked:?}");
}
