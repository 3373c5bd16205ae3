//! Which files other processes hold open for writing, as `fuser` finds them: every process's open
//! descriptors under `/proc`, their access mode from `fdinfo`. An agent that keeps its session
//! file open (Codex's recorder holds it for the whole session, idle for days in a terminal)
//! goes on appending to it after it is removed, into a file no name reaches: those bytes are lost
//! when it closes.
//!
//! A snapshot: a process that opens the file after it is taken is not seen, and one that opens
//! and closes it for each append (Pi, Claude Code) is seen only mid-write. Only the processes this
//! user may look into are seen (all of them for root), which are the ones running its agents.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A file by device and inode: what every open descriptor of it shares, whatever its path.
type FileId = (u64, u64);

/// A process holding a file open for writing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    pub pid: u32,
    /// Its command name (`/proc/PID/comm`), when it could be read.
    pub name: Option<String>,
}

impl std::fmt::Display for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "process {} ({name})", self.pid),
            None => write!(f, "process {}", self.pid),
        }
    }
}

/// The files open for writing in other processes when [`Writers::scan`] looked.
#[derive(Debug, Default)]
pub struct Writers(HashMap<FileId, Writer>);

impl Writers {
    /// Look through every process but this one. What cannot be read (a process that ended, one
    /// of another user) is passed over.
    pub fn scan() -> Self {
        let own = std::process::id();
        let mut found = HashMap::new();
        let Ok(processes) = fs::read_dir("/proc") else {
            return Self(found);
        };
        for process in processes.flatten() {
            let Some(pid) = process
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == own {
                continue;
            }
            let dir = process.path();
            let Ok(descriptors) = fs::read_dir(dir.join("fd")) else {
                continue;
            };
            for descriptor in descriptors.flatten() {
                // Followed: the file the descriptor is open on (most are sockets and pipes, passed
                // over before their fdinfo is read).
                let Ok(meta) = fs::metadata(descriptor.path()) else {
                    continue;
                };
                if !meta.is_file() || !writes(&dir.join("fdinfo").join(descriptor.file_name())) {
                    continue;
                }
                found
                    .entry((meta.dev(), meta.ino()))
                    .or_insert_with(|| Writer {
                        pid,
                        name: fs::read_to_string(dir.join("comm"))
                            .ok()
                            .map(|name| name.trim_end().to_string()),
                    });
            }
        }
        Self(found)
    }

    /// The process that held the file at `path` open for writing, if one did.
    pub fn of(&self, path: &Path) -> Option<&Writer> {
        let meta = fs::metadata(path).ok()?;
        self.0.get(&(meta.dev(), meta.ino()))
    }
}

/// Whether the descriptor `fdinfo` describes was opened for writing (`flags:` in octal, its
/// access mode not `O_RDONLY`).
fn writes(fdinfo: &Path) -> bool {
    let Ok(info) = fs::read_to_string(fdinfo) else {
        return false;
    };
    info.lines()
        .find_map(|line| line.strip_prefix("flags:"))
        .and_then(|flags| i32::from_str_radix(flags.trim(), 8).ok())
        .is_some_and(|flags| flags & libc::O_ACCMODE != libc::O_RDONLY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_file_another_process_holds_open_to_append_is_found_and_one_it_reads_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (written, read) = (dir.path().join("written"), dir.path().join("read"));
        fs::write(&written, b"a\n").unwrap();
        fs::write(&read, b"b\n").unwrap();
        let script = format!(
            "exec 3>>'{}' 4<'{}'; echo ready; exec sleep 30",
            written.display(),
            read.display()
        );
        let mut holder = Command::new("sh")
            .args(["-c", &script])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
            &mut ready,
        )
        .unwrap();
        let writers = Writers::scan();
        let writer = writers.of(&written).cloned();
        let reader = writers.of(&read).cloned();
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert_eq!(writer.map(|w| w.pid), Some(holder.id()));
        assert_eq!(reader, None);
        // This process's own descriptors are never counted.
        let own = fs::OpenOptions::new().append(true).open(&read).unwrap();
        assert_eq!(Writers::scan().of(&read), None);
        drop(own);
    }
}
