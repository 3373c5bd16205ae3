//! The temp file a restore writes beside its target, and the ones killed restores leave behind:
//! found, and removed by the next restore of the same target.
//!
//! A restore writes its session into a file with no name (see [`Pending::unnamed_in`]), locked
//! (flock, exclusive) before a byte is written; it is named `.<name>.restore-XXXXXX.tmp` only for
//! the moment between its link and its rename over an existing target, still locked, and the
//! kernel drops the lock when the process dies, however it dies. A restore killed while it writes
//! leaves nothing, then; a temp file that can be locked belongs to no running restore, and is
//! dead. Where the filesystem has no unnamed files the temp file is named from its creation, and
//! an empty one may have been created a moment ago by a restore that has not locked it yet: such
//! a file counts as dead only once older than [`GRACE`] (were a restore stalled that long between
//! creating and locking its file, it would fail at its rename, losing nothing). Two restores of
//! one target at once each see the other's file locked and leave it.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::{FlockOperation, flock};

use crate::error::{Error, IoContext, Result};
use crate::files::atomic::Pending;

/// How old an empty, unlocked temp file must be to count as dead: far longer than the moment
/// between creating a temp file and locking it.
pub const GRACE: Duration = Duration::from_secs(2);

/// `tempfile`'s random part: six ASCII letters and digits.
const RANDOM_LEN: usize = 6;

/// A new temp file for `target` in `dir` (the target's folder), locked.
pub fn create(dir: &Path, target: &Path) -> Result<Pending> {
    let mut pending = Pending::unnamed_in(dir, &prefix(target))?;
    flock(pending.file(), FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| Error::io("lock", pending.path(), e.into()))?;
    Ok(pending)
}

fn prefix(target: &Path) -> String {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.restore-")
}

/// Remove the temp files killed restores of `targets` left beside them; returns them by target.
/// Each folder is listed once, however many of the targets are in it (a restore of thousands of
/// sessions into one folder listed it once for each).
pub fn sweep<'t>(
    targets: impl IntoIterator<Item = &'t Path>,
) -> Result<HashMap<PathBuf, Vec<PathBuf>>> {
    let mut by_dir: HashMap<PathBuf, HashMap<String, PathBuf>> = HashMap::new();
    for target in targets {
        let dir = match target.parent().filter(|d| !d.as_os_str().is_empty()) {
            Some(dir) => dir.to_path_buf(),
            None => PathBuf::from("."),
        };
        by_dir
            .entry(dir)
            .or_default()
            .insert(prefix(target), target.to_path_buf());
    }
    let mut removed: HashMap<PathBuf, Vec<PathBuf>> = HashMap::new();
    for (dir, prefixes) in by_dir {
        let target_of = |name: &str| {
            let at = name.rfind(".restore-")?;
            let rest = &name[at + ".restore-".len()..];
            let prefix = &name[..at + ".restore-".len()];
            prefixes.get(prefix).filter(|_| is_random_tmp(rest))
        };
        for (path, _) in dead_in(&dir, |name| target_of(name).is_some())? {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let target = target_of(name).expect("named as one of ours").clone();
            crate::files::remove_if_present(&path)?;
            removed.entry(target).or_default().push(path);
        }
    }
    Ok(removed)
}

/// Every temp file a killed restore left anywhere under `dir`, with its size.
pub fn leftovers_under(dir: &Path) -> Result<Vec<(PathBuf, u64)>> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        found.extend(dead_in(&dir, is_restore_temp_name)?);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `.<name>.restore-XXXXXX.tmp`, for any name.
fn is_restore_temp_name(name: &str) -> bool {
    name.starts_with('.')
        && name
            .rfind(".restore-")
            .is_some_and(|at| at > 0 && is_random_tmp(&name[at + ".restore-".len()..]))
}

/// `XXXXXX.tmp`.
fn is_random_tmp(rest: &str) -> bool {
    rest.strip_suffix(".tmp").is_some_and(|random| {
        random.len() == RANDOM_LEN && random.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// The dead temp files directly in `dir` whose names pass `ours`, with their sizes. A folder
/// that is missing or cannot be listed has none.
fn dead_in(dir: &Path, ours: impl Fn(&str) -> bool) -> Result<Vec<(PathBuf, u64)>> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut dead = Vec::new();
    for entry in entries.flatten() {
        let named = entry.file_name().to_str().is_some_and(&ours);
        if named && entry.file_type().is_ok_and(|t| t.is_file()) {
            let path = entry.path();
            if let Some(size) = dead_size(&path)? {
                dead.push((path, size));
            }
        }
    }
    Ok(dead)
}

/// The size of the temp file at `path` if no restore is writing it, else `None`.
fn dead_size(path: &Path) -> Result<Option<u64>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_path("open", path),
    };
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
        Err(e) => return Err(Error::io("lock", path, e.into())),
    }
    let meta = file.metadata().with_path("stat", path)?;
    let age = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default();
    Ok((meta.len() > 0 || age > GRACE).then_some(meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_dead_temp_files_of_the_target_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("s.jsonl");
        let dead = dir.path().join(".s.jsonl.restore-Ab12Cd.tmp");
        fs::write(&dead, b"half a session").unwrap();
        // Another target's, an empty young one, and a live one are kept.
        let other = dir.path().join(".t.jsonl.restore-Ab12Cd.tmp");
        fs::write(&other, b"x").unwrap();
        let young = dir.path().join(".s.jsonl.restore-Zz99Zz.tmp");
        fs::write(&young, b"").unwrap();
        // Named, as where a filesystem has no unnamed files, and locked by its restore.
        let mut live = Pending::new_in(dir.path(), &prefix(&target)).unwrap();
        flock(live.file(), FlockOperation::NonBlockingLockExclusive).unwrap();
        live.write_all(b"being written").unwrap();
        let swept = sweep([target.as_path()]).unwrap();
        assert_eq!(swept, HashMap::from([(target.clone(), vec![dead.clone()])]));
        assert!(!dead.exists() && other.exists() && young.exists() && live.path().exists());
        let found = leftovers_under(dir.path()).unwrap();
        assert_eq!(found, vec![(other.clone(), 1)]);
        // Several targets of one folder: each gets its own.
        let t = dir.path().join("t.jsonl");
        fs::write(&dead, b"again").unwrap();
        let swept = sweep([target.as_path(), t.as_path()]).unwrap();
        assert_eq!(
            swept,
            HashMap::from([
                (target.clone(), vec![dead.clone()]),
                (t, vec![other.clone()])
            ])
        );
        assert!(!is_restore_temp_name(".s.jsonl.restore-Ab12C.tmp"));
        assert!(!is_restore_temp_name("s.jsonl.restore-Ab12Cd.tmp"));
    }

    #[test]
    fn a_restore_being_written_has_no_name_beside_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("s.jsonl");
        let mut writing = create(dir.path(), &target).unwrap();
        writing.write_all(b"being written").unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        writing.commit(&target, false).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"being written");
    }
}
