//! `ctxfold mount`, a real FUSE mount: the store as a read-only tree (by id, and as each agent's
//! home lays its sessions out), read by offset and checked, a damaged object an I/O error for
//! the reads that need it and never wrong bytes, gc beside it, and a killed daemon's mount
//! cleared by the next. Without `/dev/fuse` these tests fail, saying so: they never skip.

mod common;
#[path = "mounts/daemon.rs"]
mod daemon;
mod homes;

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use common::Env;
use daemon::{Mount, mounted};
use homes::{Homes, json_lines};

/// Where `path` is under its agent's home, as the mount lays it out (`codex/sessions/…`).
fn in_mount(homes: &Homes, path: &Path) -> PathBuf {
    for (agent, home) in [("codex", &homes.codex), ("pi", &homes.pi)] {
        if let Ok(rel) = path.strip_prefix(home) {
            return Path::new(agent).join(rel);
        }
    }
    panic!("{} is in no agent's home", path.display())
}

#[test]
fn the_store_is_a_read_only_tree_of_every_session_by_id_and_where_its_agent_keeps_it() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let dir = env.path("mnt");
    let mount = Mount::start(&env, &dir);
    let mut by_id: Vec<String> = fs::read_dir(dir.join("by-id"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    by_id.sort();
    let mut expected: Vec<String> = homes
        .sessions
        .iter()
        .map(|s| format!("{}.jsonl", s.id))
        .collect();
    expected.sort();
    assert_eq!(by_id, expected);
    for session in &homes.sessions {
        let file = dir.join("by-id").join(format!("{}.jsonl", session.id));
        assert_eq!(
            fs::metadata(&file).unwrap().len(),
            session.bytes.len() as u64
        );
        assert!(fs::read(&file).unwrap() == session.bytes, "{}", session.id);
        // At its agent's place too (a Codex .zst archive is shown as the plain file it restores
        // to).
        let placed = dir.join(in_mount(&homes, &session.rollout_path));
        assert!(
            fs::read(&placed).unwrap() == session.bytes,
            "{}",
            placed.display()
        );
        // Reads at any offset, of any size, give the bytes there.
        let opened = fs::File::open(&file).unwrap();
        let len = session.bytes.len();
        for (at, size) in [
            (len / 3, 4096),
            (len - 10, 4096),
            (1, 1),
            (len / 2, 100_000),
        ] {
            let mut buf = vec![0u8; size];
            let n = opened.read_at(&mut buf, at as u64).unwrap();
            assert_eq!(&buf[..n], &session.bytes[at..(at + size).min(len)]);
        }
        let mut tail = Vec::new();
        let mut seeked = fs::File::open(&placed).unwrap();
        seeked.seek(SeekFrom::Start(len as u64 / 2)).unwrap();
        seeked.read_to_end(&mut tail).unwrap();
        assert!(tail == session.bytes[len / 2..]);
    }
    // The agents' trees as their homes have them.
    let days: Vec<PathBuf> = ["codex/sessions", "codex/archived_sessions", "pi/sessions"]
        .iter()
        .map(|d| dir.join(d))
        .collect();
    assert!(days.iter().all(|d| d.is_dir()), "{days:?}");
    // Nothing through it changes anything.
    let file = dir
        .join("by-id")
        .join(format!("{}.jsonl", homes.sessions[0].id));
    let err = fs::OpenOptions::new().append(true).open(&file).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    let err = fs::write(dir.join("by-id/new.jsonl"), b"x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EROFS), "{err}");
    assert!(fs::remove_file(&file).is_err() && file.exists());

    // ls, status and fsck say where the store is mounted.
    for command in [["ls"], ["status"], ["fsck"]] {
        let run = env.run("ctxfold", command).ok();
        assert!(
            run.stderr
                .contains(&format!("mounted at {}", dir.display())),
            "{command:?}: {}",
            run.stderr
        );
    }

    let (code, stderr) = mount.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("mounted 6 sessions at"), "{stderr}");
    let run = env.run("ctxfold", ["ls"]).ok();
    assert!(!run.stderr.contains("mounted at"), "{}", run.stderr);
    assert!(!mounted(&dir), "still mounted after Ctrl-C");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn generations_are_there_by_id_with_their_number() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let session = homes.active().next().unwrap();
    let mut grown = session.bytes.clone();
    grown.extend_from_slice(b"{\"type\":\"event_msg\",\"payload\":{\"grown\":1}}\n");
    fs::write(&session.path, &grown).unwrap();
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let dir = env.path("mnt");
    let mount = Mount::start(&env, &dir);
    let by_id = dir.join("by-id");
    assert!(fs::read(by_id.join(format!("{}.jsonl", session.id))).unwrap() == grown);
    assert!(fs::read(by_id.join(format!("{}@1.jsonl", session.id))).unwrap() == session.bytes);
    assert!(!by_id.join(format!("{}@2.jsonl", session.id)).exists());
    mount.stop();
}

/// The object of `id`'s part `nth`, as a loose file (after `unpack`).
fn loose_part(env: &Env, id: &str, nth: usize) -> PathBuf {
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(env.store.join(format!("manifests/{id}.json"))).unwrap())
            .unwrap();
    let sha = manifest["parts"][nth]["object"]["sha256"].as_str().unwrap();
    env.store.join(format!("objects/{}/{sha}.zst", &sha[..2]))
}

#[test]
fn a_damaged_object_is_an_io_error_for_the_reads_that_need_it_never_wrong_bytes() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    env.run("ctxfold", ["unpack"]).ok();
    let session = homes.sessions.iter().max_by_key(|s| s.bytes.len()).unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(
        &fs::read(env.store.join(format!("manifests/{}.json", session.id))).unwrap(),
    )
    .unwrap();
    let parts = manifest["parts"].as_array().unwrap();
    assert!(parts.len() >= 2, "a session of several parts");
    // The last part's object holds other bytes of its size: it decodes, but not to its name.
    let last = parts.len() - 1;
    let damaged = loose_part(&env, &session.id, last);
    let size = parts[last]["object"]["raw_bytes"].as_u64().unwrap() as usize;
    fs::set_permissions(
        &damaged,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    fs::write(
        &damaged,
        zstd::encode_all(&vec![b'x'; size][..], 3).unwrap(),
    )
    .unwrap();
    let starts_at = session.bytes.len() - size;

    let dir = env.path("mnt");
    let mount = Mount::start(&env, &dir);
    let file = fs::File::open(dir.join("by-id").join(format!("{}.jsonl", session.id))).unwrap();
    // The kernel reads whole pages: those before the page the damage starts in read whole.
    let before = starts_at / 4096 * 4096;
    let mut head = vec![0u8; before];
    file.read_exact_at(&mut head, 0).unwrap();
    assert!(head == session.bytes[..before]);
    let mut buf = vec![0u8; 10];
    let err = file.read_at(&mut buf, starts_at as u64 + 1).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // Every other session reads whole.
    for other in homes.sessions.iter().filter(|s| s.id != session.id) {
        let path = dir.join("by-id").join(format!("{}.jsonl", other.id));
        assert!(fs::read(&path).unwrap() == other.bytes, "{}", other.id);
    }
    let (code, stderr) = mount.stop();
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains(&format!("ctxfold mount: error: session {}:", session.id)),
        "{stderr}"
    );
}

#[test]
fn a_gc_that_rewrites_the_packs_under_a_running_mount_breaks_no_read() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let dir = env.path("mnt");
    let mount = Mount::start(&env, &dir);
    let session = homes.sessions.iter().max_by_key(|s| s.bytes.len()).unwrap();
    let path = dir.join("by-id").join(format!("{}.jsonl", session.id));
    let file = fs::File::open(&path).unwrap();
    let half = session.bytes.len() / 2;
    let mut head = vec![0u8; half];
    file.read_exact_at(&mut head, 0).unwrap();
    let before: Vec<_> = fs::read_dir(env.store.join("packs-ctxfold"))
        .unwrap()
        .collect();
    env.run("ctxfold", ["gc", "--apply", "--aggressive", "--prune=now"])
        .ok();
    env.run("ctxfold", ["unpack"]).ok();
    assert_eq!(
        fs::read_dir(env.store.join("packs-ctxfold"))
            .unwrap()
            .count(),
        0,
        "{before:?}"
    );
    let mut tail = Vec::new();
    (&file).seek(SeekFrom::Start(half as u64)).unwrap();
    (&file).read_to_end(&mut tail).unwrap();
    head.extend(tail);
    assert!(head == session.bytes);
    // A file opened now reads from the loose objects unpack wrote.
    for other in &homes.sessions {
        let path = dir.join("by-id").join(format!("{}.jsonl", other.id));
        assert!(fs::read(&path).unwrap() == other.bytes, "{}", other.id);
    }
    mount.stop();
    env.run("ctxfold", ["fsck", "--full"]).ok();
}

#[test]
fn a_killed_daemons_mount_is_cleared_by_the_next_mount_and_by_unmount() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let dir = env.path("mnt");
    let mut mount = Mount::start(&env, &dir);
    mount.child.kill().unwrap();
    mount.child.wait().unwrap();
    let err = fs::read_dir(&dir).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTCONN), "{err}");
    // Listed as a mount of this store still; the next mount clears it and serves again.
    let again = Mount::start(&env, &dir);
    let session = &homes.sessions[0];
    let path = dir.join("by-id").join(format!("{}.jsonl", session.id));
    assert!(fs::read(&path).unwrap() == session.bytes);
    let mut again = again;
    again.child.kill().unwrap();
    again.child.wait().unwrap();
    env.run("ctxfold", ["unmount", dir.to_str().unwrap()]).ok();
    assert!(!mounted(&dir));
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
    env.run("ctxfold", ["unmount", dir.to_str().unwrap()])
        .fails(3)
        .one_line_error("is not a ctxfold mount");
    let listed = json_lines(&env.run("ctxfold", ["ls", "--json"]).ok().stdout);
    assert_eq!(listed.len(), homes.sessions.len());
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_session_read_whole_is_kept_decoded_within_its_budget_and_leaves_nothing_behind() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let store = env.path("store");
    let before = names(&store);
    let largest = homes.sessions.iter().map(|s| s.bytes.len()).max().unwrap();
    let budget = 2 * largest;
    let dir = env.path("mnt");
    let mount = Mount::start_with(&env, &dir, &["--copies", &budget.to_string()]);
    let file = |id: &str| dir.join("by-id").join(format!("{id}.jsonl"));

    // Its end read, not its start: no copy (once the kernel says the file is closed).
    let biggest = homes.sessions.iter().max_by_key(|s| s.bytes.len()).unwrap();
    let mut tail = vec![0u8; 100];
    fs::File::open(file(&biggest.id))
        .unwrap()
        .read_exact_at(&mut tail, largest as u64 - 100)
        .unwrap();
    assert_eq!(tail, biggest.bytes[largest - 100..]);
    let gone = (0..50).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        mount.copies().is_empty()
    });
    assert!(gone, "a copy of a part is kept");

    // Read whole, each: kept in the store's folder, within the budget, the last read among them.
    let mut read = 0;
    for session in &homes.sessions {
        assert!(fs::read(file(&session.id)).unwrap() == session.bytes);
        read += session.bytes.len();
    }
    // A copy let go stays open until the kernel's release of the last open that read through
    // it reaches the daemon, which `close` does not wait for.
    let kept_of = |copies: &[daemon::Copy]| -> usize { copies.iter().map(|c| c.bytes.len()).sum() };
    let mut copies = mount.copies();
    for _ in 0..50 {
        if kept_of(&copies) <= budget {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        copies = mount.copies();
    }
    assert!(!copies.is_empty(), "no copy of a session read whole");
    let kept = kept_of(&copies);
    assert!(kept <= budget, "{kept} bytes kept, the budget {budget}");
    if read > budget {
        assert!(copies.len() < homes.sessions.len(), "nothing let go");
    }
    for copy in &copies {
        assert_eq!(copy.dir, store);
        assert!(
            homes.sessions.iter().any(|s| s.bytes == copy.bytes),
            "a copy that is no session's bytes"
        );
    }
    let last = homes.sessions.last().unwrap();
    assert!(copies.iter().any(|c| c.bytes == last.bytes));

    // Read again (passed through to the copies where the kernel can): the same bytes, at any
    // offset.
    for session in &homes.sessions {
        let path = file(&session.id);
        assert!(fs::read(&path).unwrap() == session.bytes);
        let len = session.bytes.len();
        let mut buf = vec![0u8; 4096.min(len / 2)];
        let n = fs::File::open(&path)
            .unwrap()
            .read_at(&mut buf, (len / 2) as u64)
            .unwrap();
        assert_eq!(&buf[..n], &session.bytes[len / 2..len / 2 + n]);
    }
    let (code, stderr) = mount.stop();
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        names(&store),
        before,
        "the copies left something in the store"
    );

    // --copies 0: none kept.
    let mount = Mount::start_with(&env, &dir, &["--copies", "0"]);
    assert!(fs::read(file(&last.id)).unwrap() == last.bytes);
    assert!(mount.copies().is_empty(), "a copy with --copies 0");
    mount.stop();
    // A size that is none is refused.
    env.run(
        "ctxfold",
        ["mount", dir.to_str().unwrap(), "--copies", "1X"],
    )
    .fails(2);
}

/// A session removed from the store (`ctxfold rm`) after the mount listed it is not there for the
/// next open (`ENOENT`, as for any file gone), not an I/O error, which says the store is damaged.
#[test]
fn a_session_removed_under_a_running_mount_is_gone_not_broken() {
    let mut env = Env::new();
    let homes = homes::build(&mut env, homes::sets().remove(0));
    env.run("ctxfold", ["fold", "--apply"]).ok();
    let dir = env.path("mnt");
    let mount = Mount::start(&env, &dir);
    let (gone, kept) = (&homes.sessions[0], &homes.sessions[1]);
    let path = |id: &str| dir.join("by-id").join(format!("{id}.jsonl"));
    env.run("ctxfold", ["rm", "--apply", &gone.id]).ok();
    let err = fs::File::open(path(&gone.id)).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    assert!(fs::read(path(&kept.id)).unwrap() == kept.bytes);
    let (code, stderr) = mount.stop();
    assert_eq!(code, Some(0));
    assert!(
        stderr.contains("removed from the store since it was listed"),
        "{stderr}"
    );
}
