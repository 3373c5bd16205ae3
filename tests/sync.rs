//! `ctxfold remote`, `sync` and `clone` with the real git binary and a bare repository on disk as
//! the remote: two stores converge, nothing is lost, and a bad remote object changes nothing.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, own};

/// Two stores, a bare remote both know as `origin`, and a hermetic git.
struct World {
    env: Env,
    a: PathBuf,
    b: PathBuf,
    remote: PathBuf,
}

impl World {
    fn new() -> Self {
        let mut env = Env::new();
        env.set_git_identity();
        let world = Self {
            a: env.path("A"),
            b: env.path("B"),
            remote: env.path("remote.git"),
            env,
        };
        world.git(
            None,
            ["init", "--quiet", "--bare", world.remote.to_str().unwrap()],
        );
        world
    }

    /// Run git (in the hermetic environment) and return its stdout.
    #[track_caller]
    fn git<const N: usize>(&self, git_dir: Option<&Path>, args: [&str; N]) -> String {
        let mut cmd = Command::new("git");
        cmd.env_clear()
            .env("HOME", &self.env.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LC_ALL", "C")
            .current_dir(self.env.dir.path());
        if let Some(dir) = git_dir {
            cmd.arg("--git-dir").arg(dir);
        }
        let out = cmd.args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Fold `file` into `store` as session `id` with the plumbing.
    fn fold(&self, store: &Path, id: &str, file: &Path) {
        let parts = self
            .env
            .run(
                "ctxfold-split",
                [
                    "--store".as_ref(),
                    store.as_os_str(),
                    "--write".as_ref(),
                    file.as_os_str(),
                ],
            )
            .ok();
        self.env
            .run_with_stdin(
                "ctxfold-write-manifest",
                [
                    "--store".as_ref(),
                    store.as_os_str(),
                    "--session-id".as_ref(),
                    id.as_ref(),
                    "--source".as_ref(),
                    file.as_os_str(),
                ],
                &parts.stdout,
            )
            .ok();
    }

    fn ctxfold(&self, store: &Path, args: &[&str]) -> common::Run {
        let mut all = vec!["--store", store.to_str().unwrap()];
        all.splice(0..0, args.iter().copied());
        self.env.run("ctxfold", all)
    }

    fn sync(&self, store: &Path) -> String {
        self.ctxfold(store, &["sync"]).ok().stdout_text()
    }

    /// `store` with one session, synced once with the remote as `origin`.
    fn synced_once(&self, store: &Path) {
        self.fold(store, "s1", &fixture(own::CODEX_SHELL_CRLF));
        let remote = self.remote.to_str().unwrap();
        self.ctxfold(store, &["remote", "add", "origin", remote])
            .ok();
        self.sync(store);
    }

    /// The session restored from `store`, verified.
    fn restored(&self, store: &Path, id: &str) -> Vec<u8> {
        let to = self.env.path(&format!(
            "restored-{}-{id}",
            store.file_name().unwrap().to_str().unwrap()
        ));
        let _ = fs::remove_file(&to);
        self.ctxfold(store, &["restore", id, "--to", to.to_str().unwrap()])
            .ok();
        fs::read(&to).unwrap()
    }

    /// Store A's remote `origin` removed and deleted for good, and a new bare one added as
    /// `backup`; returns its URL.
    fn a_moves_to_a_new_remote(&self) -> String {
        self.ctxfold(&self.a, &["remote", "remove", "origin"]).ok();
        fs::remove_dir_all(&self.remote).unwrap();
        let second = self.env.path("second.git").to_str().unwrap().to_string();
        self.git(None, ["init", "--quiet", "--bare", &second]);
        self.ctxfold(&self.a, &["remote", "add", "backup", &second])
            .ok();
        second
    }

    /// Store B cloned from `url` restores each (session id, own fixture) byte for byte.
    fn clones_back(&self, url: &str, sessions: &[(&str, &str)]) {
        self.ctxfold(&self.b, &["clone", url]).ok();
        for (id, name) in sessions {
            assert_eq!(self.restored(&self.b, id), fs::read(fixture(name)).unwrap());
        }
    }

    /// A conflict manifest's session, reconstructed and verified.
    fn conflict_bytes(&self, store: &Path, rel: &str) -> Vec<u8> {
        let manifest = store.join("manifests").join(rel);
        let args = [
            "--store",
            store.to_str().unwrap(),
            "--manifest",
            manifest.to_str().unwrap(),
        ];
        self.env.run("ctxfold-cat-manifest", args).ok().stdout
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.env.path(name);
        fs::write(&path, bytes).unwrap();
        path
    }
}

/// The sessions folded here are the own fixtures: only their bytes matter, nothing about them.
fn fixture(name: &str) -> PathBuf {
    common::own_fixture(name)
}

/// Every object of a store (packed or loose), by name, sorted, each once.
fn object_names(store: &Path) -> Vec<String> {
    let mut names: Vec<String> = ctxfold::store::Store::at(store)
        .odb()
        .list()
        .unwrap()
        .filter_map(|entry| match entry {
            ctxfold::odb::Listed::Object { digest, .. } => Some(digest.to_string()),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The loose object files of a store (or a checkout of its remote), by file name, sorted.
fn loose_files(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for fan in fs::read_dir(dir.join("objects")).into_iter().flatten() {
        for object in fs::read_dir(fan.unwrap().path()).unwrap() {
            names.push(object.unwrap().file_name().into_string().unwrap());
        }
    }
    names.sort();
    names
}

/// The pack files of a store (or a checkout of its remote), sorted.
fn pack_files(dir: &Path) -> Vec<PathBuf> {
    let mut packs: Vec<PathBuf> = fs::read_dir(dir.join("packs-ctxfold"))
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
        .collect();
    packs.sort();
    packs
}

fn conflict_name(bytes: &[u8]) -> String {
    format!("conflicts/both@{}.json", &sha256_hex(bytes)[..12])
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn two_stores_converge_through_a_bare_remote_losing_nothing() {
    let w = World::new();
    let long = fs::read(fixture(own::CODEX_SHELL_CRLF)).unwrap();
    let cut = long
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(3)
        .unwrap()
        .0
        + 1;
    let short = w.write("short.jsonl", &long[..cut]);
    let long_file = w.write("long.jsonl", &long);
    let (x, y) = (
        b"{\"who\":\"A\"}\nfolded on A\n".to_vec(),
        b"{\"who\":\"B\"}\nfolded on B\n".to_vec(),
    );
    let (x_file, y_file) = (w.write("x.jsonl", &x), w.write("y.jsonl", &y));

    w.fold(&w.a, "a-only", &fixture(own::CODEX_MID_TURN));
    w.fold(&w.a, "shared", &short);
    w.fold(&w.a, "both", &x_file);
    fs::create_dir_all(w.a.join("context-fold/shared")).unwrap();
    fs::create_dir_all(w.a.join("context-fold/a-only")).unwrap();
    fs::write(
        w.a.join("context-fold/a-only/seed-index.jsonl"),
        "{\"seq\":7}\n",
    )
    .unwrap();
    fs::write(
        w.a.join("context-fold/shared/seed-index.jsonl"),
        "{\"seq\":1}\n{\"seq\":2}\n",
    )
    .unwrap();
    w.fold(&w.b, "b-only", &fixture(own::CODEX_AGENT_SMALL));
    w.fold(&w.b, "shared", &long_file);
    w.fold(&w.b, "both", &y_file);
    fs::create_dir_all(w.b.join("context-fold/shared")).unwrap();
    fs::write(
        w.b.join("context-fold/shared/seed-index.jsonl"),
        "{\"seq\":1}\n{\"seq\":3}\n",
    )
    .unwrap();
    for store in [&w.a, &w.b] {
        w.ctxfold(
            store,
            &["remote", "add", "origin", w.remote.to_str().unwrap()],
        )
        .ok();
        let listed = w.ctxfold(store, &["remote", "list"]).ok().stdout_text();
        assert_eq!(listed, format!("origin\t{}\n", w.remote.display()));
    }

    let first = w.sync(&w.a);
    // The first sync says what it pushed: every session of A, new there.
    let folded = fs::read_dir(w.a.join("manifests"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert!(
        first.contains(&format!(": {folded} sessions new or changed there\n")),
        "{first}"
    );
    let second = w.sync(&w.b);
    assert!(second.contains("added a-only\n"), "{second}");
    assert!(
        second.contains(&format!(
            "conflict both: both kept, the remote's at manifests/{}",
            conflict_name(&x)
        )),
        "{second}"
    );
    assert!(
        !second.contains("extended shared"),
        "B's fold of shared is the longer: {second}"
    );
    let third = w.sync(&w.a);
    assert!(
        third.contains("added b-only\n") && third.contains("extended shared\n"),
        "{third}"
    );
    assert!(
        third.contains(&format!("manifests/{}", conflict_name(&y))),
        "{third}"
    );

    for store in [&w.a, &w.b] {
        assert_eq!(
            w.restored(store, "a-only"),
            fs::read(fixture(own::CODEX_MID_TURN)).unwrap()
        );
        assert_eq!(
            w.restored(store, "b-only"),
            fs::read(fixture(own::CODEX_AGENT_SMALL)).unwrap()
        );
        assert_eq!(w.restored(store, "shared"), long, "the longer fold wins");
    }
    // The conflicting session: each side keeps its own and holds the other's beside it.
    assert_eq!(w.restored(&w.a, "both"), x);
    assert_eq!(w.conflict_bytes(&w.a, &conflict_name(&y)), y);
    assert_eq!(w.restored(&w.b, "both"), y);
    assert_eq!(w.conflict_bytes(&w.b, &conflict_name(&x)), x);
    // Seed indexes (here the files older stores kept, merged into the catalog): the union, local
    // lines first.
    let seeds = |s: &Path, id: &str| {
        let legacy = s.join("context-fold").join(id).join("seed-index.jsonl");
        fs::read_to_string(legacy).unwrap_or_default() + &w.env.stored_seed_index(s, id)
    };
    assert_eq!(
        seeds(&w.a, "shared"),
        "{\"seq\":1}\n{\"seq\":2}\n{\"seq\":3}\n"
    );
    assert_eq!(
        seeds(&w.b, "shared"),
        "{\"seq\":1}\n{\"seq\":3}\n{\"seq\":2}\n"
    );
    assert_eq!(seeds(&w.b, "a-only"), "{\"seq\":7}\n");
    assert!(!w.b.join("context-fold/a-only").exists());
    // A's union of B's legacy file is a new object: B takes it, though it holds its lines.
    let fourth = w.sync(&w.b);
    assert!(
        fourth
            .contains(": pulled 1 object, 0 sessions added, 0 extended, 0 conflicts, 0 seed lines"),
        "{fourth}"
    );
    // Every object on both sides, each intact.
    assert_eq!(object_names(&w.a), object_names(&w.b));
    for digest in &object_names(&w.a) {
        for store in [&w.a, &w.b] {
            w.env
                .run(
                    "ctxfold-cat-object",
                    ["--store", store.to_str().unwrap(), "-e", digest],
                )
                .ok();
        }
    }
    for git_dir in [
        w.a.join("mirror.git"),
        w.b.join("mirror.git"),
        w.remote.clone(),
    ] {
        w.git(Some(&git_dir), ["fsck", "--strict", "--no-dangling"]);
    }

    // Settled: more syncs change nothing and make no commit.
    let remote_head = w.git(Some(&w.remote), ["rev-parse", "refs/heads/ctxfold"]);
    let before = (
        Env::snapshot(&w.a.join("manifests")),
        Env::snapshot(&w.b.join("manifests")),
    );
    for store in [&w.b, &w.a] {
        let again = w.sync(store);
        assert!(
            again.contains(
                ": pulled 0 objects, 0 sessions added, 0 extended, 0 conflicts, 0 seed lines; at "
            ) && again.ends_with(", nothing to push\n"),
            "{again}"
        );
    }
    assert_eq!(
        w.git(Some(&w.remote), ["rev-parse", "refs/heads/ctxfold"]),
        remote_head
    );
    assert_eq!(
        (
            Env::snapshot(&w.a.join("manifests")),
            Env::snapshot(&w.b.join("manifests"))
        ),
        before
    );

    // The remote checks out with plain git, and its files are the store's bytes.
    let checkout = w.env.path("checkout");
    w.git(
        None,
        [
            "clone",
            "--quiet",
            "--branch",
            "ctxfold",
            w.remote.to_str().unwrap(),
            checkout.to_str().unwrap(),
        ],
    );
    let some_pack = &pack_files(&w.a)[0];
    let rel = some_pack.strip_prefix(&w.a).unwrap();
    assert_eq!(
        fs::read(checkout.join(rel)).unwrap(),
        fs::read(some_pack).unwrap()
    );

    // A third machine: clone gives it everything.
    let c = w.env.path("C");
    let cloned = w
        .env
        .run(
            "ctxfold",
            [
                "clone",
                w.remote.to_str().unwrap(),
                "--store",
                c.to_str().unwrap(),
            ],
        )
        .ok();
    assert!(
        cloned.stdout_text().contains("added shared\n"),
        "{}",
        cloned.stdout_text()
    );
    assert_eq!(w.restored(&c, "shared"), long);
    assert_eq!(
        w.restored(&c, "b-only"),
        fs::read(fixture(own::CODEX_AGENT_SMALL)).unwrap()
    );
    // Every object of A's, and the batch its merge of the remote's legacy seed file made; B's
    // (the last to push) seed index.
    let cloned = object_names(&c);
    assert!(object_names(&w.a).iter().all(|o| cloned.contains(o)));
    assert_eq!(w.env.stored_seed_index(&c, "shared"), seeds(&w.b, "shared"));
    // Clone refuses a store that already holds sessions.
    w.env
        .run(
            "ctxfold",
            [
                "clone",
                w.remote.to_str().unwrap(),
                "--store",
                w.a.to_str().unwrap(),
            ],
        )
        .fails(3)
        .one_line_error("already holds sessions");
}

/// A has synced to the remote; then someone pushes a commit made by `tamper` on a checkout of it.
/// B (holding one session of its own, sharing no object with A's) is set up and mirrored.
fn tampered_remote(tamper: impl FnOnce(&Path, &[String])) -> World {
    tampered_remote_of(
        |w| {
            w.fold(&w.a, "a-only", &fixture(own::CODEX_MID_TURN));
            w.fold(&w.a, "other", &fixture(own::CODEX_SHELL_CRLF));
        },
        tamper,
    )
}

/// [`tampered_remote`], A's objects unpacked to loose files before the sync.
fn tampered_remote_unpacked(tamper: impl FnOnce(&Path, &[String])) -> World {
    tampered_remote_of(
        |w| {
            w.fold(&w.a, "a-only", &fixture(own::CODEX_MID_TURN));
            w.fold(&w.a, "other", &fixture(own::CODEX_SHELL_CRLF));
            w.ctxfold(&w.a, &["unpack"]).ok();
        },
        tamper,
    )
}

/// [`tampered_remote`], with A's store filled by `fill`.
fn tampered_remote_of(fill: impl FnOnce(&World), tamper: impl FnOnce(&Path, &[String])) -> World {
    let w = World::new();
    fill(&w);
    w.ctxfold(
        &w.a,
        &["remote", "add", "origin", w.remote.to_str().unwrap()],
    )
    .ok();
    w.sync(&w.a);
    let work = w.env.path("work");
    w.git(
        None,
        [
            "clone",
            "--quiet",
            "--branch",
            "ctxfold",
            w.remote.to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    tamper(&work, &loose_files(&w.a));
    let in_work = |args: &[&str]| {
        let out = Command::new("git")
            .env_clear()
            .env("HOME", &w.env.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(&work)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    in_work(&["commit", "--quiet", "-am", "tamper"]);
    in_work(&["push", "--quiet", "origin", "ctxfold"]);
    w.fold(&w.b, "b-only", &w.write("b.jsonl", b"{\"only\":\"B\"}\n"));
    w.ctxfold(
        &w.b,
        &["remote", "add", "origin", w.remote.to_str().unwrap()],
    )
    .ok();
    w.env
        .run("ctxfold-mirror", ["--store", w.b.to_str().unwrap()])
        .ok();
    w
}

/// A store's files (its mirror repository and its caches aside: the secret scan remembers what it
/// read before a sync is refused): a refused sync must leave them as they were.
fn store_files(store: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    Env::snapshot(store)
        .into_iter()
        .filter(|(p, _)| {
            !p.starts_with(store.join("mirror.git")) && !p.starts_with(store.join("cache"))
        })
        .collect()
}

fn refused(w: &World, error: &str) {
    let before = store_files(&w.b);
    w.ctxfold(&w.b, &["sync"]).fails(4).one_line_error(error);
    assert_eq!(
        store_files(&w.b),
        before,
        "a refused sync changes nothing in the store"
    );
    // The remote was not touched either: it still holds the tampered commit, not B's.
    let log = w.git(
        Some(&w.remote),
        ["log", "--format=%s", "refs/heads/ctxfold"],
    );
    assert!(log.starts_with("tamper\n"), "{log}");
}

#[test]
fn a_remote_pack_with_a_damaged_block_is_refused_and_nothing_is_applied() {
    let w = tampered_remote(|work, _| {
        let pack = &pack_files(work)[0];
        let mut bytes = fs::read(pack).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x20;
        fs::write(pack, bytes).unwrap();
    });
    refused(&w, "refused the remote's packs, nothing was applied: ");
}

#[test]
fn a_remote_object_that_does_not_match_its_name_is_refused_and_nothing_is_applied() {
    let mut victim = String::new();
    let w = tampered_remote_unpacked(|work, names| {
        // One object holds another object's (valid zstd) bytes.
        let path = |n: &String| work.join("objects").join(&n[..2]).join(n);
        fs::copy(path(&names[1]), path(&names[0])).unwrap();
        victim = names[0].strip_suffix(".zst").unwrap().to_string();
    });
    refused(
        &w,
        &format!(
            "refused the remote's objects, nothing was applied: object {victim} is corrupt: its bytes hash to"
        ),
    );
}

#[test]
fn a_remote_manifest_that_does_not_reconstruct_is_refused_and_nothing_is_applied() {
    let w = tampered_remote(|work, _| {
        let path = work.join("manifests/a-only.json");
        let text = fs::read_to_string(&path).unwrap();
        let at = text.find("\"sha256\":\"").unwrap() + 10;
        let flipped = if &text[at..at + 1] == "0" { "1" } else { "0" };
        fs::write(
            &path,
            format!("{}{flipped}{}", &text[..at], &text[at + 1..]),
        )
        .unwrap();
    });
    refused(
        &w,
        "refused the remote's manifests, nothing was applied: manifests/a-only.json: reconstruction gives",
    );
}

#[test]
fn seed_indexes_travel_as_the_seed_catalog_and_settle() {
    let w = World::new();
    w.fold(&w.a, "a-only", &fixture(own::CODEX_MID_TURN));
    w.ctxfold(&w.a, &["seeds"]).ok();
    let index = w.env.stored_seed_index(&w.a, "a-only");
    assert!(!index.is_empty());
    for store in [&w.a, &w.b] {
        w.ctxfold(
            store,
            &["remote", "add", "origin", w.remote.to_str().unwrap()],
        )
        .ok();
    }
    w.sync(&w.a);
    let second = w.sync(&w.b);
    let lines = index.lines().count();
    assert!(
        second.contains(&format!(
            " {lines} seed line{};",
            if lines == 1 { "" } else { "s" }
        )),
        "{second}"
    );
    assert_eq!(w.env.stored_seed_index(&w.b, "a-only"), index);
    let read = |store: &Path| {
        w.ctxfold(store, &["recall", "--json", "--session", "a-only", "."])
            .stdout_text()
    };
    assert_eq!(read(&w.b), read(&w.a));
    // B indexes nothing again, and neither side takes anything more from the other.
    let again = w.ctxfold(&w.b, &["seeds", "--json"]).ok().stdout_text();
    assert_eq!(again, "{\"appended\":0,\"session\":\"a-only\"}\n");
    for store in [&w.a, &w.b] {
        assert!(w.sync(store).contains(" 0 seed lines;"));
    }
    assert_eq!(w.env.stored_seed_index(&w.a, "a-only"), index);
}

/// [`tampered_remote_of`] a store whose one session is indexed, `edit` changing the remote's
/// catalog text.
fn tampered_catalog(edit: impl FnOnce(String) -> String) -> World {
    tampered_remote_of(
        |w| {
            w.fold(&w.a, "a-only", &fixture(own::CODEX_MID_TURN));
            w.ctxfold(&w.a, &["seeds"]).ok();
        },
        |work, _| {
            let path = work.join("seeds/catalog.jsonl");
            fs::write(&path, edit(fs::read_to_string(&path).unwrap())).unwrap();
        },
    )
}

#[test]
fn a_remote_seed_catalog_naming_an_object_it_lacks_is_refused_and_nothing_is_applied() {
    let zeros = "0".repeat(64);
    let w = tampered_catalog(|text| {
        format!("{text}{{\"session\":\"a-only\",\"object\":\"{zeros}\",\"bytes\":3}}\n")
    });
    refused(
        &w,
        &format!(
            "refused the remote's seed catalog, nothing was applied: the remote's seed catalog names object {zeros} of 3 bytes (session a-only), which it does not hold"
        ),
    );
}

#[test]
fn a_remote_seed_catalog_line_that_is_no_batch_is_refused_and_nothing_is_applied() {
    let w = tampered_catalog(|text| text.replace("a-only", "../a-only"));
    refused(
        &w,
        "refused the remote's seed catalog, nothing was applied: seeds/catalog.jsonl:1: ",
    );
}

#[test]
fn remotes_are_added_listed_and_removed_and_sync_needs_one() {
    let w = World::new();
    w.fold(&w.a, "a-only", &fixture(own::CODEX_MID_TURN));
    w.ctxfold(&w.a, &["sync"])
        .fails(2)
        .one_line_error("no remote to sync with");
    w.ctxfold(&w.a, &["remote", "add", "one", "/one"]).ok();
    w.ctxfold(&w.a, &["remote", "add", "two", "/two"]).ok();
    w.ctxfold(&w.a, &["sync"])
        .fails(2)
        .one_line_error("none is 'origin'");
    let listed = w
        .ctxfold(&w.a, &["remote", "list", "--json"])
        .ok()
        .stdout_text();
    assert_eq!(
        listed,
        "{\"name\":\"one\",\"url\":\"/one\",\"encrypted\":false,\"recipients\":[]}\n\
         {\"name\":\"two\",\"url\":\"/two\",\"encrypted\":false,\"recipients\":[]}\n"
    );
    w.ctxfold(&w.a, &["remote", "remove", "one"]).ok();
    w.ctxfold(&w.a, &["remote", "remove", "one"])
        .fails(1)
        .one_line_error("no remote \"one\"");
    assert_eq!(
        w.ctxfold(&w.a, &["remote", "list"]).ok().stdout_text(),
        "two\t/two\n"
    );
    w.ctxfold(&w.a, &["sync", "nowhere"])
        .fails(5)
        .one_line_error("sync with nowhere: look up refs/heads/ctxfold on nowhere");
    // A remote whose path does not exist: git's own reason, not only its status.
    w.ctxfold(&w.a, &["sync", "two"]).fails(5).one_line_error(
        "git exited with 128: fatal: '/two' does not appear to be a git repository",
    );
}

/// Fold `sessions` (id, own fixture) into `store`, train a dictionary on them (it becomes
/// the store's current one) and return its sha256.
fn trained(w: &World, store: &Path, sessions: &[(&str, &str)]) -> String {
    for (id, name) in sessions {
        w.fold(store, id, &fixture(name));
    }
    let out = w
        .env
        .run("ctxfold-train-dict", ["--store", store.to_str().unwrap()])
        .ok()
        .stdout_text();
    let digest = out.trim().to_string();
    assert_eq!(current(store).as_deref(), Some(digest.as_str()));
    digest
}

/// The store's `dictionaries/CURRENT`, trimmed.
fn current(store: &Path) -> Option<String> {
    fs::read_to_string(store.join("dictionaries/CURRENT"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// The store's registered dictionaries, sorted.
fn registered(store: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(store.join("dictionaries"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "CURRENT")
        .collect();
    names.sort();
    names
}

/// How many of the store's pack blocks were compressed with a dictionary (their frame names its
/// id).
fn written_with_a_dictionary(store: &Path) -> usize {
    let store = ctxfold::store::Store::at(store);
    let mut count = 0;
    for member in store.odb().packs().unwrap() {
        let bytes = fs::read(member.pack.path()).unwrap();
        for block in member.pack.blocks() {
            let at = block.unwrap().pack_offset as usize;
            let header = &bytes[at..bytes.len().min(at + 18)];
            count += usize::from(zstd::zstd_safe::get_dict_id_from_frame(header).is_some());
        }
    }
    count
}

/// The dictionary object's path in a checkout (or store).
fn dictionary_object(dir: &Path, digest: &str) -> PathBuf {
    dir.join("objects")
        .join(&digest[..2])
        .join(format!("{digest}.zst"))
}

#[test]
fn zstd_dictionaries_travel_with_sync_and_clone_and_current_stays_local() {
    let w = World::new();
    let early_a = [
        ("pi", own::PI_V1_MODEL_CHANGES),
        ("big", own::CODEX_AGENT_WORK),
        ("mid", own::CODEX_AGENT_SMALL),
    ];
    let late_a = [
        ("late", own::CODEX_SHELL_CRLF),
        ("small", own::CODEX_MID_TURN),
    ];
    let da = trained(&w, &w.a, &early_a);
    for (id, name) in late_a {
        w.fold(&w.a, id, &fixture(name));
    }
    let manifest = fs::read_to_string(w.a.join("manifests/late.json")).unwrap();
    assert!(manifest.contains(&da), "{manifest}");
    assert!(
        written_with_a_dictionary(&w.a) > 0,
        "objects folded after training use the dictionary"
    );
    // B has a dictionary of its own, the one it writes with.
    let early_b = [("large", own::CODEX_UNIFIED_EXEC)];
    let db = trained(&w, &w.b, &early_b);
    let b_only = w.write("b.jsonl", b"{\"only\":\"B\"}\n{\"type\":\"message\"}\n");
    w.fold(&w.b, "b-only", &b_only);
    for store in [&w.a, &w.b] {
        w.ctxfold(
            store,
            &["remote", "add", "origin", w.remote.to_str().unwrap()],
        )
        .ok();
    }

    w.sync(&w.a);
    let files = w.git(
        Some(&w.remote),
        ["ls-tree", "-r", "--name-only", "refs/heads/ctxfold"],
    );
    assert!(
        files.lines().any(|l| l == format!("dictionaries/{da}")),
        "{files}"
    );
    assert!(!files.contains("CURRENT"), "CURRENT is not mirrored");
    let second = w.sync(&w.b);
    assert!(
        second.contains(&format!("added zstd dictionary {da}\n")),
        "{second}"
    );
    let third = w.sync(&w.a);
    assert!(
        third.contains(&format!("added zstd dictionary {db}\n")),
        "{third}"
    );
    let mut both = vec![da.clone(), db.clone()];
    both.sort();
    assert_eq!(current(&w.a), Some(da.clone()), "A's CURRENT is its own");
    assert_eq!(current(&w.b), Some(db.clone()), "B's CURRENT is its own");

    // A third machine, cloned: everything, and no CURRENT.
    let c = w.env.path("C");
    w.env
        .run(
            "ctxfold",
            [
                "clone",
                w.remote.to_str().unwrap(),
                "--store",
                c.to_str().unwrap(),
            ],
        )
        .ok();
    assert_eq!(current(&c), None);
    for store in [&w.a, &w.b, &c] {
        assert_eq!(registered(store), both);
        for (id, name) in early_a.iter().chain(&late_a).chain(&early_b) {
            assert_eq!(
                w.restored(store, id),
                fs::read(fixture(name)).unwrap(),
                "{id} from {}",
                store.display()
            );
        }
        assert_eq!(w.restored(store, "b-only"), fs::read(&b_only).unwrap());
        w.ctxfold(store, &["fsck", "--full"]).ok();
    }
    assert_eq!(object_names(&c), object_names(&w.a));
    assert_eq!(object_names(&w.b), object_names(&w.a));
}

/// A's store holds a dictionary and sessions written with it.
fn fill_with_a_dictionary(w: &World) {
    trained(
        w,
        &w.a,
        &[
            ("pi", own::PI_V1_MODEL_CHANGES),
            ("mid", own::CODEX_AGENT_SMALL),
        ],
    );
    w.fold(&w.a, "late", &fixture(own::CODEX_SHELL_CRLF));
    assert!(written_with_a_dictionary(&w.a) > 0);
}

/// The one dictionary registered in a checkout of the remote.
fn only_dictionary(work: &Path) -> String {
    let names = registered(work);
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].clone()
}

#[test]
fn a_remote_dictionary_whose_object_is_corrupt_is_refused_and_nothing_is_applied() {
    let mut victim = String::new();
    let w = tampered_remote_of(fill_with_a_dictionary, |work, names| {
        victim = only_dictionary(work);
        assert_eq!(
            names.len(),
            1,
            "the dictionary is the one loose object: {names:?}"
        );
        // Other bytes, a valid frame written without a dictionary (as a dictionary always is).
        fs::write(
            dictionary_object(work, &victim),
            zstd::encode_all(&b"not the dictionary"[..], 3).unwrap(),
        )
        .unwrap();
    });
    refused(
        &w,
        &format!(
            "refused the remote's dictionaries, nothing was applied: object {victim} is corrupt: its bytes hash to"
        ),
    );
}

#[test]
fn a_remote_dictionary_without_its_object_is_refused_and_nothing_is_applied() {
    let mut victim = String::new();
    let w = tampered_remote_of(fill_with_a_dictionary, |work, _| {
        victim = only_dictionary(work);
        fs::remove_file(dictionary_object(work, &victim)).unwrap();
    });
    refused(
        &w,
        &format!(
            "refused the remote's dictionaries, nothing was applied: the remote registers zstd dictionary {victim} but does not hold its object"
        ),
    );
}

#[test]
fn a_remote_dictionary_with_the_zstd_id_of_another_is_refused_and_nothing_is_applied() {
    let w = World::new();
    fill_with_a_dictionary(&w);
    // B registers other bytes under the same zstd id (the 4 bytes after the magic): after a
    // merge, readers could not tell which one a frame names.
    let da = registered(&w.a)[0].clone();
    let mut lookalike =
        zstd::decode_all(&fs::read(dictionary_object(&w.a, &da)).unwrap()[..]).unwrap();
    *lookalike.last_mut().unwrap() ^= 1;
    let db = sha256_hex(&lookalike);
    let object = dictionary_object(&w.b, &db);
    fs::create_dir_all(object.parent().unwrap()).unwrap();
    fs::write(&object, zstd::encode_all(&lookalike[..], 3).unwrap()).unwrap();
    fs::create_dir_all(w.b.join("dictionaries")).unwrap();
    fs::write(w.b.join("dictionaries").join(&db), b"").unwrap();
    w.fold(&w.b, "b-only", &w.write("b.jsonl", b"{\"only\":\"B\"}\n"));
    for store in [&w.a, &w.b] {
        w.ctxfold(
            store,
            &["remote", "add", "origin", w.remote.to_str().unwrap()],
        )
        .ok();
    }
    w.sync(&w.a);
    let before = store_files(&w.b);
    w.ctxfold(&w.b, &["sync"]).fails(4).one_line_error(&format!(
        "refused the remote's dictionaries, nothing was applied: zstd dictionaries {db} and {da} have the same id"
    ));
    assert_eq!(store_files(&w.b), before);
}

/// A killed sync leaves its `git push` running on its own; the next sync waits for it instead of
/// racing it for the remote-tracking ref (once: "cannot lock ref 'refs/remotes/origin/ctxfold':
/// is at X but expected Y"). The push is held open by a receive-pack that sleeps, so the window is
/// there every time.
#[test]
fn a_sync_after_a_killed_one_waits_for_the_git_it_left_running() {
    let w = World::new();
    let a = &w.a;
    w.synced_once(a);
    let (started, done) = (w.env.path("push-started"), w.env.path("push-done"));
    let receive = w.write(
        "slow-receive-pack",
        format!(
            "#!/bin/sh\ntouch {}\nsleep 3\ngit-receive-pack \"$@\"\nstatus=$?\ntouch {}\nexit $status\n",
            started.display(),
            done.display()
        )
        .as_bytes(),
    );
    fs::set_permissions(
        &receive,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mirror = a.join("mirror.git");
    w.git(
        Some(&mirror),
        [
            "config",
            "remote.origin.receivepack",
            receive.to_str().unwrap(),
        ],
    );
    w.fold(a, "s2", &fixture(own::PI_AGENT_WORK));
    let mut killed = w
        .env
        .command("ctxfold")
        .args(["sync", "--store", a.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let begun = std::time::Instant::now();
    while !started.exists() {
        assert!(begun.elapsed().as_secs() < 60, "the push never started");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(!done.exists(), "the push ended before the sync was killed");

    let again = w.ctxfold(a, &["sync"]);
    assert!(
        done.exists(),
        "the next sync ran beside the push the killed one left"
    );
    let again = again.ok();
    assert!(
        again
            .stderr
            .contains("waiting for another sync (or a git it started) to finish"),
        "{}",
        again.stderr
    );
    // Both sessions reached the remote: a clone has them.
    w.ctxfold(&w.b, &["clone", w.remote.to_str().unwrap()]).ok();
    assert_eq!(
        w.restored(&w.b, "s2"),
        fs::read(fixture(own::PI_AGENT_WORK)).unwrap()
    );
}

/// A git killed while it held a ref lock leaves the lock file; the next sync removes it (no git
/// of ours runs then) instead of failing on it for good.
#[test]
fn a_lock_file_a_killed_git_left_in_the_mirror_does_not_fail_the_next_sync() {
    let w = World::new();
    let a = &w.a;
    w.synced_once(a);
    let mirror = a.join("mirror.git");
    for lock in ["refs/remotes/origin/ctxfold.lock", "packed-refs.lock"] {
        fs::write(mirror.join(lock), b"").unwrap();
    }
    w.fold(a, "s2", &fixture(own::PI_AGENT_WORK));
    w.sync(a);
    assert!(!mirror.join("refs/remotes/origin/ctxfold.lock").exists());
    w.ctxfold(&w.b, &["clone", w.remote.to_str().unwrap()]).ok();
    assert_eq!(
        w.restored(&w.b, "s2"),
        fs::read(fixture(own::PI_AGENT_WORK)).unwrap()
    );
}

/// Every `step`-th of `sessions` ([`many_sessions`]) restores from `store` byte for byte (`at`
/// says when, in a failure).
fn restores_every(w: &World, store: &Path, sessions: &[PathBuf], step: usize, at: &str) {
    for (n, path) in sessions.iter().enumerate().step_by(step) {
        let id = common::small_id(n);
        assert_eq!(
            w.restored(store, &id),
            fs::read(path).unwrap(),
            "{id}, {at}"
        );
    }
}

/// `count` small sessions in the folder `many` ([`common::small_sessions`]).
fn many_sessions(w: &World, count: usize) -> Vec<PathBuf> {
    common::small_sessions(&w.env.path("many"), count)
}

#[test]
fn a_sync_of_hundreds_of_sessions_leaves_the_mirror_packed_and_clones_back() {
    let w = World::new();
    // A folder of small sessions folded at once.
    let count = 300;
    let dir = many_sessions(&w, count)[0].parent().unwrap().to_owned();
    w.ctxfold(&w.a, &["fold", "--apply", "-q", dir.to_str().unwrap()])
        .ok();
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    w.sync(&w.a);
    let mirror = w.a.join("mirror.git");
    let counted = w.git(Some(&mirror), ["count-objects", "-v"]);
    assert!(counted.starts_with("count: 0\n"), "{counted}");
    assert!(counted.contains("\npacks: 1\n"), "{counted}");
    // Another machine clones it back whole.
    w.ctxfold(&w.b, &["clone", remote]).ok();
    let listed = w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text();
    assert_eq!(listed.lines().count(), count);
}

/// The names of the files and folders in a store's `manifests/`.
fn manifest_names(store: &Path) -> Vec<std::ffi::OsString> {
    (fs::read_dir(store.join("manifests")).unwrap())
        .map(|e| e.unwrap().file_name())
        .collect()
}

/// Another writer holding a store's lock shared (as a fold does) until dropped: no packing of
/// loose manifests runs meanwhile, since it needs the lock exclusive.
struct Writer(std::process::Child);

impl Writer {
    fn holding(store: &Path) -> Self {
        let lock = store.join("locks/objects.lock");
        fs::create_dir_all(lock.parent().unwrap()).unwrap();
        fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&lock)
            .unwrap();
        // Not forking: killing it ends the only process that holds the lock (and the test's pipes).
        let holder = Command::new("flock")
            .args([
                "--shared",
                "--no-fork",
                lock.to_str().unwrap(),
                "sleep",
                "600",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Self(holder)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The manifests a merge adds when it adds as many new sessions as make fold pack its loose ones
/// are committed into the packed form at once: none is a file, even while another writer holds
/// the store (which keeps the packing that follows a loose commit from running). The remote's
/// seed batches, read in the order they lie in its pack, are listed in its catalog's order: the
/// clone has nothing to push back.
#[test]
fn a_clone_of_hundreds_of_sessions_commits_them_packed_and_lists_seeds_as_the_remote_does() {
    let w = World::new();
    let sessions = many_sessions(&w, 300);
    // Folded the last named first, then repacked in one pack: its seed batches lie in the pack
    // in another order than the catalog lists them.
    let (first, last) = sessions.split_at(150);
    for half in [last, first] {
        let mut args = vec!["fold", "--apply", "-q"];
        args.extend(half.iter().map(|p| p.to_str().unwrap()));
        w.ctxfold(&w.a, &args).ok();
    }
    w.ctxfold(&w.a, &["gc", "--apply", "--aggressive", "--prune=now"])
        .ok();
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    w.sync(&w.a);
    let head = || w.git(Some(&w.remote), ["rev-parse", "refs/heads/ctxfold"]);
    let pushed = head();

    let writer = Writer::holding(&w.b);
    let clone = w.ctxfold(&w.b, &["clone", remote]);
    drop(writer);
    let clone = clone.ok().stdout_text();
    assert!(clone.contains("300 sessions added"), "{clone}");
    assert_eq!(manifest_names(&w.b), ["packed.json"]);
    restores_every(&w, &w.b, &sessions, 29, "after the clone");
    let listed = w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text();
    assert_eq!(listed.lines().count(), sessions.len());
    w.ctxfold(&w.b, &["fsck", "--full"]).ok();
    let catalog = |store: &Path| fs::read_to_string(store.join("seeds/catalog.jsonl")).unwrap();
    assert_eq!(catalog(&w.b), catalog(&w.a));
    let again = w.sync(&w.b);
    assert!(again.contains("nothing to push"), "{again}");
    assert_eq!(head(), pushed);
}

/// A clone of hundreds of sessions killed with -9 at moments across it (staging, verifying, the
/// packed commit, the seeds) leaves a store whose every session restores; a sync then finishes
/// it, every session there and its seeds listed as the remote lists them.
#[test]
fn a_clone_of_hundreds_of_sessions_killed_anywhere_loses_nothing_and_a_sync_finishes_it() {
    let w = World::new();
    let sessions = many_sessions(&w, 300);
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    // Folded and pushed while another writer holds the store, so that no packing runs: the
    // remote holds every manifest loose and no body in its packs, and the packed commit writes
    // the bodies itself.
    let writer = Writer::holding(&w.a);
    let dir = sessions[0].parent().unwrap().to_str().unwrap();
    w.ctxfold(&w.a, &["fold", "--apply", "-q", dir]).ok();
    w.sync(&w.a);
    drop(writer);
    assert_eq!(manifest_names(&w.a).len(), sessions.len(), "all loose");
    let started = std::time::Instant::now();
    let cloned = w.ctxfold(&w.b, &["clone", remote]).ok().stdout_text();
    let whole = started.elapsed();
    // Told by name, whatever order they were verified and committed in.
    let added: Vec<&str> = (cloned.lines())
        .filter_map(|l| l.strip_prefix("added "))
        .collect();
    let mut by_name = added.clone();
    by_name.sort_unstable();
    assert!(
        added.len() == sessions.len() && added == by_name,
        "{cloned}"
    );
    assert_eq!(manifest_names(&w.b), ["packed.json"]);
    assert_eq!(
        pack_files(&w.b).len(),
        pack_files(&w.a).len() + 1,
        "one of bodies"
    );
    let catalog = |store: &Path| fs::read_to_string(store.join("seeds/catalog.jsonl")).unwrap();
    for eighth in 1..8 {
        fs::remove_dir_all(&w.b).unwrap();
        let mut clone = w.env.command("ctxfold");
        clone
            .args(["--store", w.b.to_str().unwrap(), "clone", remote])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = clone.spawn().unwrap();
        std::thread::sleep(whole * eighth / 8);
        child.kill().ok();
        child.wait().unwrap();
        // Whatever it committed restores.
        let before = (w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text())
            .lines()
            .count();
        if before > 0 {
            w.ctxfold(&w.b, &["fsck", "--full"]).ok();
        }
        let remotes = w.ctxfold(&w.b, &["remote"]).ok().stdout_text();
        match remotes.contains("origin") {
            true => w.sync(&w.b),
            false => {
                fs::remove_dir_all(&w.b).ok();
                w.ctxfold(&w.b, &["clone", remote]).ok().stdout_text()
            }
        };
        let listed = w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text();
        let at = format!("killed at {eighth}/8 of {whole:?}, {before} listed before");
        assert_eq!(listed.lines().count(), sessions.len(), "{at}");
        w.ctxfold(&w.b, &["fsck", "--full"]).ok();
        assert_eq!(catalog(&w.b), catalog(&w.a), "{at}");
        restores_every(&w, &w.b, &sessions, 97, &at);
    }
}

/// A sync whose merge leaves enough loose manifests for the store's packing to run after it
/// (200 of the store's own, 120 pulled), killed with -9 at moments across it (the fetch, the
/// merge, the packing, the push): whatever it committed restores, the next sync finishes it with
/// every session there, and gc packs what a packing killed half-way left loose.
#[test]
fn a_sync_killed_while_its_store_packs_the_manifests_it_merged_loses_nothing() {
    let w = World::new();
    let sessions = many_sessions(&w, 320);
    let paths = |range: std::ops::Range<usize>| -> Vec<&str> {
        sessions[range]
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect()
    };
    let remote = w.remote.to_str().unwrap();
    let fold = |store: &Path, files: Vec<&str>| {
        let args: Vec<&str> = ["fold", "--apply", "-q"].into_iter().chain(files).collect();
        w.ctxfold(store, &args).ok();
    };
    fold(&w.a, paths(200..320));
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    w.sync(&w.a);
    fold(&w.b, paths(0..200));
    w.ctxfold(&w.b, &["remote", "add", "origin", remote]).ok();
    assert_eq!(manifest_names(&w.b).len(), 200, "below the packing's count");
    let pristine = w.env.path("B-pristine");
    let copy = |from: &Path, to: &Path| {
        let _ = fs::remove_dir_all(to);
        let ok = Command::new("cp")
            .arg("-a")
            .arg(from)
            .arg(to)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    copy(&w.b, &pristine);
    let started = std::time::Instant::now();
    w.sync(&w.b);
    let whole = started.elapsed();
    assert_eq!(
        manifest_names(&w.b),
        ["packed.json"],
        "the sync packed them"
    );
    // Across it, and more often near its end, where the packing runs.
    for moment in [4, 8, 12, 16, 20, 24, 26, 27, 28, 29, 30, 31] {
        copy(&pristine, &w.b);
        let mut sync = w.env.command("ctxfold");
        sync.args(["--store", w.b.to_str().unwrap(), "sync"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = sync.spawn().unwrap();
        std::thread::sleep(whole * moment / 32);
        child.kill().ok();
        child.wait().unwrap();
        let at = format!("killed at {moment}/32 of {whole:?}");
        let before = (w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text())
            .lines()
            .count();
        assert!(before >= 200, "{at}: {before} listed");
        w.ctxfold(&w.b, &["fsck", "--full"]).ok();
        w.sync(&w.b);
        let listed = w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text();
        assert_eq!(listed.lines().count(), sessions.len(), "{at}");
        w.ctxfold(&w.b, &["fsck", "--full"]).ok();
        // A packing killed half-way leaves fewer loose manifests than the next sync packs: gc
        // packs them, beside those packed already.
        w.ctxfold(&w.b, &["gc", "--apply"]).ok();
        assert_eq!(manifest_names(&w.b), ["packed.json"], "{at}");
        restores_every(&w, &w.b, &sessions, 53, &at);
    }
}

#[test]
fn every_sync_leaves_the_mirror_without_loose_objects_and_its_packs_few() {
    let w = World::new();
    let remote = w.remote.to_str().unwrap();
    let field = |counted: &str, name: &str| -> u64 {
        (counted.lines())
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap()
    };
    let mirror = w.a.join("mirror.git");
    let line = |n: usize| {
        format!(
            "{{\"type\":\"note\",\"text\":\"sync {n} {}\"}}\n",
            "x".repeat(n * 97)
        )
    };
    let syncs = 12;
    for n in 0..syncs {
        // A session of its own each time, and B's pushes in between for A to fetch.
        w.fold(
            &w.a,
            &format!("a{n}"),
            &w.write(&format!("a{n}.jsonl"), line(n).as_bytes()),
        );
        if n == 0 {
            w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
        }
        w.sync(&w.a);
        let counted = w.git(Some(&mirror), ["count-objects", "-v"]);
        assert_eq!(field(&counted, "count:"), 0, "after sync {n}: {counted}");
        if n % 4 == 1 {
            w.fold(
                &w.b,
                &format!("b{n}"),
                &w.write(&format!("b{n}.jsonl"), line(n).as_bytes()),
            );
            if n == 1 {
                w.ctxfold(&w.b, &["remote", "add", "origin", remote]).ok();
            }
            w.sync(&w.b);
        }
    }
    // Each pack holds at least twice the objects of the next smaller one.
    let counted = w.git(Some(&mirror), ["count-objects", "-v"]);
    let (packs, objects) = (field(&counted, "packs:"), field(&counted, "in-pack:"));
    assert!(
        packs >= 1 && packs <= 1 + objects.ilog2() as u64,
        "{counted}"
    );
    w.git(Some(&mirror), ["fsck", "--no-progress", "--strict"]);
    w.sync(&w.b);
    for n in 0..syncs {
        assert_eq!(w.restored(&w.b, &format!("a{n}")), line(n).as_bytes());
    }
}

#[test]
fn a_sync_refuses_to_push_sessions_holding_secrets_before_merging_unless_allowed() {
    let w = World::new();
    let rule = |id: &str| {
        ctxfold::secrets::rules::RULES
            .iter()
            .find(|r| r.id == id)
            .unwrap()
            .example
    };
    let leak = |name: &str, id: &str| {
        let line = serde_json::json!({"type": "note", "text": format!("use {}", rule(id))});
        w.write(name, format!("{line}\n").as_bytes())
    };
    // B pushes first: A's refused sync must not even merge it.
    w.fold(&w.b, "b-only", &fixture(own::CODEX_AGENT_SMALL));
    for store in [&w.a, &w.b] {
        w.ctxfold(
            store,
            &["remote", "add", "origin", w.remote.to_str().unwrap()],
        )
        .ok();
    }
    w.sync(&w.b);
    w.fold(&w.a, "clean", &fixture(own::CODEX_SHELL_CRLF));
    w.fold(&w.a, "leaky-1", &leak("l1.jsonl", "github-token"));
    w.fold(&w.a, "leaky-2", &leak("l2.jsonl", "private-key"));
    let before = store_files(&w.a);
    let remote_before = w.git(Some(&w.remote), ["rev-parse", "refs/heads/ctxfold"]);

    let refused = w.ctxfold(&w.a, &["sync"]).fails(3).one_line_error(
        "2 sessions to push hold secrets, and the remote is not encrypted: leaky-1, leaky-2",
    );
    assert!(
        refused.stderr.contains("--allow-secrets"),
        "{}",
        refused.stderr
    );
    assert_eq!(store_files(&w.a), before, "nothing merged");
    assert!(!w.a.join("manifests/b-only.json").exists());
    let remote_after = w.git(Some(&w.remote), ["rev-parse", "refs/heads/ctxfold"]);
    assert_eq!(remote_after, remote_before, "nothing pushed");
    // The scan was remembered: a session's secrets are found again without reading it.
    assert!(w.a.join("cache/secrets.jsonl").is_file());

    // The mirror's commit of the refused state was undone: a session taken out is not sent.
    w.ctxfold(&w.a, &["rm", "--apply", "leaky-2"]).ok();
    w.ctxfold(&w.a, &["sync"]).fails(3).one_line_error(
        "1 session to push holds secrets, and the remote is not encrypted: leaky-1 (",
    );
    let allowed = w
        .ctxfold(&w.a, &["sync", "--allow-secrets"])
        .ok()
        .stdout_text();
    assert!(allowed.contains(", 1 session holding secrets"), "{allowed}");
    let sent = w.git(
        Some(&w.remote),
        ["log", "-p", "--format=%H", "refs/heads/ctxfold"],
    );
    assert!(
        !sent.contains("leaky-2"),
        "a session taken out before any push never leaves"
    );
    assert!(w.a.join("manifests/b-only.json").exists());
    // What is on the remote already is not asked about again: a clean session syncs as ever.
    w.fold(&w.a, "clean-2", &fixture(own::CODEX_MID_TURN));
    let again = w.sync(&w.a);
    assert!(!again.contains("secrets"), "{again}");
    // And a session on the remote that holds secrets does not stop B pulling it.
    w.sync(&w.b);
    assert!(w.b.join("manifests/leaky-1.json").exists());
}

#[test]
fn files_over_the_mirrors_cap_reach_the_remote_cut_and_come_back_whole() {
    let w = World::new();
    for (id, name) in [
        ("codex", own::CODEX_AGENT_WORK),
        ("pi", own::PI_AGENT_WORK),
        ("claude", own::CLAUDE_SESSION),
    ] {
        w.fold(&w.a, id, &fixture(name));
    }
    // One pack of everything, as an aggressive gc leaves a store: far over the cap below.
    w.ctxfold(&w.a, &["repack"]).ok();
    let pack = pack_files(&w.a).pop().expect("a pack");
    let cap = 4 * 1024;
    assert!(fs::metadata(&pack).unwrap().len() > 3 * cap);
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    let mirror = w.a.join("mirror.git");
    w.git(Some(&mirror), ["config", "ctxfold.maxFileSize", "4k"]);
    w.sync(&w.a);

    // No blob the host holds is over the cap, and the pack is there in parts.
    let sizes = w.git(
        Some(&w.remote),
        [
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype) %(objectsize)",
        ],
    );
    let blobs: Vec<u64> = sizes
        .lines()
        .filter_map(|l| l.strip_prefix("blob "))
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(blobs.iter().all(|&n| n <= cap), "{blobs:?}");
    let pack_name = pack.file_name().unwrap().to_str().unwrap();
    let listed = w.git(
        Some(&w.remote),
        ["ls-tree", "-r", "--name-only", "ctxfold", "packs-ctxfold"],
    );
    assert!(
        listed.contains(&format!("packs-ctxfold/{pack_name}/part-000003\n")),
        "{listed}"
    );

    // Nothing changed, nothing to push: a cut file is reused, not cut again.
    let again = w.sync(&w.a);
    assert!(again.contains("nothing to push"), "{again}");

    // Another machine gets the pack back whole, and every session byte for byte.
    w.ctxfold(&w.b, &["clone", remote]).ok();
    assert_eq!(
        fs::read(w.b.join("packs-ctxfold").join(pack_name)).unwrap(),
        fs::read(&pack).unwrap()
    );
    for (id, name) in [
        ("codex", own::CODEX_AGENT_WORK),
        ("pi", own::PI_AGENT_WORK),
        ("claude", own::CLAUDE_SESSION),
    ] {
        assert_eq!(
            w.restored(&w.b, id),
            fs::read(fixture(name)).unwrap(),
            "{id}"
        );
    }

    // A cap that is no size is refused, saying where it is set.
    w.git(Some(&mirror), ["config", "ctxfold.maxFileSize", "0"]);
    w.ctxfold(&w.a, &["sync"])
        .fails(2)
        .one_line_error("ctxfold.maxFileSize");
}

#[test]
fn a_session_an_earlier_mirror_commit_holds_that_can_no_longer_be_scanned_is_not_pushed_unasked() {
    let w = World::new();
    w.fold(&w.a, "kept", &fixture(own::CODEX_SHELL_CRLF));
    w.fold(&w.a, "gone", &fixture(own::CODEX_MID_TURN));
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    // Mirrored (as a sync whose push failed leaves it), then taken out and collected.
    w.env
        .run("ctxfold-mirror", ["--store", w.a.to_str().unwrap()])
        .ok();
    w.ctxfold(&w.a, &["rm", "--apply", "gone"]).ok();
    w.ctxfold(&w.a, &["gc", "--apply", "--prune=now"]).ok();
    w.ctxfold(&w.a, &["sync"])
        .fails(3)
        .one_line_error("1 session to push from an earlier mirror commit can no longer be read to be scanned: gone;");
    let branches = w.git(Some(&w.remote), ["branch", "--list"]);
    assert_eq!(branches, "", "nothing pushed");
    w.ctxfold(&w.a, &["sync", "--allow-secrets"]).ok();
}

/// Whether the repository at `git_dir` holds object `oid` itself (git fetches nothing for it).
fn holds(w: &World, git_dir: &Path, oid: &str) -> bool {
    let mut cmd = w.env.command_for("git");
    cmd.env("GIT_NO_LAZY_FETCH", "1")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["cat-file", "-e", oid]);
    common::Env::output(cmd, b"").code == Some(0)
}

/// Of the store's packs in the branch's tree, the mirror holds the indexes and none of the packs.
fn only_pack_indexes_held(w: &World, git_dir: &Path) {
    let packs = branch_blobs(w, git_dir, &["packs-ctxfold"]);
    assert!(!packs.is_empty());
    for (oid, path) in packs {
        assert_eq!(holds(w, git_dir, &oid), path.ends_with(".idx"), "{path}");
    }
}

/// The blobs of the branch's tree under `folders`, as (object id, path).
fn branch_blobs(w: &World, git_dir: &Path, folders: &[&str]) -> Vec<(String, String)> {
    let mut cmd = w.env.command_for("git");
    cmd.arg("--git-dir")
        .arg(git_dir)
        .args(["ls-tree", "-r", "refs/heads/ctxfold", "--"])
        .args(folders);
    let listed = common::Env::output(cmd, b"").ok().stdout_text();
    listed
        .lines()
        .map(|line| {
            let (meta, path) = line.split_once('\t').unwrap();
            let oid = meta.split(' ').nth(2).unwrap();
            (oid.to_string(), path.to_string())
        })
        .collect()
}

/// `ctxfold sync` of `store` with git forbidden to fetch what a partial mirror dropped.
fn sync_fetching_nothing_dropped(w: &World, store: &Path) -> common::Run {
    let mut cmd = w.env.command("ctxfold");
    cmd.env("GIT_NO_LAZY_FETCH", "1")
        .args(["sync", "--store"])
        .arg(store);
    common::Env::output(cmd, b"")
}

#[test]
fn a_mirror_keeps_no_second_copy_of_what_the_remote_holds_and_fetches_back_what_a_merge_needs() {
    if !common::partial_mirrors() {
        return;
    }
    let w = World::new();
    let remote = w.remote.to_str().unwrap();
    let mirror = w.a.join("mirror.git");
    // Sessions in packs, and an object written loose.
    w.fold(&w.a, "s1", &fixture(own::CODEX_SHELL_CRLF));
    w.fold(&w.a, "s2", &fixture(own::PI_AGENT_WORK));
    let loose = w.write("loose", b"an object of its own");
    let args = [
        "--store",
        w.a.to_str().unwrap(),
        "-w",
        loose.to_str().unwrap(),
    ];
    w.env.run("ctxfold-hash-object", args).ok();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    w.sync(&w.a);

    let data = branch_blobs(&w, &mirror, &["packs-ctxfold", "objects"]);
    assert!(data.iter().any(|(_, p)| p.ends_with(".pack")), "{data:?}");
    assert!(
        data.iter().any(|(_, p)| p.starts_with("objects/")),
        "{data:?}"
    );
    for (oid, path) in &data {
        let is_index = path.ends_with(".idx");
        assert_eq!(holds(&w, &mirror, oid), is_index, "{path} in the mirror");
        assert!(holds(&w, &w.remote, oid), "{path} on the remote");
    }
    for (oid, path) in branch_blobs(&w, &mirror, &["manifests", "seeds"]) {
        assert!(holds(&w, &mirror, &oid), "{path} kept in the mirror");
    }
    assert!(!mirror.join("ctxfold-shed").exists());
    assert!(!mirror.join("objects/info/alternates").exists());
    assert_eq!(
        w.git(Some(&mirror), ["config", "remote.origin.promisor"]),
        "true\n"
    );
    // No `git gc --auto` of git's own beside ctxfold's packing.
    assert_eq!(w.git(Some(&mirror), ["config", "gc.auto"]), "0\n");
    w.git(Some(&mirror), ["fsck", "--no-progress", "--strict"]);

    // Everything repacked here (the loose object kept for gc's grace period): the remote's packs
    // are told apart by their indexes, nothing is fetched back, and a new session goes out.
    w.ctxfold(&w.a, &["gc", "--apply", "--aggressive"]).ok();
    let repacked = pack_files(&w.a);
    assert!(!repacked.is_empty());
    assert!(
        repacked
            .iter()
            .all(|p| !data.iter().any(|(_, d)| p.ends_with(d)))
    );
    w.fold(&w.a, "s3", &fixture(own::CODEX_MID_TURN));
    sync_fetching_nothing_dropped(&w, &w.a).ok();
    w.clones_back(
        remote,
        &[
            ("s1", own::CODEX_SHELL_CRLF),
            ("s2", own::PI_AGENT_WORK),
            ("s3", own::CODEX_MID_TURN),
        ],
    );
    let cloned = w.b.join("mirror.git");
    only_pack_indexes_held(&w, &cloned);

    // Removed and collected here, s1 comes back from the remote: its pack is fetched back, which
    // a sync that may not fetch cannot do, and stops with the store as it was.
    w.ctxfold(&w.a, &["rm", "--apply", "s1"]).ok();
    w.ctxfold(&w.a, &["gc", "--apply", "--prune=now"]).ok();
    let before = store_files(&w.a);
    let refused = sync_fetching_nothing_dropped(&w, &w.a);
    assert_ne!(refused.code, Some(0), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("fetched from the remote"),
        "{}",
        refused.stderr
    );
    assert_eq!(store_files(&w.a), before);
    let needed = refused.stderr.split("read blob ").nth(1).unwrap();
    let needed = needed.split(' ').next().unwrap();
    w.sync(&w.a);
    assert_eq!(
        w.restored(&w.a, "s1"),
        fs::read(fixture(own::CODEX_SHELL_CRLF)).unwrap()
    );
    // What was fetched back for the merge is dropped again.
    assert!(!holds(&w, &mirror, needed), "{needed}");
    only_pack_indexes_held(&w, &mirror);
    w.git(Some(&mirror), ["fsck", "--no-progress", "--strict"]);
}

#[test]
fn a_mirror_that_dropped_what_its_remote_holds_pushes_it_to_a_new_remote_from_the_store() {
    if !common::partial_mirrors() {
        return;
    }
    let w = World::new();
    for (id, name) in [("codex", own::CODEX_AGENT_WORK), ("pi", own::PI_AGENT_WORK)] {
        w.fold(&w.a, id, &fixture(name));
    }
    w.ctxfold(&w.a, &["repack"]).ok();
    let first = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", first]).ok();
    // Cut files too: the pack goes to the remotes in parts.
    let mirror = w.a.join("mirror.git");
    w.git(Some(&mirror), ["config", "ctxfold.maxFileSize", "4k"]);
    w.sync(&w.a);
    let dropped: Vec<_> = branch_blobs(&w, &mirror, &["packs-ctxfold"])
        .into_iter()
        .filter(|(oid, _)| !holds(&w, &mirror, oid))
        .collect();
    assert!(
        dropped.iter().any(|(_, p)| p.contains(".pack/part-")),
        "{dropped:?}"
    );

    // The first remote is gone for good; a new one gets everything, from this disk.
    let second = w.a_moves_to_a_new_remote();
    let second = second.as_str();
    sync_fetching_nothing_dropped(&w, &w.a).ok();
    w.clones_back(
        second,
        &[("codex", own::CODEX_AGENT_WORK), ("pi", own::PI_AGENT_WORK)],
    );
    // Dropped again once the new remote holds them.
    for (oid, path) in &dropped {
        assert!(!holds(&w, &mirror, oid), "{path}");
    }
}

/// A world whose store A has synced once with the remote, its mirror partial; `None` (the test
/// skipped) with a git too old for partial mirrors.
fn partially_mirrored() -> Option<World> {
    if !common::partial_mirrors() {
        return None;
    }
    let w = World::new();
    w.synced_once(&w.a);
    Some(w)
}

/// A sync killed with -9 in the middle of dropping what the remote holds, right before git's
/// filtered repack (`before`: the packs unmarked, nothing moved yet) or right after it (before the
/// packs left are marked as promisor packs again), leaves a mirror that still holds every object
/// this sync would drop; the next sync finishes the drop, and the one after it changes nothing.
fn killed_in_the_drop(before: bool) {
    let Some(w) = partially_mirrored() else {
        return;
    };
    let a = &w.a;
    let mirror = a.join("mirror.git");
    let dropped_before = branch_blobs(&w, &mirror, &["packs-ctxfold"]);
    w.fold(a, "s2", &fixture(own::PI_AGENT_WORK));
    let git = common::which("git").expect("git");
    let wrappers = w.env.path("wrappers");
    fs::create_dir(&wrappers).unwrap();
    let wrapper = wrappers.join("git");
    let run = match before {
        true => "",
        false => "{git} \"$@\"; ",
    };
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \"$*\" in *--filter-to=*) {run}kill -9 $PPID; exit 1;; esac\nexec {{git}} \"$@\"\n"
        )
        .replace("{git}", &git.display().to_string()),
    )
    .unwrap();
    fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        wrappers.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = w.env.command("ctxfold");
    cmd.env("PATH", path)
        .args(["sync", "--store", a.to_str().unwrap()]);
    let killed = common::Env::output(cmd, b"");
    assert_eq!(killed.code, None, "killed by a signal: {}", killed.stderr);

    assert!(mirror.join("ctxfold-shed").is_dir());
    let new = branch_blobs(&w, &mirror, &["packs-ctxfold"]);
    let new: Vec<_> = new.iter().filter(|b| !dropped_before.contains(b)).collect();
    assert!(!new.is_empty());
    for (oid, path) in new {
        assert!(holds(&w, &mirror, oid), "{path} is still there");
    }

    for _ in 0..2 {
        w.sync(a);
        assert!(!mirror.join("ctxfold-shed").exists());
        assert!(!mirror.join("objects/info/alternates").exists());
        only_pack_indexes_held(&w, &mirror);
        w.git(Some(&mirror), ["fsck", "--no-progress", "--strict"]);
    }
    w.clones_back(w.remote.to_str().unwrap(), &[("s2", own::PI_AGENT_WORK)]);
}

#[test]
fn a_sync_killed_before_the_mirror_drops_what_the_remote_holds_loses_nothing() {
    killed_in_the_drop(true);
}

#[test]
fn a_sync_killed_while_the_mirror_drops_what_the_remote_holds_loses_nothing() {
    killed_in_the_drop(false);
}

#[test]
fn a_new_remote_needs_history_only_a_removed_remote_held_and_the_refusal_says_how() {
    let Some(w) = partially_mirrored() else {
        return;
    };
    let a = &w.a;
    let mirror = a.join("mirror.git");
    let first_packs = branch_blobs(&w, &mirror, &["packs-ctxfold"]);
    // Repacked here: the first packs are only in the mirror's history now, and on the remote.
    w.ctxfold(a, &["gc", "--apply", "--aggressive", "--prune=now"])
        .ok();
    w.sync(a);
    for (oid, path) in &first_packs {
        assert!(!holds(&w, &mirror, oid), "{path}: dropped, index and all");
    }

    let second = w.a_moves_to_a_new_remote();
    let second = second.as_str();
    let before = store_files(a);
    let refused = w.ctxfold(a, &["sync"]);
    assert_ne!(refused.code, Some(0));
    let refused = refused.one_line_error("that remote must be reachable, or move");
    assert!(
        refused.stderr.contains("mirror.git aside"),
        "{}",
        refused.stderr
    );
    assert_eq!(store_files(a), before);
    assert_eq!(
        w.git(Some(&w.env.path("second.git")), ["branch", "--list"]),
        ""
    );

    // A new history from the store reaches the new remote whole.
    fs::rename(&mirror, a.join("mirror.old")).unwrap();
    w.ctxfold(a, &["remote", "add", "backup", second]).ok();
    w.sync(a);
    w.clones_back(second, &[("s1", own::CODEX_SHELL_CRLF)]);
}

#[test]
fn gc_aggressive_repacks_the_mirror_and_it_keeps_dropping_what_the_remote_holds() {
    if !common::partial_mirrors() {
        return;
    }
    let w = World::new();
    let a = &w.a;
    let gc = |store: &Path| -> Vec<serde_json::Value> {
        let args = ["gc", "--apply", "--aggressive", "--prune=now", "--json"];
        let out = w.ctxfold(store, &args).ok().stdout_text();
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let mirror_lines = |lines: &[serde_json::Value]| -> Vec<serde_json::Value> {
        lines
            .iter()
            .filter(|l| l["type"] == "mirror")
            .cloned()
            .collect()
    };
    w.fold(a, "s1", &fixture(own::CODEX_SHELL_CRLF));
    // No mirror yet: nothing said of one.
    assert!(mirror_lines(&gc(a)).is_empty());

    w.fold(a, "s2", &fixture(own::PI_AGENT_WORK));
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(a, &["remote", "add", "origin", remote]).ok();
    w.sync(a);
    let mirror = a.join("mirror.git");
    let lines = gc(a);
    let repacked = mirror_lines(&lines);
    assert_eq!(repacked.len(), 1, "{lines:?}");
    assert_eq!(repacked[0]["action"], "repacked");
    assert!(repacked[0]["bytes_after"].as_u64().unwrap() > 0);
    let counted = w.git(Some(&mirror), ["count-objects", "-v"]);
    assert!(counted.starts_with("count: 0\n"), "{counted}");
    assert!(counted.contains("\npacks: 1\n"), "{counted}");
    w.git(Some(&mirror), ["fsck", "--no-progress", "--strict"]);
    only_pack_indexes_held(&w, &mirror);

    // The store's new packs go out, and are dropped here once they are there.
    w.fold(a, "s3", &fixture(own::CODEX_MID_TURN));
    sync_fetching_nothing_dropped(&w, a).ok();
    only_pack_indexes_held(&w, &mirror);
    w.clones_back(remote, &[("s3", own::CODEX_MID_TURN)]);
}

/// With a git too old to repack with a filter (Debian 12's 2.39, when it is there), the mirror
/// keeps everything, as before partial mirrors, and syncs as ever.
#[test]
fn a_git_too_old_to_drop_keeps_the_whole_mirror_and_syncs() {
    let old = Path::new("/usr/bin/git");
    if !old.exists() || common::git_version(old) >= (2, 43) {
        eprintln!("skipped: no git older than 2.43 at /usr/bin/git");
        return;
    }
    let w = World::new();
    let bin = w.env.path("old-git");
    fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(old, bin.join("git")).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let ctxfold = |store: &Path, args: &[&str]| {
        let mut cmd = w.env.command("ctxfold");
        cmd.env("PATH", &path).args(args).arg("--store").arg(store);
        common::Env::output(cmd, b"").ok()
    };
    w.fold(&w.a, "s1", &fixture(own::CODEX_SHELL_CRLF));
    let remote = w.remote.to_str().unwrap();
    ctxfold(&w.a, &["remote", "add", "origin", remote]);
    ctxfold(&w.a, &["sync"]);
    w.fold(&w.a, "s2", &fixture(own::PI_AGENT_WORK));
    ctxfold(&w.a, &["sync"]);
    ctxfold(&w.a, &["gc", "--apply", "--aggressive"]);
    let mirror = w.a.join("mirror.git");
    let config = w.git(Some(&mirror), ["config", "--list"]);
    assert!(!config.contains("partialclone"), "{config}");
    let mut checked = 0;
    for (oid, path) in branch_blobs(&w, &mirror, &["packs-ctxfold"]) {
        let mut cmd = w.env.command_for(old);
        cmd.arg("--git-dir")
            .arg(&mirror)
            .args(["cat-file", "-e", &oid]);
        assert_eq!(common::Env::output(cmd, b"").code, Some(0), "{path}");
        checked += 1;
    }
    assert!(checked >= 2);
    ctxfold(&w.b, &["clone", remote]);
    assert_eq!(
        w.restored(&w.b, "s2"),
        fs::read(fixture(own::PI_AGENT_WORK)).unwrap()
    );
}

/// Dozens of dropped blobs fetched back in one sync (objects the store collected that the
/// remote still holds, which the merge restores): each fetch adds a pack to the mirror, and
/// reading them must not run gix out of its slots for pack indexes (it did at 32).
#[test]
fn a_sync_fetching_back_dozens_of_dropped_blobs_reads_them_all() {
    let Some(w) = partially_mirrored() else {
        return;
    };
    let a = &w.a;
    let objects: Vec<PathBuf> = (0..40)
        .map(|n| w.write(&format!("object-{n}"), format!("object {n}\n").as_bytes()))
        .collect();
    let mut args = vec!["--store", a.to_str().unwrap(), "-w"];
    args.extend(objects.iter().map(|p| p.to_str().unwrap()));
    let names = w.env.run("ctxfold-hash-object", &args).ok().stdout_text();
    let loose = |name: &str| {
        a.join("objects")
            .join(&name[..2])
            .join(format!("{name}.zst"))
    };
    assert!(names.lines().all(|n| loose(n).exists()), "written loose");
    w.sync(a);
    w.ctxfold(a, &["gc", "--apply", "--prune=now"]).ok();
    assert!(names.lines().all(|n| !loose(n).exists()), "collected");
    w.sync(a);
    for (name, path) in names.lines().zip(&objects) {
        let shown = w
            .env
            .run(
                "ctxfold-cat-object",
                ["--store", a.to_str().unwrap(), "-p", name],
            )
            .ok();
        assert_eq!(shown.stdout, fs::read(path).unwrap());
    }
}

/// A store and a remote named by relative paths sync, and clone, as ones named absolutely: the
/// mirror's partial repack names a folder of its own to git, which reads such names from the
/// mirror's objects folder, and git reads a remote's path from wherever it runs later.
#[test]
fn a_store_and_a_remote_named_by_relative_paths_sync_and_clone() {
    let w = World::new();
    let (a, b) = (Path::new("A"), Path::new("B"));
    assert_eq!(w.env.path("A"), w.a, "run from the folder that holds A");
    assert_eq!(w.env.path("remote.git"), w.remote);
    w.fold(&w.a, "s1", &fixture(own::CODEX_SHELL_CRLF));
    w.ctxfold(a, &["remote", "add", "origin", "remote.git"])
        .ok();
    let listed = w.ctxfold(a, &["remote", "-v"]).ok().stdout_text();
    assert_eq!(listed, format!("origin\t{}\n", w.remote.display()));
    w.sync(a);
    w.fold(&w.a, "s2", &fixture(own::PI_AGENT_WORK));
    w.sync(a);
    w.git(Some(&w.a.join("mirror.git")), ["fsck", "--no-progress"]);
    w.ctxfold(b, &["clone", "remote.git"]).ok();
    // From another folder, the next sync finds the remote.
    w.fold(&w.a, "s3", &fixture(own::CODEX_MID_TURN));
    w.sync(a);
    let elsewhere = w.env.path("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let synced = (w.env.command("ctxfold").current_dir(&elsewhere))
        .args(["--store", w.b.to_str().unwrap(), "sync"])
        .output()
        .unwrap();
    assert!(
        synced.status.success(),
        "{}",
        String::from_utf8_lossy(&synced.stderr)
    );
    for (id, name) in [
        ("s1", own::CODEX_SHELL_CRLF),
        ("s2", own::PI_AGENT_WORK),
        ("s3", own::CODEX_MID_TURN),
    ] {
        assert_eq!(w.restored(b, id), fs::read(fixture(name)).unwrap());
    }
}

/// A fold and a clone into one empty store at once, started in either order and at moments
/// apart: each ends well or says why (a clone finding sessions already there refuses, and names
/// the sync that does the same), and once the remote is synced the store holds every session
/// once, sound, and indexed.
#[test]
fn a_fold_and_a_clone_into_one_store_at_once_lose_nothing() {
    let w = World::new();
    let sessions = many_sessions(&w, 300);
    let dir = sessions[0].parent().unwrap().to_str().unwrap();
    let remote = w.remote.to_str().unwrap();
    w.ctxfold(&w.a, &["remote", "add", "origin", remote]).ok();
    w.ctxfold(&w.a, &["fold", "--apply", "-q", dir]).ok();
    w.sync(&w.a);
    let store = w.b.to_str().unwrap();
    let spawn = |args: &[&str]| {
        (w.env.command("ctxfold").args(["--store", store]).args(args))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    for (round, fold_first) in [(0, false), (1, true), (2, true), (3, false), (4, true)] {
        fs::remove_dir_all(&w.b).ok();
        let (first, second): (&[&str], &[&str]) = match fold_first {
            true => (&["fold", "--apply", "-q", dir], &["clone", remote]),
            false => (&["clone", remote], &["fold", "--apply", "-q", dir]),
        };
        let first = spawn(first);
        std::thread::sleep(std::time::Duration::from_millis(40 * round));
        let second = spawn(second);
        let mut cloned = true;
        for (child, what) in [(first, "first"), (second, "second")] {
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            let refused = said.contains("already holds sessions: add the remote and sync instead");
            let at = format!("round {round}, the {what}");
            assert!(out.status.success() || refused, "{at}: {said}");
            cloned &= !refused;
        }
        if !cloned {
            w.ctxfold(&w.b, &["remote", "add", "origin", remote]).ok();
        }
        w.sync(&w.b);
        let listed = w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text();
        assert_eq!(listed.lines().count(), sessions.len(), "round {round}");
        w.ctxfold(&w.b, &["fsck", "--full"]).ok();
        // Each session indexed (by the fold's batches, the remote's, or both: a union).
        let catalog = fs::read_to_string(w.b.join("seeds/catalog.jsonl")).unwrap();
        let indexed: std::collections::BTreeSet<&str> = (catalog.lines())
            .map(|l| {
                l.split("\"session\":\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
            })
            .collect();
        assert_eq!(indexed.len(), sessions.len(), "round {round}");
        restores_every(&w, &w.b, &sessions, 61, &format!("round {round}"));
    }
}

/// A process holding the mirror repository at `mirror` as a sync holds it, until killed.
fn a_sync_holding(mirror: &Path) -> std::process::Child {
    Command::new("flock")
        .args(["--no-fork", mirror.to_str().unwrap(), "sleep", "600"])
        .spawn()
        .unwrap()
}

/// A clone refused after another writer put a session in the store the clone had just made (a
/// fold at the same moment) leaves that store and its session; only a store holding nothing goes.
#[test]
fn a_refused_clone_keeps_a_session_another_writer_folded_into_its_new_store() {
    let w = World::new();
    let remote = w.remote.to_str().unwrap();
    // A mirror of its own, already tied to another remote (which refuses the clone), held by a
    // sync until the session is in: the clone has made the store and waits for the mirror.
    let mirror = w.env.path("mirror.git");
    w.git(
        None,
        ["init", "--quiet", "--bare", mirror.to_str().unwrap()],
    );
    let other = w.env.path("other.git");
    w.git(
        Some(&mirror),
        ["remote", "add", "origin", other.to_str().unwrap()],
    );
    let mut sync = a_sync_holding(&mirror);
    let clone = (w.env.command("ctxfold"))
        .args(["--store", w.b.to_str().unwrap(), "clone", "--git"])
        .args([mirror.to_str().unwrap(), remote])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while !w.b.join("manifests").exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let session = fixture(own::CODEX_SHELL_CRLF);
    w.ctxfold(&w.b, &["fold", "--apply", "-q", session.to_str().unwrap()])
        .ok();
    sync.kill().unwrap();
    sync.wait().unwrap();
    let refused = clone.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{said}");
    let listed = w.ctxfold(&w.b, &["ls", "--json"]).ok().stdout_text();
    assert_eq!(listed.lines().count(), 1, "{said}");
    let id = listed
        .split("\"id\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(w.restored(&w.b, id), fs::read(&session).unwrap());
    // A store that holds nothing still goes with its clone.
    let empty = w.env.path("C");
    let refused = w.ctxfold(
        &empty,
        &["clone", "--git", mirror.to_str().unwrap(), remote],
    );
    assert_eq!(refused.code, Some(3), "{}", refused.stderr);
    assert!(!empty.exists());
}

/// `gc --aggressive` repacks the mirror when a sync holds it: it waits for the sync without
/// holding the store, which the sync (and every writer) takes after the mirror. It held the store
/// while it waited, and a sync between taking the mirror and the store waited for it: forever.
#[test]
fn a_gc_waiting_for_a_sync_keeps_no_writer_waiting() {
    let w = World::new();
    w.synced_once(&w.a);
    let mirror = w.a.join("mirror.git");
    // A sync at work: it holds the mirror, and is about to take the store.
    let mut sync = a_sync_holding(&mirror);
    let mut gc = (w.env.command("ctxfold"))
        .args([
            "--store",
            w.a.to_str().unwrap(),
            "gc",
            "--apply",
            "--aggressive",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = std::io::BufReader::new(gc.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("waiting for another sync") {
        line.clear();
        assert_ne!(
            std::io::BufRead::read_line(&mut said, &mut line).unwrap(),
            0
        );
    }
    // The store is free to any writer meanwhile.
    let session = fixture(own::PI_AGENT_WORK);
    let mut fold = (w.env.command("ctxfold"))
        .args(["--store", w.a.to_str().unwrap(), "fold", "--apply", "-q"])
        .arg(&session)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let folded = loop {
        if let Some(status) = fold.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            fold.kill().unwrap();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    sync.kill().unwrap();
    sync.wait().unwrap();
    assert!(gc.wait().unwrap().success());
    assert!(
        folded.is_some_and(|s| s.success()),
        "the fold waited for gc"
    );
    w.ctxfold(&w.a, &["fsck", "--full"]).ok();
    let listed = w.ctxfold(&w.a, &["ls", "--json"]).ok().stdout_text();
    assert_eq!(listed.lines().count(), 2);
}
