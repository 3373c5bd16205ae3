//! The store's seed index: what a session's index holds, and the two ways it grows. Each session's
//! index is its legacy file (stores written before the catalog kept it as
//! `<store>/context-fold/<id>/seed-index.jsonl`; `gc --apply` moves it into the catalog) followed
//! by its batches in the catalog (see `catalog`). It grows by ctxfold's records of a folded session
//! (those not held yet, with seqs after the rest) and by the lines of another index file merged in
//! as a union (the Pi extension's, an older store's), never by rewriting what is there.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::catalog::{self, Batch, Catalog};
use super::extract::extract;
use super::plan::Options;
use super::record::{FoldIndex, HARNESS};
use super::union::Union;
use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::ledger::{Ledger, Source, StoreSource};
use crate::odb::{DEFAULT_LEVEL, Encoder};
use crate::store::manifest::Manifest;
use crate::store::{Store, check_session_id, entry_names};

/// The seqs ctxfold gives the store's records start above this.
const STORE_SEQ_BASE: u64 = 1_000_000;

const LEGACY_FILE: &str = "seed-index.jsonl";

/// `<store>/context-fold/<id>/seed-index.jsonl`, where stores kept a session's index before the
/// catalog.
pub fn legacy_path(store: &Store, session: &str) -> Result<PathBuf> {
    check_session_id(session)?;
    Ok(store.context_fold_dir().join(session).join(LEGACY_FILE))
}

/// The sessions with a legacy index file, sorted.
pub fn legacy_sessions(store: &Store) -> Result<Vec<String>> {
    let mut sessions: Vec<String> = entry_names(&store.context_fold_dir())?
        .into_iter()
        .filter(|id| check_session_id(id).is_ok())
        .filter(|id| {
            store
                .context_fold_dir()
                .join(id)
                .join(LEGACY_FILE)
                .is_file()
        })
        .collect();
    sessions.sort();
    Ok(sessions)
}

/// Every session with a seed index: those with a legacy file (sorted), then the catalog's in the
/// order their first batch was appended.
pub fn sessions(store: &Store, catalog: &Catalog) -> Result<Vec<String>> {
    let mut sessions = legacy_sessions(store)?;
    let legacy: HashSet<String> = sessions.iter().cloned().collect();
    sessions.extend(
        catalog
            .sessions()
            .into_iter()
            .filter(|s| !legacy.contains(*s))
            .map(String::from),
    );
    Ok(sessions)
}

/// Hand each part of `session`'s index to `each` (a reader and a name for messages), in order;
/// false when it has none.
fn read_parts(
    store: &Store,
    catalog: &Catalog,
    session: &str,
    each: &mut dyn FnMut(&mut dyn BufRead, &str) -> Result<()>,
) -> Result<bool> {
    let legacy = legacy_path(store, session)?;
    let mut found = false;
    match File::open(&legacy) {
        Ok(file) => {
            found = true;
            each(&mut BufReader::new(file), &legacy.display().to_string())?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_path("open", &legacy),
    }
    for batch in catalog.of(session) {
        found = true;
        let bytes = store
            .odb()
            .read_to_vec(&batch.object, Some(batch.bytes))
            .map_err(|e| e.context(format_args!("the seed index of {session}")))?;
        each(&mut &bytes[..], &format!("seed batch {}", batch.object))?;
    }
    Ok(found)
}

/// Read `session`'s index into `union`; false when it has none.
pub fn read_union(
    store: &Store,
    catalog: &Catalog,
    session: &str,
    union: &mut Union,
) -> Result<bool> {
    read_parts(store, catalog, session, &mut |reader, what| {
        union.read(reader, what)
    })
}

/// What a session's index holds, for a writer about to add to it.
#[derive(Default)]
pub struct Held {
    /// The batches it was read from (the legacy file aside).
    basis: Vec<Digest>,
    /// ctxfold's records, by the sha256 of their content (seq aside): a long session's records
    /// re-list every earlier span, and holding them whole would hold its index twice.
    records: HashSet<Digest>,
    last_seq: u64,
    /// Every line, by its sha256 (without its `\n`).
    lines: HashSet<Digest>,
}

impl Held {
    /// What `session`'s index holds.
    pub fn of(store: &Store, catalog: &Catalog, session: &str) -> Result<Self> {
        let mut held = Held {
            basis: catalog.of(session).map(|b| b.object).collect(),
            ..Held::default()
        };
        let mut line = Vec::new();
        read_parts(store, catalog, session, &mut |reader, what| {
            loop {
                line.clear();
                if reader
                    .read_until(b'\n', &mut line)
                    .context(|| format!("read {what}"))?
                    == 0
                {
                    return Ok(());
                }
                held.line(line.strip_suffix(b"\n").unwrap_or(&line));
            }
        })?;
        Ok(held)
    }

    fn line(&mut self, line: &[u8]) {
        self.lines.insert(Digest::of(line));
        let Ok(value) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        self.last_seq = self
            .last_seq
            .max(value.get("seq").and_then(Value::as_u64).unwrap_or(0));
        if value.get("harness").and_then(Value::as_str) != Some(HARNESS) {
            return;
        }
        if let Ok(record) = serde_json::from_value::<FoldIndex>(value) {
            self.records.insert(identity(&record));
        }
    }

    /// Whether `catalog` lists exactly the batches this was read from.
    fn is_current(&self, catalog: &Catalog, session: &str) -> bool {
        catalog.of(session).map(|b| &b.object).eq(self.basis.iter())
    }
}

/// A record's content without its seq, as a digest.
fn identity(record: &FoldIndex) -> Digest {
    let mut record = record.clone();
    record.seq = 0;
    Digest::of(record.to_line().as_bytes())
}

/// The records of `records` that `held` lacks, as the lines of one batch, with seqs after the
/// highest held and above [`STORE_SEQ_BASE`] (the extension's records, merged in later with their
/// own small seqs, then never share a seq with ours: the union's latest-per-seq rule would void
/// one of the two); `None` when there are none. Also how many records it holds.
fn record_batch(held: &Held, records: &[FoldIndex]) -> Option<(Vec<u8>, usize)> {
    let mut seq = held.last_seq.max(STORE_SEQ_BASE);
    let mut bytes = Vec::new();
    let mut count = 0;
    for record in records
        .iter()
        .filter(|r| !held.records.contains(&identity(r)))
    {
        seq += 1;
        let mut record = record.clone();
        record.seq = seq;
        bytes.extend_from_slice(record.to_line().as_bytes());
        bytes.push(b'\n');
        count += 1;
    }
    (count > 0).then_some((bytes, count))
}

/// The records ctxfold gives a folded session: one `compact` record per compaction and a final one
/// over its active branch, from its ledger read from `source`.
pub fn records_of(source: &dyn Source) -> Result<Vec<FoldIndex>> {
    let ledger = Ledger::scan(source)?;
    extract(
        &ledger,
        &Options {
            final_record: true,
            through: None,
        },
    )
}

/// A session's new records, their batch made against the index as it was ([`stage`]): its bytes
/// go into a pack (or a loose object) before [`list`] names it in the catalog.
pub struct Staged {
    session: String,
    records: Vec<FoldIndex>,
    held: Held,
    batch: Option<(Batch, usize)>,
    bytes: Option<Vec<u8>>,
}

impl Staged {
    /// The batch's object to store, once: its name and bytes (`None`: nothing new to append).
    pub fn take_object(&mut self) -> Option<(Digest, Vec<u8>)> {
        let bytes = self.bytes.take()?;
        Some((self.batch.as_ref()?.0.object, bytes))
    }
}

/// Make the batch of `records` for `session` against its index as `catalog` lists it now.
pub fn stage(
    store: &Store,
    catalog: &Catalog,
    session: &str,
    records: Vec<FoldIndex>,
) -> Result<Staged> {
    let held = Held::of(store, catalog, session)?;
    let (batch, bytes) = match record_batch(&held, &records) {
        Some((bytes, count)) => {
            let batch = Batch {
                session: session.into(),
                object: Digest::of(&bytes),
                bytes: bytes.len() as u64,
            };
            (Some((batch, count)), Some(bytes))
        }
        None => (None, None),
    };
    Ok(Staged {
        session: session.into(),
        records,
        held,
        batch,
        bytes,
    })
}

/// Name the staged batches in the catalog, their objects durable already; how many records each
/// appended. A session whose index changed since it was staged (another process appended to it)
/// has its batch made again against what it holds now, stored loose.
pub fn list(store: &Store, catalog: &mut Catalog, staged: Vec<Staged>) -> Result<Vec<usize>> {
    if staged.iter().all(|s| s.batch.is_none()) {
        return Ok(vec![0; staged.len()]);
    }
    let lock = catalog::lock(store)?;
    catalog.refresh(store)?;
    let mut batches = Vec::new();
    let mut appended = Vec::new();
    let mut redone = false;
    for staged in staged {
        let batch = match staged.held.is_current(catalog, &staged.session) {
            true => staged.batch,
            false => {
                let held = Held::of(store, catalog, &staged.session)?;
                match record_batch(&held, &staged.records) {
                    Some((bytes, count)) => {
                        redone = true;
                        Some((put_loose(store, &staged.session, &bytes)?, count))
                    }
                    None => None,
                }
            }
        };
        appended.push(batch.as_ref().map_or(0, |(_, count)| *count));
        batches.extend(batch.map(|(batch, _)| batch));
    }
    if redone {
        store.odb().sync()?;
    }
    catalog.append(store, &lock, &batches)?;
    Ok(appended)
}

/// Store `bytes` as a loose object (durable at the next sync): the batch naming it.
fn put_loose(store: &Store, session: &str, bytes: &[u8]) -> Result<Batch> {
    let object = Digest::of(bytes);
    store
        .odb()
        .put(&object, bytes, &mut Encoder::new(DEFAULT_LEVEL)?)?;
    Ok(Batch {
        session: session.into(),
        object,
        bytes: bytes.len() as u64,
    })
}

/// Index a folded session read from the store: its records not held yet are appended, in a loose
/// object. Returns how many.
pub fn index_folded_session(store: &Store, manifest: &Manifest) -> Result<usize> {
    let records = records_of(&StoreSource { store, manifest })?;
    let mut catalog = Catalog::load(store)?;
    let mut staged = stage(store, &catalog, &manifest.session.id, records)?;
    if let Some((_, bytes)) = staged.take_object() {
        put_loose(store, &manifest.session.id, &bytes)?;
        store.odb().sync()?;
    }
    Ok(list(store, &mut catalog, vec![staged])?[0])
}

/// Merge the lines of the index file `incoming` into `session`'s as a union (see
/// [`union_lines`]); how many lines were appended.
pub fn union_file(store: &Store, session: &str, incoming: &Path) -> Result<usize> {
    let file = File::open(incoming).with_path("open", incoming)?;
    union_lines(store, session, &mut BufReader::new(file), incoming)
}

/// Merge the lines read from `incoming` (named `what` in messages) into `session`'s index as a
/// union: every line it lacks is appended once, in the incoming order, in one batch. A last line
/// without its `\n` is left out (its writer may still be writing it), and so are blank lines.
/// Returns how many lines were appended.
pub fn union_lines(
    store: &Store,
    session: &str,
    incoming: &mut dyn BufRead,
    what: &Path,
) -> Result<usize> {
    check_session_id(session)?;
    let mut catalog = Catalog::load(store)?;
    let lock = catalog::lock(store)?;
    catalog.refresh(store)?;
    let mut held = Held::of(store, &catalog, session)?;
    let mut bytes = Vec::new();
    let mut added = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = incoming
            .read_until(b'\n', &mut line)
            .with_path("read", what)?;
        if n == 0 || !line.ends_with(b"\n") {
            break;
        }
        let body = &line[..n - 1];
        if body.iter().all(u8::is_ascii_whitespace) || !held.lines.insert(Digest::of(body)) {
            continue;
        }
        bytes.extend_from_slice(&line);
        added += 1;
    }
    if added > 0 {
        let batch = put_loose(store, session, &bytes)?;
        store.odb().sync()?;
        catalog.append(store, &lock, &[batch])?;
    }
    Ok(added)
}

/// Move `session`'s legacy index file into the catalog, as its first batch (the index reads the
/// same lines in the same order before and after), then remove it. Run again after a crash, it
/// finds the batch first already and only removes the file.
pub fn move_legacy(store: &Store, session: &str) -> Result<()> {
    let legacy = legacy_path(store, session)?;
    let mut bytes = std::fs::read(&legacy).with_path("read", &legacy)?;
    if !bytes.is_empty() {
        // No one writes legacy files any more: a last line without its `\n` is complete.
        if !bytes.ends_with(b"\n") {
            bytes.push(b'\n');
        }
        let lock = catalog::lock(store)?;
        let mut catalog = Catalog::load(store)?;
        let object = Digest::of(&bytes);
        if catalog.of(session).next().map(|b| b.object) != Some(object) {
            let batch = put_loose(store, session, &bytes)?;
            store.odb().sync()?;
            catalog.put_first(store, &lock, &batch)?;
        }
    }
    crate::store::remove_if_present(&legacy)?;
    crate::store::atomic::sync_parent(&legacy)?;
    // The extension's other files (handoff seeds) may share the folder.
    let _ = std::fs::remove_dir(legacy.parent().expect("under context-fold"));
    Ok(())
}

/// Drop `session`'s index (its catalog lines and its legacy file); whether it had one. Its objects
/// are left to gc.
pub fn forget(store: &Store, session: &str) -> Result<bool> {
    let legacy = legacy_path(store, session)?;
    let had_legacy = legacy.exists();
    let mut catalog = Catalog::load(store)?;
    let lock = catalog::lock(store)?;
    let gone = catalog.forget(store, &lock, session)?;
    crate::store::remove_if_present(&legacy)?;
    Ok(had_legacy || gone > 0)
}

/// The objects the catalog names, in its order: gc's roots.
pub fn objects(catalog: &Catalog) -> impl Iterator<Item = Digest> + '_ {
    catalog.batches().iter().map(|b| b.object)
}
