//! A running `ctxfold mount` for the tests: started, waited for until it says it answers, stopped
//! as Ctrl-C stops it, and unmounted (its daemon ended) when dropped.
#![allow(dead_code)]

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Stdio};

use crate::common::Env;

/// An unnamed file a daemon holds open.
pub struct Copy {
    /// The folder it is in.
    pub dir: PathBuf,
    pub bytes: Vec<u8>,
    pub ino: u64,
}

pub struct Mount {
    /// The folders it mounts.
    pub dirs: Vec<PathBuf>,
    pub child: Child,
    stderr: BufReader<ChildStderr>,
    /// What it said on stderr so far.
    pub said: String,
}

impl Mount {
    /// `ctxfold mount DIR` (DIR made when missing).
    pub fn start(env: &Env, dir: &Path) -> Self {
        Self::start_with(env, dir, &[])
    }

    /// `ctxfold mount DIR` with `more` arguments.
    pub fn start_with(env: &Env, dir: &Path, more: &[&str]) -> Self {
        // There already when a killed daemon's mount is on it (which answers nothing).
        match fs::create_dir(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => panic!("{e}"),
            _ => {}
        }
        let args: Vec<&str> = ["mount", dir.to_str().unwrap()]
            .iter()
            .chain(more)
            .copied()
            .collect();
        Self::run(env, &args, vec![dir.to_path_buf()])
    }

    /// The unnamed files the daemon holds open: its decoded copies of sessions.
    pub fn copies(&self) -> Vec<Copy> {
        let fds = PathBuf::from(format!("/proc/{}/fd", self.child.id()));
        let mut copies = Vec::new();
        for entry in fs::read_dir(&fds).unwrap() {
            let fd = entry.unwrap().path();
            let Ok(target) = fs::read_link(&fd) else {
                continue;
            };
            // What the kernel says of an `O_TMPFILE`: `<dir>/#<inode> (deleted)`.
            let target = target.to_string_lossy().into_owned();
            let Some(unnamed) = target.strip_suffix(" (deleted)") else {
                continue;
            };
            let unnamed = Path::new(unnamed);
            if unnamed
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('#'))
            {
                copies.push(Copy {
                    dir: unnamed.parent().unwrap().to_path_buf(),
                    bytes: fs::read(&fd).unwrap(),
                    ino: std::os::unix::fs::MetadataExt::ino(&fs::metadata(&fd).unwrap()),
                });
            }
        }
        copies
    }

    /// `ctxfold mount --agents` with `more` arguments, over `dirs`.
    pub fn agents(env: &Env, dirs: &[&Path], more: &[&str]) -> Self {
        let args: Vec<&str> = ["mount", "--agents"].iter().chain(more).copied().collect();
        Self::run(env, &args, dirs.iter().map(|d| d.to_path_buf()).collect())
    }

    /// Start one and wait until it says it is mounted (a folder's listing may come from the
    /// kernel's cache of an earlier mount there: no sign).
    fn run(env: &Env, args: &[&str], dirs: Vec<PathBuf>) -> Self {
        assert!(
            Path::new("/dev/fuse").exists(),
            "this machine has no /dev/fuse: the mount tests need FUSE"
        );
        let mut child = env
            .command("ctxfold")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut said = String::new();
        while !said.contains("to stop)") {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let status = child.wait().unwrap();
                panic!("the mount ended ({status}): {said}");
            }
            said.push_str(&line);
        }
        for dir in &dirs {
            assert!(mounted(dir), "{} is not mounted: {said}", dir.display());
        }
        Self {
            dirs,
            child,
            stderr,
            said,
        }
    }

    /// Stop it as Ctrl-C does; its status and all it said on stderr.
    pub fn stop(mut self) -> (Option<i32>, String) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        let mut rest = String::new();
        self.stderr.read_to_string(&mut rest).unwrap();
        let status = self.child.wait().unwrap();
        (status.code(), format!("{}{rest}", self.said))
    }

    /// Kill its daemon as `kill -9` does, leaving its mounts dead.
    pub fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            for dir in &self.dirs {
                let _ = rustix::mount::unmount(dir, rustix::mount::UnmountFlags::DETACH);
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Whether `dir` is a mount point now.
pub fn mounted(dir: &Path) -> bool {
    let dir = dir.to_str().unwrap();
    fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(dir))
}
