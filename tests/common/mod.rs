//! The hermetic test environment every integration test uses: a temp dir with a store and a home,
//! a cleared environment (`HOME` pinned, `TZ=UTC`, `CTXFOLD_EXEC_PATH` at the freshly built
//! binaries), and runs that return status, stdout and stderr together.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Env {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
    pub home: PathBuf,
    extra: Vec<(String, String)>,
}

/// What a run gave back.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    pub fn stdout_text(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    /// Exit 0; returns self for more checks.
    #[track_caller]
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code,
            Some(0),
            "expected success\nstderr: {}\nstdout: {}",
            self.stderr,
            String::from_utf8_lossy(&self.stdout)
        );
        self
    }

    /// Exit `code` with a one-line error on stderr (never a panic or a signal).
    #[track_caller]
    pub fn fails(self, code: i32) -> Self {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\nstderr: {}\nstdout: {}",
            self.stderr,
            String::from_utf8_lossy(&self.stdout)
        );
        assert!(!self.stderr.contains("panicked"), "panic: {}", self.stderr);
        self
    }

    /// The stderr is exactly one line and contains `needle`.
    #[track_caller]
    pub fn one_line_error(self, needle: &str) -> Self {
        assert_eq!(
            self.stderr.trim_end().lines().count(),
            1,
            "not one line: {}",
            self.stderr
        );
        assert!(
            self.stderr.contains(needle),
            "{needle:?} not in: {}",
            self.stderr
        );
        self
    }
}

/// Where the freshly built binaries are.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_ctxfold"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The version of a git binary, as (major, minor).
pub fn git_version(git: &Path) -> (u32, u32) {
    let out = Command::new(git).arg("version").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut n = text.trim().trim_start_matches("git version ").split('.');
    let mut next = || n.next().unwrap().parse().unwrap();
    (next(), next())
}

/// Whether the git on PATH makes partial mirrors (a filtered repack, 2.43) that a test can look
/// into without fetching (`GIT_NO_LAZY_FETCH`, 2.44); told on stderr when not.
pub fn partial_mirrors() -> bool {
    let git = which("git").expect("git");
    let new = git_version(&git) >= (2, 44);
    if !new {
        eprintln!("skipped: {} is older than 2.44", git.display());
    }
    new
}

/// `program` on the test's own `$PATH` (`man`, `zsh`), if installed.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// The fixtures of the project's own making, committed under tests/fixtures (its README.md says
/// where each came from), by what they show.
pub mod own {
    /// Codex 0.169 against the test model (tests/agents.rs): the `work` scenario, a follow-up
    /// turn that compacted, and a resume.
    pub const CODEX_AGENT_WORK: &str =
        "codex/rollout-2026-11-30T23-21-07-01a22ec3-195e-7d02-bb4d-4f6fa0817a3c.jsonl";
    /// Codex 0.169 against the test model: the `small` scenario.
    pub const CODEX_AGENT_SMALL: &str =
        "codex/rollout-2026-11-30T23-21-09-01a22ec3-2142-7dc0-ba9d-93c0133f1498.jsonl";
    /// Pi 0.73 (session v3) against the test model: the `work` scenario, compacted, then resumed.
    pub const PI_AGENT_WORK: &str =
        "pi/2026-11-30T23-21-14-726Z_01a22ec3-34e4-7265-bb6b-1383eb635647.jsonl";
    /// Pi 0.73 against the test model: the `small` scenario.
    pub const PI_AGENT_SMALL: &str =
        "pi/2026-11-30T23-21-20-131Z_01a22ec3-4a01-74e0-aa5f-c936e99a2e3f.jsonl";
    /// Generated: unified `exec_command`, `exec_command_end` repeating output; `git`; no compaction.
    pub const CODEX_UNIFIED_EXEC: &str =
        "codex/rollout-2026-03-02T10-00-00-0f1d0000-0000-7000-8000-000000000001.jsonl";
    /// Generated: Codex 0.77 `shell` outputs as JSON strings with metadata.exit_code; CRLF lines.
    pub const CODEX_SHELL_CRLF: &str =
        "codex/rollout-2026-01-05T10-00-00-0f1d0000-0000-7000-8000-000000000002.jsonl";
    /// Generated: ends mid-turn on a call with no output, without a final newline.
    pub const CODEX_MID_TURN: &str =
        "codex/rollout-2026-02-20T10-00-00-0f1d0000-0000-7000-8000-000000000003.jsonl";
    /// Generated: Pi v1, a compaction, a line holding two JSON objects.
    pub const PI_V1_COMPACTION: &str = "pi/v1-compaction-two-objects-on-a-line.jsonl";
    /// Generated: Pi v1, model and thinking-level changes, aborted messages, images, bytes that
    /// are not UTF-8 inside a string.
    pub const PI_V1_MODEL_CHANGES: &str = "pi/v1-model-changes-aborted-images.jsonl";
    /// Generated: Claude Code 2.1.x, every line type ctxfold reads: a failing command, a saved
    /// large output, a traceback, a write, an edit, an image, a `!` command, `/compact`, a
    /// subagent launched, `/rename`, two records on one line.
    pub const CLAUDE_SESSION: &str = "claude/0f1d0000-0000-4000-8000-00000000c001.jsonl";
    /// Generated: the transcript of the subagent that [`CLAUDE_SESSION`] launched.
    pub const CLAUDE_SUBAGENT: &str = "claude/agent-a0f1d00000000c0a1.jsonl";
    /// Generated: Claude Code 1.0.x, opening with a `summary` line; a `progress` row, an inline
    /// sidechain, a `file-history-snapshot`.
    pub const CLAUDE_LEGACY: &str = "claude/0f1d0000-0000-4000-8000-00000000c002.jsonl";
}

/// Where the own fixtures are.
pub fn own_fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The own fixture `name` (one of [`own`]).
pub fn own_fixture(name: &str) -> PathBuf {
    let path = own_fixtures_dir().join(name);
    assert!(path.is_file(), "no own fixture {}", path.display());
    path
}

/// Where the public fixtures are looked for: `$CTXFOLD_FIXTURES`, else `../shared/fixtures/real`.
pub fn public_fixtures_path() -> PathBuf {
    std::env::var_os("CTXFOLD_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real"))
}

/// The public real fixtures (session files published in other repositories, read in place and
/// never copied into the project), when they are there: the extra suite. When they are not, a
/// note says so on stderr, once per test binary (`cargo test -- --nocapture` shows it).
pub fn public_fixtures_dir() -> Option<PathBuf> {
    static NOTE: std::sync::Once = std::sync::Once::new();
    let dir = public_fixtures_path();
    if dir.is_dir() {
        return Some(dir);
    }
    NOTE.call_once(|| {
        eprintln!(
            "note: no public fixtures at {}: the extra suite over them is skipped (set CTXFOLD_FIXTURES to run it)",
            dir.display()
        )
    });
    None
}

/// The public fixture whose path contains `name_part`, when the public fixtures are there.
pub fn public_fixture(name_part: &str) -> Option<PathBuf> {
    let files = session_files(&public_fixtures_dir()?);
    let found = files
        .into_iter()
        .find(|p| p.to_string_lossy().contains(name_part));
    Some(found.unwrap_or_else(|| panic!("no public fixture {name_part:?}")))
}

/// The session files of a fixture folder (its codex/, pi/ and claude/ folders, those it has),
/// sorted in each, in that order of folders.
pub fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in ["codex", "pi", "claude"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        found.sort();
        files.extend(found);
    }
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

/// The id of session `n` of [`small_sessions`].
pub fn small_id(n: usize) -> String {
    format!("0f1d{n:04x}-0000-4000-8000-{n:012x}")
}

/// `count` small Pi sessions written into the new folder `dir`, session `n` with id
/// [`small_id`]`(n)`, in the order of their names: for what many sessions at once bring out.
pub fn small_sessions(dir: &Path, count: usize) -> Vec<PathBuf> {
    std::fs::create_dir(dir).unwrap();
    (0..count)
        .map(|n| {
            let id = small_id(n);
            let header = format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"2026-11-30T10:00:00.000Z\",\"cwd\":\"/work/p\"}}\n"
            );
            let turn = format!(
                "{{\"type\":\"message\",\"id\":\"{n:08x}\",\"parentId\":null,\"timestamp\":\"2026-11-30T10:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"text\",\"text\":\"session {n}\"}}]}}}}\n"
            );
            let path = dir.join(format!("{id}.jsonl"));
            std::fs::write(&path, header + &turn).unwrap();
            path
        })
        .collect()
}

/// Every fixture file: the own ones, then the public ones when they are there.
pub fn fixture_files() -> Vec<PathBuf> {
    let mut files = session_files(&own_fixtures_dir());
    if let Some(dir) = public_fixtures_dir() {
        files.extend(session_files(&dir));
    }
    files
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        Self {
            dir,
            store,
            home,
            extra: Vec::new(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A git identity in the home for the commits git makes, and no system-wide git config.
    pub fn set_git_identity(&mut self) {
        std::fs::write(
            self.home.join(".gitconfig"),
            "[user]\n\tname = Test\n\temail = test@example.com\n",
        )
        .unwrap();
        self.set("GIT_CONFIG_NOSYSTEM", "1");
    }

    /// Set an extra environment variable for every later run.
    pub fn set(&mut self, key: &str, value: impl AsRef<OsStr>) {
        self.extra
            .push((key.into(), value.as_ref().to_string_lossy().into_owned()));
    }

    /// A command for `program` (`ctxfold` or `ctxfold-<name>`) in the hermetic environment.
    pub fn command(&self, program: &str) -> Command {
        self.command_for(bin_dir().join(program))
    }

    /// `sh -c script` in the hermetic environment, `$BIN` naming the built binaries' folder.
    pub fn shell(&self, script: &str) -> Run {
        let mut cmd = self.command_for("sh");
        let out = cmd
            .args(["-c", script])
            .env("BIN", bin_dir())
            .stdin(Stdio::null())
            .output()
            .expect("run sh");
        Run {
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `sh -c script` with its stdout on a terminal (script(1) gives it one; its output comes back
    /// with `\r\n` line ends), `$BIN` naming the built binaries' folder; `None` without script(1).
    pub fn on_terminal(&self, script: &str) -> Option<Run> {
        which("script")?;
        let quoted = format!("'{}'", script.replace('\'', "'\\''"));
        Some(self.shell(&format!("script -qec {quoted} /dev/null")))
    }

    /// `sh -c script` in a private mount namespace, in the hermetic environment (a tmpfs mounted
    /// there is seen by nobody else and goes with it), `$BIN` naming the built binaries' folder;
    /// `None` where this machine does not allow one.
    pub fn in_mount_namespace(&self, script: &str) -> Option<Run> {
        let probe = Command::new("unshare")
            .args(["-m", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt"])
            .output()
            .ok()?;
        if !probe.status.success() {
            return None;
        }
        let mut cmd = self.command_for("unshare");
        cmd.args(["-m", "sh", "-c", script]).env("BIN", bin_dir());
        Some(Self::output(cmd, b""))
    }

    /// A command for any program (`sh`, `man`) in the hermetic environment.
    pub fn command_for(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", &self.home)
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("CTXFOLD_EXEC_PATH", bin_dir())
            .env("CTXFOLD_STORE", &self.store)
            .current_dir(self.dir.path());
        for (k, v) in &self.extra {
            cmd.env(k, v);
        }
        cmd
    }

    pub fn run<I, S>(&self, program: &str, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_with_stdin(program, args, b"")
    }

    pub fn run_with_stdin<I, S>(&self, program: &str, args: I, stdin: &[u8]) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.command(program);
        cmd.args(args);
        Self::output(cmd, stdin)
    }

    /// Run `cmd` (from [`Env::command`] or [`Env::command_for`]) with `stdin` to its end.
    pub fn output(mut cmd: Command, stdin: &[u8]) -> Run {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        let mut pipe = child.stdin.take().unwrap();
        let input = stdin.to_vec();
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
        let out = child.wait_with_output().expect("wait");
        writer.join().unwrap();
        Run {
            code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Session `id`'s seed index as the store at `store` keeps it: its batches' bytes in the order
    /// seeds/catalog.jsonl lists them, each read with `ctxfold-cat-object -p` (empty: none).
    pub fn stored_seed_index(&self, store: &Path, id: &str) -> String {
        let catalog =
            std::fs::read_to_string(store.join("seeds/catalog.jsonl")).unwrap_or_default();
        let mut index = String::new();
        for line in catalog.lines() {
            let batch: serde_json::Value = serde_json::from_str(line).unwrap();
            if batch["session"] != id {
                continue;
            }
            let object = batch["object"].as_str().unwrap();
            let run = self.run(
                "ctxfold-cat-object",
                [
                    OsStr::new("--store"),
                    store.as_os_str(),
                    OsStr::new("-p"),
                    OsStr::new(object),
                ],
            );
            let run = run.ok();
            assert_eq!(
                run.stdout.len() as u64,
                batch["bytes"].as_u64().unwrap(),
                "{line}"
            );
            index.push_str(std::str::from_utf8(&run.stdout).unwrap());
        }
        index
    }

    /// Every file under `dir` with its bytes, sorted: for "nothing changed on disk" checks.
    pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries {
                let p = e.unwrap().path();
                if p.is_dir() {
                    out.push((p.clone(), Vec::new()));
                    stack.push(p);
                } else {
                    out.push((p.clone(), std::fs::read(&p).unwrap()));
                }
            }
        }
        out.sort();
        out
    }
}

/// xorshift64*: enough randomness to pick moments and orders, and a seed to replay a run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// The number `$name` holds, else `default`: how many trials or steps a randomized test runs.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The seed `$name` holds (to replay a run), else one from the clock, said on stderr.
pub fn seed(name: &str) -> u64 {
    let seed = std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("{name}={seed}");
    seed
}
