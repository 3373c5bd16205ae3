//! Merging JSONL line files as a union: every line already in the target stays where it is, and
//! every line of the incoming file not yet in the target is appended, in the incoming order, once.
//! The seed index (append-only records) is merged this way when fold carries the extension's index
//! into the store, and when sync brings in a remote's.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use rustix::fs::{FlockOperation, flock};

use super::atomic::Pending;
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};

/// Merge the lines of `incoming` into `target` (created when missing), atomically, and return how
/// many lines were added. An incoming last line without its `\n` is left out (its writer may still
/// be writing it), and so are empty lines. Lines compare as bytes without their `\n`; memory holds
/// one sha256 per line, never the files. Concurrent merges into one target are serialized by an
/// flock on the target's folder.
pub fn union_lines(tmp_dir: &Path, target: &Path, incoming: &Path) -> Result<usize> {
    let dir = target
        .parent()
        .ok_or_else(|| Error::usage(format!("{}: no parent folder", target.display())))?;
    super::create_private_dir(dir)?;
    let dir_handle = File::open(dir).with_path("open", dir)?;
    flock(&dir_handle, FlockOperation::LockExclusive)
        .map_err(|e| Error::io("lock", dir, e.into()))?;

    let mut seen = HashSet::new();
    let mut pending = Pending::new_in(tmp_dir, ".seed-index-")?;
    let mut out = BufWriter::new(&mut pending);
    let mut ends_in_newline = true;
    if target.exists() {
        for_each_line(target, |line| {
            seen.insert(Digest::of(strip(line)));
            ends_in_newline = line.ends_with(b"\n");
            out.write_all(line)
        })?;
    }
    let mut added = 0;
    for_each_line(incoming, |line| {
        let body = strip(line);
        if body.len() == line.len() || body.is_empty() || !seen.insert(Digest::of(body)) {
            return Ok(());
        }
        if !ends_in_newline {
            out.write_all(b"\n")?;
            ends_in_newline = true;
        }
        added += 1;
        out.write_all(line)
    })?;
    out.flush().with_path("write", target)?;
    drop(out);
    if added > 0 {
        pending.commit(target, true)?;
    }
    Ok(added)
}

fn strip(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

fn for_each_line(path: &Path, mut each: impl FnMut(&[u8]) -> io::Result<()>) -> Result<()> {
    let mut reader = BufReader::new(File::open(path).with_path("open", path)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .with_path("read", path)?
            == 0
        {
            return Ok(());
        }
        each(&line).with_path("merge lines into", path)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn merged(local: Option<&[u8]>, incoming: &[u8]) -> (Vec<u8>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let (target, new) = (
            dir.path().join("ctx/s/seed-index.jsonl"),
            dir.path().join("in"),
        );
        if let Some(local) = local {
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fs::write(&target, local).unwrap();
        }
        fs::write(&new, incoming).unwrap();
        let added = union_lines(dir.path(), &target, &new).unwrap();
        let left: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".seed-index-")
            })
            .collect();
        assert!(left.is_empty(), "a temp file was left behind");
        (fs::read(&target).unwrap_or_default(), added)
    }

    #[test]
    fn keeps_local_order_then_adds_new_complete_lines_once() {
        assert_eq!(
            merged(None, b"{\"a\":1}\n{\"b\":2}\n"),
            (b"{\"a\":1}\n{\"b\":2}\n".to_vec(), 2)
        );
        assert_eq!(
            merged(Some(b"a\nb\n"), b"c\na\nc\n\nd\n"),
            (b"a\nb\nc\nd\n".to_vec(), 2)
        );
        assert_eq!(merged(Some(b"a\n"), b"c\n{\"half"), (b"a\nc\n".to_vec(), 1));
    }

    #[test]
    fn nothing_new_leaves_the_file_alone() {
        assert_eq!(merged(Some(b"a\nb"), b"b\na\n"), (b"a\nb".to_vec(), 0));
        assert_eq!(merged(None, b""), (Vec::new(), 0));
    }

    #[test]
    fn a_local_file_without_final_newline_gets_one_before_new_lines() {
        assert_eq!(merged(Some(b"a"), b"b\n"), (b"a\nb\n".to_vec(), 1));
        assert_eq!(
            merged(Some(b"\xff\n"), b"\xfe\n"),
            (b"\xff\n\xfe\n".to_vec(), 1)
        );
    }
}
