//! The inode numbers of an agents mount: one for each name the kernel looked up, by its folder and
//! name, so that a path keeps its number whether the file under it is real or folded, and a rename
//! moves the number with the file. A name removed (unlinked, renamed over) lets go of its number:
//! the next file under that name gets a new one, as on a disk.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::Mutex;

/// The root folder's number, as the kernel knows it.
pub const ROOT: u64 = 1;

#[derive(Default)]
pub struct Nodes {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each number's folder and name; `None` once the name let go of it.
    nodes: HashMap<u64, Option<(u64, OsString)>>,
    by_name: HashMap<(u64, OsString), u64>,
    last: u64,
}

impl Nodes {
    /// The number of `name` in folder `parent`, given one if it has none yet.
    pub fn of(&self, parent: u64, name: &OsStr) -> u64 {
        let mut inner = self.lock();
        let key = (parent, name.to_os_string());
        if let Some(&ino) = inner.by_name.get(&key) {
            return ino;
        }
        inner.last = inner.last.max(ROOT) + 1;
        let ino = inner.last;
        inner.nodes.insert(ino, Some(key.clone()));
        inner.by_name.insert(key, ino);
        ino
    }

    /// The path of `ino` under the root (empty for the root); `None` for a number no name holds.
    pub fn path(&self, ino: u64) -> Option<PathBuf> {
        let inner = self.lock();
        let mut names = Vec::new();
        let mut at = ino;
        while at != ROOT {
            let (parent, name) = inner.nodes.get(&at)?.as_ref()?;
            names.push(name.as_os_str());
            at = *parent;
        }
        Some(names.into_iter().rev().collect())
    }

    /// `name` in `parent` is gone: its number no longer names a path.
    pub fn remove(&self, parent: u64, name: &OsStr) {
        let mut inner = self.lock();
        if let Some(ino) = inner.by_name.remove(&(parent, name.to_os_string())) {
            inner.nodes.insert(ino, None);
        }
    }

    /// `name` in `parent` was renamed to `new_name` in `new_parent`, over whatever was there.
    pub fn rename(&self, parent: u64, name: &OsStr, new_parent: u64, new_name: &OsStr) {
        self.remove(new_parent, new_name);
        let mut inner = self.lock();
        let Some(ino) = inner.by_name.remove(&(parent, name.to_os_string())) else {
            return;
        };
        let key = (new_parent, new_name.to_os_string());
        inner.nodes.insert(ino, Some(key.clone()));
        inner.by_name.insert(key, ino);
    }

    /// Two names swapped their files (`RENAME_EXCHANGE`).
    pub fn exchange(&self, parent: u64, name: &OsStr, new_parent: u64, new_name: &OsStr) {
        let mut inner = self.lock();
        let one = (parent, name.to_os_string());
        let two = (new_parent, new_name.to_os_string());
        let first = inner.by_name.remove(&one);
        let second = inner.by_name.remove(&two);
        if let Some(ino) = first {
            inner.nodes.insert(ino, Some(two.clone()));
            inner.by_name.insert(two, ino);
        }
        if let Some(ino) = second {
            inner.nodes.insert(ino, Some(one.clone()));
            inner.by_name.insert(one, ino);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_follows_its_file_and_a_removed_name_gets_a_new_one() {
        let nodes = Nodes::default();
        let sessions = nodes.of(ROOT, OsStr::new("sessions"));
        let file = nodes.of(sessions, OsStr::new("a.jsonl"));
        assert_eq!(nodes.of(sessions, OsStr::new("a.jsonl")), file);
        assert_eq!(nodes.path(file), Some(PathBuf::from("sessions/a.jsonl")));
        assert_eq!(nodes.path(ROOT), Some(PathBuf::new()));

        let archived = nodes.of(ROOT, OsStr::new("archived_sessions"));
        nodes.rename(
            sessions,
            OsStr::new("a.jsonl"),
            archived,
            OsStr::new("a.jsonl"),
        );
        assert_eq!(
            nodes.path(file),
            Some(PathBuf::from("archived_sessions/a.jsonl"))
        );
        let again = nodes.of(sessions, OsStr::new("a.jsonl"));
        assert_ne!(again, file);

        nodes.remove(archived, OsStr::new("a.jsonl"));
        assert_eq!(nodes.path(file), None);
        assert_ne!(nodes.of(archived, OsStr::new("a.jsonl")), file);

        let b = nodes.of(sessions, OsStr::new("b.jsonl"));
        nodes.exchange(
            sessions,
            OsStr::new("a.jsonl"),
            sessions,
            OsStr::new("b.jsonl"),
        );
        assert_eq!(nodes.path(b), Some(PathBuf::from("sessions/a.jsonl")));
        assert_eq!(nodes.path(again), Some(PathBuf::from("sessions/b.jsonl")));
    }
}
