//! Merging JSONL line files as a union: every line already in the target stays where it is, and
//! every line of the incoming file not yet in the target is appended, in the incoming order. The
//! seed index (append-only records) is merged this way when fold carries it into the store, and
//! when sync brings in a remote's.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use rustix::fs::{FlockOperation, flock};

use super::atomic::Pending;
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};

/// Merge the lines of `incoming` into `target` (created when missing), atomically. Returns how many
/// lines were added. An incoming last line without its `\n` is left out: its writer may still be
/// writing it. Lines compare without their `\n`. Concurrent merges into one target are serialized
/// by an flock on the target's folder.
pub fn union_lines(tmp_dir: &Path, target: &Path, incoming: &Path) -> Result<usize> {
    let new_bytes = fs::read(incoming).with_path("read", incoming)?;
    let dir = target
        .parent()
        .ok_or_else(|| Error::usage(format!("{}: no parent folder", target.display())))?;
    super::create_private_dir(dir)?;
    let dir_handle = File::open(dir).with_path("open", dir)?;
    flock(&dir_handle, FlockOperation::LockExclusive)
        .map_err(|e| Error::io(format!("lock {}", dir.display()), e.into()))?;
    let old = match fs::read(target) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_path("read", target),
    };
    // Lines are remembered by their sha256: memory stays small however long the lines are.
    let mut seen: HashSet<Digest> = old.split(|&b| b == b'\n').map(Digest::of).collect();
    let mut added = Vec::new();
    let mut count = 0;
    let complete = match new_bytes.iter().rposition(|&b| b == b'\n') {
        Some(at) => &new_bytes[..at],
        None => &[][..],
    };
    for line in complete.split(|&b| b == b'\n') {
        if !line.is_empty() && seen.insert(Digest::of(line)) {
            added.extend_from_slice(line);
            added.push(b'\n');
            count += 1;
        }
    }
    if count == 0 {
        return Ok(0);
    }
    let mut pending = Pending::new_in(tmp_dir, ".seed-index-")?;
    pending.write_all(&old).with_path("write", pending.path())?;
    if !old.is_empty() && !old.ends_with(b"\n") {
        pending
            .write_all(b"\n")
            .with_path("write", pending.path())?;
    }
    pending
        .write_all(&added)
        .with_path("write", pending.path())?;
    pending.commit(target, true)?;
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_keeps_order_and_adds_only_new_complete_lines() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("ctx/s/seed-index.jsonl");
        let incoming = dir.path().join("in.jsonl");
        fs::write(&incoming, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        assert_eq!(union_lines(dir.path(), &target, &incoming).unwrap(), 2);
        fs::write(&incoming, b"{\"c\":3}\n{\"a\":1}\n{\"c\":3}\n{\"half").unwrap();
        assert_eq!(union_lines(dir.path(), &target, &incoming).unwrap(), 1);
        assert_eq!(
            fs::read(&target).unwrap(),
            b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"
        );
        assert_eq!(union_lines(dir.path(), &target, &incoming).unwrap(), 0);
    }
}
