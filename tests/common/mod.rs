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

/// `program` on the test's own `$PATH` (`man`, `zsh`), if installed.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}

/// The real session fixtures (read in place, never copied into the project).
pub fn fixtures_dir() -> PathBuf {
    let dir = std::env::var_os("CTXFOLD_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real"));
    assert!(
        dir.is_dir(),
        "the real fixtures are missing at {}: set CTXFOLD_FIXTURES",
        dir.display()
    );
    dir
}

/// Every fixture file, sorted.
pub fn fixture_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in ["codex", "pi"] {
        for entry in std::fs::read_dir(fixtures_dir().join(sub)).unwrap() {
            files.push(entry.unwrap().path());
        }
    }
    files.sort();
    assert!(
        files.len() >= 6,
        "expected the six real fixtures, found {}",
        files.len()
    );
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

    /// Set an extra environment variable for every later run.
    pub fn set(&mut self, key: &str, value: impl AsRef<OsStr>) {
        self.extra
            .push((key.into(), value.as_ref().to_string_lossy().into_owned()));
    }

    /// A command for `program` (`ctxfold` or `ctxfold-<name>`) in the hermetic environment.
    pub fn command(&self, program: &str) -> Command {
        self.command_for(bin_dir().join(program))
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
