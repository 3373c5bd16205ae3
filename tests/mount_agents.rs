//! `ctxfold mount --agents`, a real FUSE mount over the agents' own session folders: the real
//! files passed through, the folded sessions whose files are missing shown where restore would put
//! them, the first write making one a real file (verified), removals that delete nothing from the
//! store, Codex's archive rename, fold through the mount, a killed daemon, and folders exactly as
//! they were once it stops. Without `/dev/fuse` these tests fail, saying so: they never skip.
//! (The real agents resuming through it: tests/agents.rs.)

mod common;
#[path = "mounts/daemon.rs"]
mod daemon;
mod homes;

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use common::{Env, own, own_fixture};
use daemon::{Mount, mounted};
use homes::{Homes, Placed, json_lines};

/// Homes for Codex, Pi and Claude Code with sessions in them, all folded with their sources
/// removed but for the first active Codex rollout, kept real.
struct Folded {
    env: Env,
    homes: Homes,
    claude: Placed,
    /// The session left on disk.
    kept: Placed,
}

impl Folded {
    fn new() -> Self {
        let mut env = Env::new();
        let homes = homes::build(&mut env, homes::sets().remove(0));
        // Once its plain sibling is folded away, it would be a session of its own.
        fs::remove_file(&homes.shadowed).unwrap();
        let claude_home = env.home.join(".claude");
        let bytes = fs::read(own_fixture(own::CLAUDE_SESSION)).unwrap();
        let id = "0f1d0000-0000-4000-8000-00000000c001";
        let path = claude_home
            .join("projects/-home-dev-ledger")
            .join(format!("{id}.jsonl"));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, &bytes).unwrap();
        let claude = Placed {
            id: id.into(),
            rollout_path: path.clone(),
            path,
            bytes,
            archived: false,
        };
        let kept = homes.active().next().unwrap().clone();
        let hold = fs::read(&kept.path).unwrap();
        fs::remove_file(&kept.path).unwrap();
        env.run(
            "ctxfold",
            ["fold", "--apply", "--remove-source", "--allow-active"],
        )
        .ok();
        fs::create_dir_all(kept.path.parent().unwrap()).unwrap();
        fs::write(&kept.path, hold).unwrap();
        env.run("ctxfold", ["fold", "--apply"]).ok();
        Self {
            env,
            homes,
            claude,
            kept,
        }
    }

    /// The folders `mount --agents` mounts over.
    fn roots(&self) -> [PathBuf; 3] {
        [
            self.homes.codex.clone(),
            self.homes.pi.join("sessions"),
            self.env.home.join(".claude/projects"),
        ]
    }

    fn mount(&self) -> Mount {
        self.mount_with(&[])
    }

    /// `mount --agents` with more arguments.
    fn mount_with(&self, args: &[&str]) -> Mount {
        let roots = self.roots();
        Mount::agents(&self.env, &roots.each_ref().map(|r| r.as_path()), args)
    }

    fn sessions(&self) -> impl Iterator<Item = &Placed> {
        self.homes.sessions.iter().chain([&self.claude])
    }

    fn folded_only(&self) -> impl Iterator<Item = &Placed> {
        self.sessions().filter(|s| s.id != self.kept.id)
    }

    /// Every file under the agents' folders, as a listing shows them.
    fn listing(&self) -> BTreeSet<PathBuf> {
        let mut files = BTreeSet::new();
        for root in self.roots() {
            let mut stack = vec![root];
            while let Some(dir) = stack.pop() {
                for entry in fs::read_dir(&dir).unwrap() {
                    let entry = entry.unwrap();
                    match entry.file_type().unwrap().is_dir() {
                        true => stack.push(entry.path()),
                        false => {
                            files.insert(entry.path());
                        }
                    }
                }
            }
        }
        files
    }
}

/// A file shown from the store has the sticky bit (`-rw------T`).
fn is_shown_from_store(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).unwrap().mode() & 0o7777 == 0o1600
}

/// Whether `path` is shown as a real file within the mount's attribute time (1 s): a stat may be
/// answered from the attributes the kernel cached before the file was made real.
fn becomes_real(path: &Path) -> bool {
    (0..40).any(|_| {
        let real = !is_shown_from_store(path);
        if !real {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        real
    })
}

#[test]
fn folded_sessions_are_at_their_places_beside_the_real_files_and_only_while_mounted() {
    let folded = Folded::new();
    let before = folded.listing();
    for session in folded.folded_only() {
        assert!(!session.rollout_path.exists());
    }
    let mount = folded.mount();
    for session in folded.sessions() {
        let path = &session.rollout_path;
        assert!(
            fs::read(path).unwrap() == session.bytes,
            "{}: other bytes through the mount",
            path.display()
        );
        let meta = fs::metadata(path).unwrap();
        assert_eq!(meta.len(), session.bytes.len() as u64);
        assert_eq!(
            is_shown_from_store(path),
            session.id != folded.kept.id,
            "{}",
            path.display()
        );
    }
    let listed = folded.listing();
    let expected: BTreeSet<PathBuf> = before
        .iter()
        .cloned()
        .chain(folded.folded_only().map(|s| s.rollout_path.clone()))
        .collect();
    assert_eq!(listed, expected);
    // What is not a session passes through: Codex's state database, its index.
    assert!(folded.homes.codex.join("state_5.sqlite").is_file());

    // fold and status through the mount see the one real file, not the sessions it shows.
    let status = folded.env.run("ctxfold", ["status", "--json"]).ok();
    let found: Vec<String> = json_lines(&status.stdout)
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        found,
        std::slice::from_ref(&folded.kept.id),
        "{}",
        status.stderr
    );
    let fold = folded.env.run("ctxfold", ["fold", "--apply"]).ok();
    let said = fold.stdout_text();
    assert!(said.contains("total: 1 session:"), "{said}");
    assert!(said.contains("1 up to date"), "{said}");
    let ls = folded.env.run("ctxfold", ["ls"]).ok();
    assert!(ls.stderr.contains("mounted at"), "{}", ls.stderr);

    let (code, said) = mount.stop();
    assert_eq!(code, Some(0), "{said}");
    for root in folded.roots() {
        assert!(!mounted(&root));
    }
    assert_eq!(folded.listing(), before, "the folders changed by a mount");
}

#[test]
fn the_first_write_makes_a_folded_session_a_real_file_and_the_append_lands_after_its_bytes() {
    first_write(&[]);
}

#[test]
fn the_first_write_without_kernel_passthrough() {
    first_write(&["--no-passthrough"]);
}

fn first_write(args: &[&str]) {
    let folded = Folded::new();
    let codex = folded
        .homes
        .sessions
        .iter()
        .find(|s| s.archived && s.id != folded.kept.id)
        .unwrap();
    let pi = folded
        .homes
        .sessions
        .iter()
        .find(|s| s.path.starts_with(&folded.homes.pi))
        .unwrap();
    let mount = folded.mount_with(args);
    let tail = b"{\"type\":\"appended through the mount\"}\n";
    for session in [codex, pi, &folded.claude] {
        let path = &session.rollout_path;
        assert!(is_shown_from_store(path));
        // As Codex resumes: read whole, then open to append.
        let read = fs::read(path).unwrap();
        assert!(read == session.bytes);
        let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
        assert!(becomes_real(path), "a real file once opened to write");
        file.write_all(tail).unwrap();
        drop(file);
        let grown = fs::read(path).unwrap();
        assert!(grown.starts_with(&session.bytes) && grown.ends_with(tail));
        assert_eq!(grown.len(), session.bytes.len() + tail.len());
    }
    // A truncate makes one real too, and so does a change of its times.
    let other = folded
        .homes
        .sessions
        .iter()
        .find(|s| s.archived && s.id != folded.kept.id && s.id != codex.id)
        .unwrap();
    let file = fs::OpenOptions::new()
        .write(true)
        .open(&other.rollout_path)
        .unwrap();
    let first_line = other.bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    file.set_len(first_line as u64).unwrap();
    drop(file);
    assert_eq!(
        fs::read(&other.rollout_path).unwrap(),
        &other.bytes[..first_line]
    );
    mount.stop();

    // Real files now, the appends kept; fold folds them as growth, restore gives them back.
    for session in [codex, pi, &folded.claude] {
        let grown = fs::read(&session.rollout_path).unwrap();
        assert!(grown.starts_with(&session.bytes) && grown.ends_with(tail));
    }
    let fold = folded
        .env
        .run("ctxfold", ["fold", "--apply", "--overwrite"])
        .ok();
    let said = fold.stdout_text();
    assert!(said.contains("3 grown, 1 changed"), "{said}");
    for session in [codex, pi, &folded.claude] {
        let copy = folded.env.path(&format!("{}.jsonl", session.id));
        folded
            .env
            .run(
                "ctxfold",
                [
                    "restore",
                    session.id.as_str(),
                    "--to",
                    copy.to_str().unwrap(),
                ],
            )
            .ok();
        assert!(fs::read(&copy).unwrap() == fs::read(&session.rollout_path).unwrap());
    }
    folded.env.run("ctxfold", ["fsck", "--full"]).ok();
}

#[test]
fn removing_a_folded_only_file_hides_it_and_deletes_nothing_from_the_store() {
    let folded = Folded::new();
    let manifests = fs::read_dir(folded.env.store.join("manifests"))
        .unwrap()
        .count();
    let mount = folded.mount();
    let gone = folded.folded_only().next().unwrap();
    fs::remove_file(&gone.rollout_path).unwrap();
    assert!(!gone.rollout_path.exists());
    assert!(!folded.listing().contains(&gone.rollout_path));
    // Removing the real one shows the folded one again: it is still folded.
    fs::remove_file(&folded.kept.rollout_path).unwrap();
    assert!(fs::read(&folded.kept.rollout_path).unwrap() == folded.kept.bytes);
    assert!(is_shown_from_store(&folded.kept.rollout_path));
    mount.stop();
    assert_eq!(
        fs::read_dir(folded.env.store.join("manifests"))
            .unwrap()
            .count(),
        manifests
    );
    folded.env.run("ctxfold", ["fsck", "--full"]).ok();
    // Hidden from that mount only: the next one shows it.
    let again = folded.mount();
    assert!(fs::read(&gone.rollout_path).unwrap() == gone.bytes);
    again.stop();
}

#[test]
fn codex_archives_and_unarchives_by_renaming_between_its_two_folders() {
    let folded = Folded::new();
    let active = folded
        .homes
        .active()
        .find(|s| s.id != folded.kept.id)
        .unwrap();
    let archived_dir = folded.homes.codex.join("archived_sessions");
    let mount = folded.mount();
    let name = active.rollout_path.file_name().unwrap();
    let archived = archived_dir.join(name);
    fs::rename(&active.rollout_path, &archived).unwrap();
    assert!(
        !active.rollout_path.exists(),
        "shown twice after its archive"
    );
    assert!(fs::read(&archived).unwrap() == active.bytes);
    assert!(!is_shown_from_store(&archived));
    // And back, with a real file too.
    let kept_archived = archived_dir.join(folded.kept.rollout_path.file_name().unwrap());
    fs::rename(&folded.kept.rollout_path, &kept_archived).unwrap();
    fs::rename(&kept_archived, &folded.kept.rollout_path).unwrap();
    assert!(fs::read(&folded.kept.rollout_path).unwrap() == folded.kept.bytes);
    mount.stop();
    assert!(fs::read(&archived).unwrap() == active.bytes);
    assert!(!active.rollout_path.exists());
}

#[test]
fn new_files_and_folders_made_through_the_mount_are_real_even_in_a_folder_only_folded() {
    let folded = Folded::new();
    // A project folder of Claude Code's that only a folded session keeps now.
    let session = &folded.claude;
    let project = session.rollout_path.parent().unwrap().to_path_buf();
    assert!(!project.exists(), "{}", project.display());
    let mount = folded.mount();
    assert!(project.is_dir());
    let new = project.join("0f1d0000-0000-4000-8000-0000000000ff.jsonl");
    fs::write(&new, "{\"new\":1}\n").unwrap();
    fs::create_dir(project.join("sub")).unwrap();
    assert!(matches!(
        fs::create_dir(&project).unwrap_err().kind(),
        std::io::ErrorKind::AlreadyExists
    ));
    mount.stop();
    assert_eq!(fs::read_to_string(&new).unwrap(), "{\"new\":1}\n");
    assert!(project.join("sub").is_dir());
    assert!(!session.rollout_path.exists());
}

#[test]
fn fold_remove_source_through_the_mount_frees_a_file_and_keeps_it_in_sight() {
    let folded = Folded::new();
    let mount = folded.mount();
    let path = &folded.kept.rollout_path;
    let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(b"{\"more\":1}\n").unwrap();
    drop(file);
    let grown = fs::read(path).unwrap();
    let fold = folded
        .env
        .run(
            "ctxfold",
            ["fold", "--apply", "--remove-source", "--allow-active"],
        )
        .ok();
    let said = fold.stdout_text();
    assert!(said.contains("1 source removed"), "{said}");
    // The manifests are read again within a second of a fold.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(is_shown_from_store(path));
    assert!(fs::read(path).unwrap() == grown);
    mount.stop();
    assert!(!path.exists());
}

#[test]
fn a_killed_daemon_loses_no_appended_byte_and_the_next_mount_clears_its_mounts() {
    killed(&[]);
}

#[test]
fn a_killed_daemon_without_kernel_passthrough_loses_no_appended_byte() {
    killed(&["--no-passthrough"]);
}

fn killed(args: &[&str]) {
    let folded = Folded::new();
    let mut mount = folded.mount_with(args);
    let session = folded.folded_only().next().unwrap();
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&session.rollout_path)
        .unwrap();
    file.write_all(b"{\"before\":\"the kill\"}\n").unwrap();
    mount.kill();
    drop(file);
    let again = folded.mount();
    let bytes = fs::read(&session.rollout_path).unwrap();
    assert!(bytes.starts_with(&session.bytes));
    assert!(
        String::from_utf8_lossy(&bytes[session.bytes.len()..])
            .starts_with("{\"before\":\"the kill\"}\n"),
        "the append before the kill is lost"
    );
    again.stop();
    let kept = fs::read(&session.rollout_path).unwrap();
    assert!(kept == bytes, "the real file holds what was appended");
}

#[test]
fn a_second_mount_of_a_folder_is_refused_and_unmount_without_a_folder_stops_every_mount() {
    let folded = Folded::new();
    let mount = folded.mount();
    folded
        .env
        .run("ctxfold", ["mount", "--agents"])
        .fails(3)
        .one_line_error("is mounted already");
    let plain = folded.env.path("mnt");
    fs::create_dir(&plain).unwrap();
    let by_id = Mount::start(&folded.env, &plain);
    folded.env.run("ctxfold", ["unmount"]).ok();
    for root in folded.roots().iter().chain([&plain]) {
        assert!(!mounted(root), "{}", root.display());
    }
    let (code, said) = mount.stop();
    assert_eq!(code, Some(0), "{said}");
    by_id.stop();
    folded
        .env
        .run("ctxfold", ["unmount"])
        .fails(3)
        .one_line_error("is not mounted");
    // A store inside an agent's folder would be served through its own mount.
    let inside = folded.homes.codex.join("fold-store");
    folded
        .env
        .run(
            "ctxfold",
            ["fold", "--apply", "--store", inside.to_str().unwrap()],
        )
        .ok();
    folded
        .env
        .run(
            "ctxfold",
            ["mount", "--agents", "--store", inside.to_str().unwrap()],
        )
        .fails(2)
        .one_line_error("which the mount would cover");
    for root in folded.roots() {
        assert!(!mounted(&root), "{}", root.display());
    }
}

/// Whether process `pid` has ended (a zombie has).
fn ended(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status.lines().any(|l| l.starts_with("State:\tZ")),
    }
}

#[test]
fn background_returns_once_mounted_says_its_pid_and_stops_with_unmount() {
    let folded = Folded::new();
    let log = folded.env.path("state/mount.log");
    let started = folded
        .env
        .run(
            "ctxfold",
            [
                "mount",
                "--agents",
                "--background",
                "--log",
                log.to_str().unwrap(),
            ],
        )
        .ok();
    let pid: u32 = started
        .stderr
        .split("served by pid ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid said: {}", started.stderr));
    assert!(started.stderr.contains("mounted Codex's sessions at"));
    for root in folded.roots() {
        assert!(mounted(&root), "{}", root.display());
    }
    let session = folded.folded_only().next().unwrap();
    assert!(fs::read(&session.rollout_path).unwrap() == session.bytes);
    folded.env.run("ctxfold", ["unmount"]).ok();
    let waited = std::time::Instant::now();
    while !ended(pid) {
        assert!(waited.elapsed().as_secs() < 10, "the daemon goes on");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for root in folded.roots() {
        assert!(!mounted(&root), "{}", root.display());
    }
    let said = fs::read_to_string(&log).unwrap();
    assert!(said.contains("unmounted"), "{said}");

    // A daemon that cannot mount: its error, and the command fails.
    let missing = folded.env.path("missing");
    folded
        .env
        .run(
            "ctxfold",
            [
                "mount",
                "--background",
                "--log",
                log.to_str().unwrap(),
                missing.to_str().unwrap(),
            ],
        )
        .fails(3)
        .one_line_error("the mount's daemon ended");
}

#[test]
fn two_mounts_of_one_store_a_fold_and_a_gc_beside_them_break_no_read() {
    let folded = Folded::new();
    let agents = folded.mount();
    let plain = folded.env.path("mnt");
    let by_id = Mount::start(&folded.env, &plain);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let reads = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for session in folded.folded_only() {
                    let through_agents = fs::read(&session.rollout_path).unwrap();
                    assert!(through_agents == session.bytes, "{}", session.id);
                    let by_id = plain.join("by-id").join(format!("{}.jsonl", session.id));
                    assert!(fs::read(&by_id).unwrap() == session.bytes, "{}", session.id);
                    reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        });
        let mut file = fs::OpenOptions::new()
            .append(true)
            .open(&folded.kept.rollout_path)
            .unwrap();
        file.write_all(b"{\"more\":1}\n").unwrap();
        drop(file);
        folded.env.run("ctxfold", ["fold", "--apply"]).ok();
        folded
            .env
            .run("ctxfold", ["gc", "--apply", "--aggressive"])
            .ok();
        folded.env.run("ctxfold", ["unpack"]).ok();
        folded.env.run("ctxfold", ["repack"]).ok();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(reads.into_inner() > 0);
    agents.stop();
    by_id.stop();
    folded.env.run("ctxfold", ["fsck", "--full"]).ok();
}

#[test]
fn a_damaged_object_is_an_io_error_through_the_agents_mount_and_no_copy_is_made() {
    let folded = Folded::new();
    folded.env.run("ctxfold", ["unpack"]).ok();
    let session = folded.folded_only().max_by_key(|s| s.bytes.len()).unwrap();
    let manifest: serde_json::Value = serde_json::from_slice(
        &fs::read(
            folded
                .env
                .store
                .join(format!("manifests/{}.json", session.id)),
        )
        .unwrap(),
    )
    .unwrap();
    let parts = manifest["parts"].as_array().unwrap();
    let last = &parts[parts.len() - 1]["object"];
    let sha = last["sha256"].as_str().unwrap();
    let size = last["raw_bytes"].as_u64().unwrap() as usize;
    let damaged = folded
        .env
        .store
        .join(format!("objects/{}/{sha}.zst", &sha[..2]));
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

    let mount = folded.mount();
    let path = &session.rollout_path;
    let err = fs::read(path).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    // A write would restore it first: the restore fails, and nothing is left in its place.
    let err = fs::OpenOptions::new().append(true).open(path).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    assert!(is_shown_from_store(path));
    let (_, said) = mount.stop();
    assert!(said.contains(&format!("session {}", session.id)), "{said}");
    assert!(said.contains("restore"), "{said}");
    assert!(!path.exists());
    let parent = path.parent().unwrap();
    let left: Vec<_> = match fs::read_dir(parent) {
        Ok(dir) => dir.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    assert!(
        left.iter()
            .all(|p| !p.to_string_lossy().contains(".restore-")),
        "a restore's temp file is left: {left:?}"
    );
}

#[test]
fn a_session_open_to_read_while_an_agent_opens_it_to_append_serves_both() {
    reader_and_writer(&[]);
}

#[test]
fn a_session_read_through_the_kernels_cache_while_an_agent_appends_serves_both() {
    reader_and_writer(&["--copies", "0"]);
}

/// A session read whole, then opened to read and, while that is open, to append. With copies
/// (the default), the second open is passed through to the copy the first read made, and the
/// append makes that copy the real file; without, the reader reads what the kernel cached.
fn reader_and_writer(args: &[&str]) {
    let folded = Folded::new();
    let mount = folded.mount_with(args);
    let session = folded.folded_only().next().unwrap();
    let path = &session.rollout_path;
    assert!(fs::read(path).unwrap() == session.bytes);
    let copy = mount
        .copies()
        .into_iter()
        .find(|c| c.bytes == session.bytes);
    match args.is_empty() {
        true => {
            let copy = copy.as_ref().expect("no copy of the session read whole");
            let root = folded
                .roots()
                .into_iter()
                .find(|r| path.starts_with(r))
                .unwrap();
            assert_eq!(copy.dir, root, "a copy not in its real folder");
        }
        false => assert!(copy.is_none(), "a copy with --copies 0"),
    }
    let reader = fs::File::open(path).unwrap();
    let mut head = vec![0u8; 100];
    std::os::unix::fs::FileExt::read_exact_at(&reader, &mut head, 0).unwrap();
    assert_eq!(head, session.bytes[..100]);
    let mut writer = fs::OpenOptions::new().append(true).open(path).unwrap();
    writer.write_all(b"{\"appended\":1}\n").unwrap();
    drop(writer);
    std::os::unix::fs::FileExt::read_exact_at(&reader, &mut head, 0).unwrap();
    assert_eq!(head, session.bytes[..100]);
    drop(reader);
    let grown = fs::read(path).unwrap();
    assert!(grown.starts_with(&session.bytes) && grown.ends_with(b"{\"appended\":1}\n"));
    // Once nothing reads it through the cache, the next write open is passed through again.
    let mut writer = fs::OpenOptions::new().append(true).open(path).unwrap();
    writer.write_all(b"{\"appended\":2}\n").unwrap();
    drop(writer);
    assert!(
        fs::read(path)
            .unwrap()
            .ends_with(b"{\"appended\":1}\n{\"appended\":2}\n")
    );
    mount.stop();
    if let Some(copy) = copy {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            fs::metadata(path).unwrap().ino(),
            copy.ino,
            "the copy did not become the real file"
        );
    }
    let names: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        names.iter().all(|n| !n.to_string_lossy().starts_with('.')),
        "{names:?}"
    );
}

/// A folded-only session removed from the store (`ctxfold rm`) while the kernel still knows its
/// file is gone for the next open, to read or to append (`ENOENT`): not an I/O error, which says
/// the store is damaged.
#[test]
fn a_session_removed_from_the_store_under_the_mount_is_gone_not_broken() {
    let folded = Folded::new();
    let mount = folded.mount();
    let mut gone = folded.folded_only();
    for (session, append) in [(gone.next().unwrap(), false), (gone.next().unwrap(), true)] {
        // Looked up now: the kernel keeps the entry for its time.
        assert!(is_shown_from_store(&session.rollout_path));
        folded
            .env
            .run("ctxfold", ["rm", "--apply", &session.id])
            .ok();
        let err = fs::OpenOptions::new()
            .read(!append)
            .append(append)
            .open(&session.rollout_path)
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}");
    }
    mount.stop();
}
