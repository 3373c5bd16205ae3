//! Where `ctxfold-<name>` programs are found, in git's order: `$CTXFOLD_EXEC_PATH` (which
//! `ctxfold --exec-path=DIR` sets), then `<dir of ctxfold>/../libexec/ctxfold`, then the directory of `ctxfold`
//! itself, then `$PATH` (so a `ctxfold-foo` anywhere on `$PATH` is `ctxfold foo`).
//!
//! Only finding programs lives here; running them is the dispatcher's.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The variable naming the first directory of the exec path.
pub const VAR: &str = "CTXFOLD_EXEC_PATH";

/// The directories searched for `ctxfold-<name>`, in order.
pub struct ExecPath {
    /// The directories before `$PATH`'s: where the plumbing is installed.
    own: Vec<PathBuf>,
    path: Vec<PathBuf>,
}

impl ExecPath {
    /// The exec path this process and the programs it runs search.
    pub fn from_env() -> Self {
        let mut own = Vec::new();
        if let Some(dir) = std::env::var_os(VAR).filter(|v| !v.is_empty()) {
            own.push(PathBuf::from(dir));
        }
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            own.push(dir.join("../libexec/ctxfold"));
            own.push(dir);
        }
        let path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        Self { own, path }
    }

    /// The directory plumbing comes from: the first directory before `$PATH`'s that exists.
    pub fn plumbing_dir(&self) -> PathBuf {
        self.own
            .iter()
            .find(|d| d.is_dir())
            .or(self.own.last())
            .cloned()
            .unwrap_or_default()
    }

    /// The first executable `program` on the path.
    pub fn find(&self, program: &str) -> Option<PathBuf> {
        self.dirs()
            .map(|d| d.join(program))
            .find(|p| is_executable(p))
    }

    /// The `<name>` of every executable `ctxfold-<name>` on the path, sorted, without repeats.
    pub fn commands(&self) -> Vec<String> {
        let mut found: Vec<String> = self
            .dirs()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| is_executable(&e.path()))
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_prefix("ctxfold-")
                    .map(str::to_string)
            })
            .collect();
        found.sort();
        found.dedup();
        found
    }

    fn dirs(&self) -> impl Iterator<Item = &PathBuf> {
        self.own.iter().chain(&self.path)
    }
}

/// `program` on `$PATH` (a tool ctxfold uses, such as `man`).
pub fn search_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
