//! The store's seed index: records for folded sessions appended to
//! `<store>/context-fold/<session-id>/seed-index.jsonl`. The file is a union other writers append
//! to (the Pi extension's own records are merged into it), so it is only ever appended to, in one
//! `O_APPEND` write per session, never rewritten.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::extract::extract;
use super::plan::Options;
use super::record::{FoldIndex, HARNESS};
use crate::error::Cause;
use crate::error::{IoContext, Result};
use crate::ledger::{FoldedFile, Ledger, Source, StoreSource};
use crate::store::atomic::sync_parent;
use crate::store::manifest::Manifest;
use crate::store::{Store, check_session_id, create_private_dir};

/// `<store>/context-fold/<id>/seed-index.jsonl`.
pub fn index_path(store: &Store, session_id: &str) -> Result<PathBuf> {
    check_session_id(session_id)?;
    Ok(store
        .context_fold_dir()
        .join(session_id)
        .join("seed-index.jsonl"))
}

/// The seqs ctxfold gives the store's records start above this.
pub const STORE_SEQ_BASE: u64 = 1_000_000;

/// Extract a folded session's records (one per compaction, and a final one over its active branch)
/// and append those the store's index does not hold yet. Returns how many were appended.
///
/// A record counts as held when a record of ctxfold's with the same content (seq aside) is in the
/// file. New records take seqs after the highest one there and above [`STORE_SEQ_BASE`]: the
/// extension's records, merged in later with its own small seqs, then never share a seq with ours
/// (the union's latest-per-seq rule would void one of the two).
pub fn index_folded_session(store: &Store, manifest: &Manifest) -> Result<usize> {
    index_session(store, manifest, &StoreSource { store, manifest })
}

/// [`index_folded_session`], reading the session from `path` (its source, which a fold has just
/// read) rather than from the store, as long as it still holds exactly the folded bytes; from the
/// store otherwise.
pub fn index_folded_source(store: &Store, manifest: &Manifest, path: &Path) -> Result<usize> {
    let file = FoldedFile {
        path: path.to_path_buf(),
        source: manifest.source,
    };
    match index_session(store, manifest, &file) {
        Err(e) if matches!(e.cause(), Cause::SessionChanged { .. }) => {
            index_folded_session(store, manifest)
        }
        other => other,
    }
}

fn index_session(store: &Store, manifest: &Manifest, source: &dyn Source) -> Result<usize> {
    let ledger = Ledger::scan(source)?;
    let records = extract(
        &ledger,
        &Options {
            final_record: true,
            through: None,
        },
    )?;
    let path = index_path(store, &manifest.session.id)?;
    let (held, last_seq, ends_clean) = scan_index(&path)?;
    let mut last_seq = last_seq.max(STORE_SEQ_BASE);
    let fresh: Vec<FoldIndex> = records
        .into_iter()
        .filter(|r| !held.contains(&identity(r)))
        .collect();
    if fresh.is_empty() {
        return Ok(0);
    }
    // One buffer, one append: a line cut short by a crash is closed before ours start.
    let mut buffer = Vec::new();
    if !ends_clean {
        buffer.push(b'\n');
    }
    for mut record in fresh.iter().cloned() {
        last_seq += 1;
        record.seq = last_seq;
        buffer.extend_from_slice(record.to_line().as_bytes());
        buffer.push(b'\n');
    }
    append(&path, &buffer)?;
    Ok(fresh.len())
}

/// Append `bytes` with `O_APPEND` (never rewriting what other writers put there), then fsync; a new
/// file (mode 0600) has its directory fsynced too.
fn append(path: &Path, bytes: &[u8]) -> Result<()> {
    create_private_dir(path.parent().expect("the index has a folder"))?;
    let created = !path.exists();
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_path("open", path)?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_path("append to", path)?;
    if created {
        sync_parent(path)?;
    }
    Ok(())
}

/// The identities of ctxfold's records in the file, its highest seq, and whether it ends in `\n`.
fn scan_index(path: &Path) -> Result<(HashSet<String>, u64, bool)> {
    let mut held = HashSet::new();
    let mut last_seq = 0;
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((held, last_seq, true)),
        Err(e) => return Err(e).with_path("open", path),
    };
    for line in BufReader::new(file).split(b'\n') {
        let line = line.with_path("read", path)?;
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        last_seq = last_seq.max(value.get("seq").and_then(Value::as_u64).unwrap_or(0));
        if value.get("harness").and_then(Value::as_str) != Some(HARNESS) {
            continue;
        }
        if let Ok(record) = serde_json::from_value::<FoldIndex>(value) {
            held.insert(identity(&record));
        }
    }
    let ends_clean = last_byte(path)?.is_none_or(|b| b == b'\n');
    Ok((held, last_seq, ends_clean))
}

fn last_byte(path: &Path) -> Result<Option<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path).with_path("open", path)?;
    if file.metadata().with_path("stat", path)?.len() == 0 {
        return Ok(None);
    }
    let mut byte = [0u8];
    file.seek(SeekFrom::End(-1))
        .and_then(|_| file.read_exact(&mut byte))
        .with_path("read", path)?;
    Ok(Some(byte[0]))
}

/// A record's content without its seq.
fn identity(record: &FoldIndex) -> String {
    let mut record = record.clone();
    record.seq = 0;
    record.to_line()
}
