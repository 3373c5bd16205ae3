//! Seed-index files merge as the union of their lines: the local file as it is, then each remote
//! line it lacks, in the remote's order, once. Lines are compared as bytes without their newline;
//! memory holds one sha256 per local line, never the files.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::store::atomic::Pending;

/// Write the union of `local` and `remote` into `target` atomically (via a temp file in
/// `tmp_dir`) when the remote adds any line. Returns how many lines it added.
pub fn merge_lines(tmp_dir: &Path, local: &Path, remote: &Path, target: &Path) -> Result<u64> {
    let mut seen = HashSet::new();
    let mut pending = Pending::new_in(tmp_dir, ".seed-index-")?;
    let mut out = io::BufWriter::new(&mut pending);
    let mut ends_in_newline = true;
    for_each_line(local, |line| {
        seen.insert(Digest::of(strip(line)));
        ends_in_newline = line.ends_with(b"\n");
        out.write_all(line)
    })?;
    let mut added = 0;
    for_each_line(remote, |line| {
        if !seen.insert(Digest::of(strip(line))) {
            return Ok(());
        }
        if !ends_in_newline {
            out.write_all(b"\n")?;
        }
        added += 1;
        out.write_all(line)?;
        ends_in_newline = line.ends_with(b"\n");
        Ok(())
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
        each(&line).with_path("merge lines of", path)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn merged(local: &[u8], remote: &[u8]) -> (Vec<u8>, u64) {
        let dir = tempfile::tempdir().unwrap();
        let (l, r) = (dir.path().join("l"), dir.path().join("r"));
        fs::write(&l, local).unwrap();
        fs::write(&r, remote).unwrap();
        let added = merge_lines(dir.path(), &l, &r, &l).unwrap();
        (fs::read(&l).unwrap(), added)
    }

    #[test]
    fn keeps_local_order_then_adds_new_remote_lines_once() {
        assert_eq!(
            merged(b"a\nb\n", b"c\na\nc\nd\n"),
            (b"a\nb\nc\nd\n".to_vec(), 2)
        );
    }

    #[test]
    fn nothing_new_leaves_the_file_alone() {
        assert_eq!(merged(b"a\nb", b"b\na\n"), (b"a\nb".to_vec(), 0));
    }

    #[test]
    fn a_local_file_without_final_newline_gets_one_before_new_lines() {
        assert_eq!(merged(b"a", b"b"), (b"a\nb".to_vec(), 1));
        assert_eq!(merged(b"\xff\n", b"\xfe\n"), (b"\xff\n\xfe\n".to_vec(), 1));
    }
}
