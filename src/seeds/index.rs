//! The store's seed index: what a session's index holds, and the two ways it grows. Each session's
//! index is its legacy file (stores written before the catalog kept it as
//! `<store>/context-fold/<id>/seed-index.jsonl`; `gc --apply` moves it into the catalog) followed
//! by its batches in the catalog (see `catalog`). It grows by ctxfold's records of a folded session
//! (those not held yet, with seqs after the rest) and by the lines of another index file merged in
//! as a union (the Pi extension's, an older store's), never by rewriting what is there.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog::{self, Batch, Catalog};
use super::extract::{Midway, Resume, extract_from};
use super::facts::FactsCache;
use super::lean::Lean;
use super::record::{FoldIndex, HARNESS, Made};
use super::resume::Checkpoint;
use super::union::{Record, Union};
use crate::digest::{Digest, Fingerprint};
use crate::error::{Error, IoContext, Result};
use crate::files::entry_names;
use crate::ledger::{Ledger, Source, StoreSource};
use crate::odb::{Check, DEFAULT_LEVEL, Encoder};
use crate::store::lock::StoreLock;
use crate::store::manifest::Manifest;
use crate::store::{Store, check_session_id};

/// The seqs ctxfold gives the store's records start above this.
const STORE_SEQ_BASE: u64 = 1_000_000;

const LEGACY_FILE: &str = "seed-index.jsonl";

/// `<store>/context-fold/<id>/seed-index.jsonl`, where stores kept a session's index before the
/// catalog.
pub fn legacy_path(store: &Store, session: &str) -> Result<PathBuf> {
    check_session_id(session)?;
    Ok(store.context_fold_dir().join(session).join(LEGACY_FILE))
}

/// Whether `session` has a seed index at all: batches in `catalog`, or an older store's file.
pub fn has_index(store: &Store, catalog: &Catalog, session: &str) -> Result<bool> {
    Ok(catalog.of(session).next().is_some() || legacy_path(store, session)?.exists())
}

/// The session `spec` names (see [`Store::resolve_session`]), or, by its whole id, one no longer
/// folded whose seed index the store keeps still.
pub fn resolve_indexed(store: &Store, catalog: &Catalog, spec: &str) -> Result<String> {
    store.resolve_session_held(spec, |id| has_index(store, catalog, id))
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

/// What an index is read from: its parts in order, each a reader and a name for messages.
pub trait Parts {
    /// Hand each part to `each`, in order, until it says to stop; false when there is none.
    fn each_part(&self, each: &mut EachPart<'_>) -> Result<bool>;
}

/// What is done with each part of an index: [`ControlFlow::Break`] when no more are wanted.
pub type EachPart<'a> = dyn FnMut(&mut dyn BufRead, &str) -> Result<ControlFlow<()>> + 'a;

/// A session's index in the store: its legacy file if an older store left one, then its batches.
pub struct StoreIndex<'a> {
    store: &'a Store,
    catalog: &'a Catalog,
    session: &'a str,
}

impl<'a> StoreIndex<'a> {
    pub fn new(store: &'a Store, catalog: &'a Catalog, session: &'a str) -> Self {
        Self {
            store,
            catalog,
            session,
        }
    }

    pub fn session(&self) -> &str {
        self.session
    }
}

impl Parts for StoreIndex<'_> {
    fn each_part(&self, each: &mut EachPart<'_>) -> Result<bool> {
        let Self {
            store,
            catalog,
            session,
        } = *self;
        let legacy = legacy_path(store, session)?;
        let mut found = false;
        match File::open(&legacy) {
            Ok(file) => {
                found = true;
                let what = legacy.display().to_string();
                if each(&mut BufReader::new(file), &what)?.is_break() {
                    return Ok(true);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_path("open", &legacy),
        }
        // One buffer for every batch: a long session's are megabytes each, and a fresh one's pages
        // were a tenth of recall's time.
        let mut bytes = Vec::new();
        for batch in catalog.of(session) {
            found = true;
            bytes.clear();
            // Searched, not hashed: a long session's batches are hundreds of megabytes, and hashing
            // them was a third of recall's time.
            (store.odb())
                .read_checked(&batch.object, Some(batch.bytes), &mut bytes, Check::Frame)
                .map_err(|e| e.context(format_args!("the seed index of {session}")))?;
            if each(&mut &bytes[..], &format!("seed batch {}", batch.object))?.is_break() {
                break;
            }
        }
        Ok(found)
    }
}

/// Read the index `parts` holds into `union`; false when it has none.
pub fn read_union<R: Record>(parts: &dyn Parts, union: &mut Union<'_, R>) -> Result<bool> {
    parts.each_part(&mut |reader, what| {
        union.read(reader, what)?;
        Ok(ControlFlow::Continue(()))
    })
}

/// Which lines of an index hold the records that stand under the union's rules (see [`Union`]):
/// what reads its records one at a time, without holding them all (a long session's each re-list
/// every earlier span, and held whole they took gigabytes).
pub struct Standing {
    /// Each standing record's place among the index's lines, with its seq.
    at: HashMap<u64, u64>,
    /// What was skipped, one line each, for stderr.
    pub notes: Vec<String>,
}

impl Standing {
    /// Which records of the index `parts` holds stand; `None` when it has none.
    pub fn of(parts: &dyn Parts) -> Result<Option<Self>> {
        let mut union = Union::<Lean>::default();
        if !read_union(parts, &mut union)? {
            return Ok(None);
        }
        let notes = std::mem::take(&mut union.notes);
        let at = (union.records_at().into_iter())
            .map(|(position, record)| (position, record.seq))
            .collect();
        Ok(Some(Self { at, notes }))
    }

    /// Hand each standing record to `each`, in the order their lines were appended, reading the
    /// index again (see [`each_record_at`]).
    pub fn each(
        &self,
        parts: &dyn Parts,
        each: &mut dyn FnMut(FoldIndex) -> Result<()>,
    ) -> Result<()> {
        each_record_at(parts, &self.at, each)
    }
}

/// Each record of the index `parts` holds whose line is one of `at` (see [`each_line_at`]), read
/// again whole, in order.
pub fn each_record_at(
    parts: &dyn Parts,
    at: &HashMap<u64, u64>,
    each: &mut dyn FnMut(FoldIndex) -> Result<()>,
) -> Result<()> {
    each_line_at(parts, at, &mut |line, seq| match record_at(line, seq) {
        Some(record) => each(record),
        None => Ok(()),
    })
}

/// Each line of the index `parts` holds that is one of `at` (its place among the index's lines as
/// [`Union::records_at`] gives it, with the seq it was read with), in order, with that seq. The
/// index is read up to the last of them (`recall -m 1` over a long session's index read it all).
pub fn each_line_at(
    parts: &dyn Parts,
    at: &HashMap<u64, u64>,
    each: &mut dyn FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    let Some(&last) = at.keys().max() else {
        return Ok(());
    };
    let mut position = 0;
    each_line(parts, &mut |line| {
        position += 1;
        if let Some(&seq) = at.get(&position) {
            each(line, seq)?;
        }
        Ok(match position < last {
            true => ControlFlow::Continue(()),
            false => ControlFlow::Break(()),
        })
    })
}

/// The record `line` holds, if it is the one with `seq`: a line that no longer holds the record
/// read there before (gc put a store's legacy file into its catalog meanwhile) holds none.
pub fn record_at(line: &[u8], seq: u64) -> Option<FoldIndex> {
    // As the union read it: most lines as records, the others through a JSON value.
    let record = serde_json::from_slice::<FoldIndex>(line).or_else(|_| {
        serde_json::from_slice::<Value>(line).and_then(serde_json::from_value::<FoldIndex>)
    });
    record.ok().filter(|r| r.seq == seq)
}

/// What a session's index holds, for a writer about to add to it.
#[derive(Default, Serialize, Deserialize)]
pub struct Held {
    /// The batches it was read from (the legacy file aside).
    basis: Vec<Digest>,
    /// ctxfold's records, by their [`identity`]: a long session's records re-list every earlier
    /// span, and holding them whole would hold its index twice.
    records: HashSet<Fingerprint>,
    last_seq: u64,
}

impl Held {
    /// What `session`'s index holds: `known` when it was made from the very batches the catalog
    /// lists for it now (as a fold that staged them left it), else what its index is read to hold.
    pub fn of_known(
        store: &Store,
        catalog: &Catalog,
        session: &str,
        known: Option<Held>,
    ) -> Result<Self> {
        match known {
            Some(held) if is_current(&held.basis, catalog, session) => Ok(held),
            _ => Self::of(store, catalog, session),
        }
    }

    /// What `session`'s index holds.
    pub fn of(store: &Store, catalog: &Catalog, session: &str) -> Result<Self> {
        let mut held = Held {
            basis: catalog.of(session).map(|b| b.object).collect(),
            ..Held::default()
        };
        let parts = StoreIndex::new(store, catalog, session);
        each_line(&parts, &mut |line| {
            held.line(line);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(held)
    }

    fn line(&mut self, line: &[u8]) {
        // Most lines are records: parsed as one first, they are parsed once.
        let seq = match serde_json::from_slice::<FoldIndex>(line) {
            Ok(mut record) => {
                let seq = record.seq;
                if record.harness == HARNESS {
                    self.records.insert(identity(&mut record));
                }
                seq
            }
            Err(_) => serde_json::from_slice::<Value>(line)
                .ok()
                .and_then(|value| value.get("seq").and_then(Value::as_u64))
                .unwrap_or(0),
        };
        self.last_seq = self.last_seq.max(seq);
    }
}

/// Each line of the index `parts` holds, without its `\n`, in the order [`read_union`] reads
/// them, until `each` fails or says to stop.
pub(super) fn each_line(
    parts: &dyn Parts,
    each: &mut dyn FnMut(&[u8]) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let mut line = Vec::new();
    parts
        .each_part(&mut |reader, what| {
            loop {
                line.clear();
                if reader
                    .read_until(b'\n', &mut line)
                    .context(|| format!("read {what}"))?
                    == 0
                {
                    return Ok(ControlFlow::Continue(()));
                }
                if each(line.strip_suffix(b"\n").unwrap_or(&line))?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        })
        .map(drop)
}

/// Whether `catalog` lists exactly the batches `basis` names for `session`.
fn is_current(basis: &[Digest], catalog: &Catalog, session: &str) -> bool {
    catalog.of(session).map(|b| &b.object).eq(basis.iter())
}

/// A record's content without its seq (which this sets to 0), as the length and xxh3 of its line:
/// what tells a record the index holds from one it lacks. Not sha256: nothing is named by it, and
/// a long session's records run to hundreds of megabytes.
pub(super) fn identity(record: &mut FoldIndex) -> Fingerprint {
    record.seq = 0;
    Fingerprint::of(record.to_line().as_bytes())
}

/// A batch past this many bytes is handed on while its session's records are still coming, and
/// the next one begun: memory then stays bounded however long the session (a long session's
/// records re-list every earlier span, so its index grows with the square of its compactions).
/// Larger than a pack block, so that such a batch is a block of its own, compressed with matches
/// as far back as its start (see `odb::pack::frame`): the more records a batch holds, the more of
/// them are found repeated (a batch's first record has none before it in its frame, and
/// compressing it is most of what the batch costs). Measured on bench/long's 1 GB rollout, 16 MiB
/// against 8: seed batches of 51 MB against 87 MB, and the fold 1.31x the time of its rollouts
/// apart against 1.33-1.41x; 32 MiB against 16 (with a window to match): its batches 38 MiB
/// against 66 (the store 213 against 241), compressing them (`zstd -1 --long`, 887 MB of them)
/// 0.73-0.81 s against 0.91-1.06, the fold's peak memory 242-255 MiB against 215-232. (64 MiB:
/// the store 197 MiB, 0.53 s, 312 MiB.)
pub const BATCH_BYTES: usize = 32 << 20;

/// Where a finished batch goes (a pack, a loose object) before the catalog lists it; it gives
/// back an empty buffer for the next batch (one used before, or a new one).
pub type Put<'a> = dyn FnMut(&Digest, Vec<u8>) -> Result<Vec<u8>> + 'a;

/// A session's records made into batches of the lines its index lacks, as they come: seqs after
/// the highest held and above [`STORE_SEQ_BASE`] (the extension's records, merged in later with
/// their own small seqs, then never share a seq with ours: the union's latest-per-seq rule would
/// void one of the two).
struct Batcher {
    session: String,
    held: Held,
    /// A batch is handed on once it holds this many bytes ([`BATCH_BYTES`]).
    limit: usize,
    seq: u64,
    lines: String,
    count: usize,
    /// The batches handed on, with how many records each holds.
    batches: Vec<(Batch, usize)>,
    /// The identity of the last record given (held or not).
    identity: Option<Fingerprint>,
}

impl Batcher {
    fn new(session: &str, held: Held, limit: usize) -> Self {
        Self {
            session: session.into(),
            limit,
            seq: held.last_seq.max(STORE_SEQ_BASE),
            held,
            lines: String::new(),
            count: 0,
            batches: Vec::new(),
            identity: None,
        }
    }

    /// Batch `record` (unless the index holds it): its line is copied once, into the batch.
    fn record(&mut self, record: Made<'_>, put: &mut Put<'_>) -> Result<()> {
        let identity = record.fingerprint();
        self.identity = Some(identity);
        if self.held.records.contains(&identity) {
            return Ok(());
        }
        self.seq += 1;
        self.make_room(record.line_len());
        record.push_numbered(self.seq, &mut self.lines);
        // What the index holds once the batches are listed.
        self.held.records.insert(identity);
        self.held.last_seq = self.seq;
        self.lines.push('\n');
        self.count += 1;
        if self.lines.len() >= self.limit {
            let bytes = self.seal();
            let (batch, _) = self.batches.last().expect("just sealed");
            let mut next = put(&batch.object, bytes)?;
            next.clear();
            self.lines = String::from_utf8(next).expect("an empty buffer");
        }
        Ok(())
    }

    /// Room for a record of about `bytes` more. A batch that grows large gets room past 32 MiB at
    /// once (about what a batch of [`BATCH_BYTES`] holds; a mapped allocation grows past it by
    /// remapping, not copying): glibc's malloc maps an allocation that large on its own and gives
    /// it back when it is freed, where a smaller one comes from a thread's arena, which keeps it.
    /// A long session's batches, each freed once compressed, were kept so, their sizes never quite
    /// the same: the fold of bench/long's 1 GB rollout peaked at 245-286 MiB, 224-239 so (with
    /// batches of 16 MiB). (Later batches take the room of those compressed before them, given
    /// back by `put`.)
    fn make_room(&mut self, bytes: usize) {
        const LARGE: usize = 4 << 20;
        const MAPPED: usize = (32 << 20) + 1;
        const SEQ_DIGITS: usize = u64::MAX.ilog10() as usize + 1;
        let needed = self.lines.len() + bytes + "\n".len() + SEQ_DIGITS;
        if needed > self.lines.capacity() && needed > LARGE {
            let room = needed.max(MAPPED);
            self.lines.reserve_exact(room - self.lines.len());
        }
    }

    /// The lines so far as a batch, listed last in `batches`: its bytes.
    fn seal(&mut self) -> Vec<u8> {
        let bytes = std::mem::take(&mut self.lines).into_bytes();
        let batch = Batch {
            session: self.session.clone(),
            object: Digest::of(&bytes),
            bytes: bytes.len() as u64,
        };
        self.held.basis.push(batch.object);
        self.batches.push((batch, std::mem::take(&mut self.count)));
        bytes
    }

    /// The batches, the last one's bytes still to be put (`None`: it had no lines), and what the
    /// index holds once they are listed.
    fn finish(mut self) -> (Vec<(Batch, usize)>, Option<Vec<u8>>, Held) {
        let last = (self.count > 0).then(|| self.seal());
        (self.batches, last, self.held)
    }
}

/// The records ctxfold gives a folded session read from `source` (one `compact` record per
/// compaction and a final one over its active branch), as batches of what `held` lacks: each
/// full batch given to `put` as it is made, the last one kept in the [`Staged`] for the caller to
/// store. Going on from where the extraction of an earlier version of `source` ended (its records
/// in `held`: see [`resume`](super::resume)), only the entries appended since are walked.
pub fn stage(
    session: &str,
    held: Held,
    source: &dyn Source,
    facts: &FactsCache,
    resume: Resume,
    put: &mut Put<'_>,
) -> Result<Staged> {
    stage_in(batch_bytes(), session, held, source, facts, resume, put)
}

/// [`BATCH_BYTES`], which tests lower to see several batches (see [`crate::test_sizes`]).
fn batch_bytes() -> usize {
    crate::test_sizes::size("CTXFOLD_TEST_BATCH_BYTES", BATCH_BYTES as u64) as usize
}

/// [`stage`] in batches of `limit` bytes.
fn stage_in(
    limit: usize,
    session: &str,
    held: Held,
    source: &dyn Source,
    facts: &FactsCache,
    resume: Resume,
    put: &mut Put<'_>,
) -> Result<Staged> {
    let basis = held.basis.clone();
    // The entries an extraction went on from were scanned then.
    let scanned = resume.from.as_ref().map(|from| from.scanned().clone());
    let ledger = Ledger::scan_on(source, scanned)?;
    let mut batcher = Batcher::new(session, held, limit);
    let midway = extract_from(&ledger, facts, resume, &mut |r| batcher.record(r, put))?;
    let identity = batcher.identity;
    let (batches, last, held) = batcher.finish();
    Ok(Staged {
        session: session.into(),
        basis,
        batches,
        last,
        end: identity
            .zip(midway)
            .map(|(last, midway)| (last, midway, held)),
    })
}

/// A session's new records as batches made against its index as it was ([`stage`]): their bytes
/// go into a pack (or loose objects) before [`list`] names them in the catalog.
pub struct Staged {
    session: String,
    /// The batches its index was read from.
    basis: Vec<Digest>,
    batches: Vec<(Batch, usize)>,
    /// The last batch's bytes, not stored yet.
    last: Option<Vec<u8>>,
    /// Where the extraction ended, after which record, with what the index then holds, for the
    /// next to go on from.
    end: Option<(Fingerprint, Midway, Held)>,
}

impl Staged {
    /// The last batch's object to store, once: its name and bytes (`None`: nothing left).
    pub fn take_object(&mut self) -> Option<(Digest, Vec<u8>)> {
        let bytes = self.last.take()?;
        Some((self.batches.last()?.0.object, bytes))
    }

    /// Where the extraction ended (see [`stage`]) as the checkpoint of `source`, once.
    pub fn take_end(&mut self, source: crate::store::manifest::Source) -> Option<Checkpoint> {
        let (last, midway, held) = self.end.take()?;
        Some(Checkpoint::new(source, last, midway, held))
    }
}

/// Name the staged batches in the catalog, their objects durable already; how many records each
/// session's appended. A session whose index changed since it was staged (another process appended
/// to it) has its batches made again, from their objects, against what it holds now, stored loose.
pub fn list(store: &Store, catalog: &mut Catalog, staged: Vec<Staged>) -> Result<Vec<usize>> {
    if staged.iter().all(|s| s.batches.is_empty()) {
        return Ok(vec![0; staged.len()]);
    }
    let lock = catalog::lock(store)?;
    catalog.refresh(store)?;
    let mut listed = Vec::new();
    let mut appended = Vec::new();
    let mut redone = false;
    for staged in staged {
        let batches = match is_current(&staged.basis, catalog, &staged.session) {
            true => staged.batches,
            false => {
                redone = true;
                restage(store, catalog, &staged)?
            }
        };
        appended.push(batches.iter().map(|(_, count)| count).sum());
        listed.extend(batches.into_iter().map(|(batch, _)| batch));
    }
    if redone {
        store.odb().sync()?;
    }
    catalog.append(store, &lock, &listed)?;
    Ok(appended)
}

/// `staged`'s records read back from their batches' objects, made into batches again against
/// what its index holds now, stored loose.
fn restage(store: &Store, catalog: &Catalog, staged: &Staged) -> Result<Vec<(Batch, usize)>> {
    let held = Held::of(store, catalog, &staged.session)?;
    let mut batcher = Batcher::new(&staged.session, held, BATCH_BYTES);
    let mut put = |_: &Digest, bytes: Vec<u8>| {
        put_loose(store, &staged.session, &bytes)?;
        Ok(bytes)
    };
    for (batch, _) in &staged.batches {
        let bytes = store.odb().read_to_vec(&batch.object, Some(batch.bytes))?;
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let record: FoldIndex = serde_json::from_slice(line)
                .map_err(|e| Error::object_corrupt(batch.object, e.to_string()))?;
            batcher.record(Made::of(record), &mut put)?;
        }
    }
    let (batches, last, _) = batcher.finish();
    if let (Some(bytes), Some((batch, _))) = (last, batches.last()) {
        put(&batch.object, bytes)?;
    }
    Ok(batches)
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

/// Index a folded session read from the store: its records not held yet are appended, in loose
/// objects. Returns how many.
pub fn index_folded_session(
    store: &Store,
    manifest: &Manifest,
    facts: &FactsCache,
) -> Result<usize> {
    let session = &manifest.session.id;
    let mut catalog = Catalog::load(store)?;
    let held = Held::of(store, &catalog, session)?;
    let mut put = |_: &Digest, bytes: Vec<u8>| {
        put_loose(store, session, &bytes)?;
        Ok(bytes)
    };
    let source = StoreSource { store, manifest };
    let mut staged = stage(session, held, &source, facts, Resume::default(), &mut put)?;
    if let Some((digest, bytes)) = staged.take_object() {
        put(&digest, bytes)?;
    }
    if !staged.batches.is_empty() {
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
    let mut unions = Unions::begin(store)?;
    let added = unions.add(0, session, incoming, what)?;
    unions.finish()?;
    Ok(added)
}

/// Many [`union_lines`] as one: the catalog read and locked once, every session's new batch
/// made durable behind one sync and listed in one append (a clone of thousands of sessions
/// otherwise reads the whole catalog and syncs twice for each).
pub struct Unions<'a> {
    store: &'a Store,
    catalog: Catalog,
    lock: StoreLock,
    /// The lines the session being added to holds, by their sha256.
    held: Option<(String, HashSet<Digest>)>,
    /// Sessions added to so far: one met again is read from the catalog again, after the
    /// batches still pending are listed in it.
    seen: HashSet<String>,
    /// New batches not listed yet, each with its rank.
    pending: Vec<(usize, Batch)>,
}

impl<'a> Unions<'a> {
    pub fn begin(store: &'a Store) -> Result<Self> {
        let mut catalog = Catalog::load(store)?;
        let lock = catalog::lock(store)?;
        catalog.refresh(store)?;
        Ok(Self {
            store,
            catalog,
            lock,
            held: None,
            seen: HashSet::new(),
            pending: Vec::new(),
        })
    }

    /// Union `incoming` into `session`'s index (see [`union_lines`]); how many lines it adds.
    /// They are durable and listed once [`Unions::finish`] returns, in the catalog in the order
    /// of their `rank` among the batches listed together (a merge reads the remote's batches in
    /// the order they lie in the packs, and lists them in its catalog's order).
    pub fn add(
        &mut self,
        rank: usize,
        session: &str,
        incoming: &mut dyn BufRead,
        what: &Path,
    ) -> Result<usize> {
        check_session_id(session)?;
        if self.held.as_ref().is_none_or(|(held, _)| held != session) {
            if self.seen.contains(session) {
                self.list_pending()?;
            }
            let mut held = HashSet::new();
            let parts = StoreIndex::new(self.store, &self.catalog, session);
            each_line(&parts, &mut |line| {
                held.insert(Digest::of(line));
                Ok(ControlFlow::Continue(()))
            })?;
            self.seen.insert(session.to_string());
            self.held = Some((session.to_string(), held));
        }
        let (_, held) = self.held.as_mut().expect("just set");
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
            if body.iter().all(u8::is_ascii_whitespace) || !held.insert(Digest::of(body)) {
                continue;
            }
            bytes.extend_from_slice(&line);
            added += 1;
        }
        if added > 0 {
            self.pending
                .push((rank, put_loose(self.store, session, &bytes)?));
        }
        Ok(added)
    }

    /// Make the batches added so far durable and list them.
    fn list_pending(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            self.store.odb().sync()?;
            self.pending.sort_by_key(|(rank, _)| *rank);
            let batches: Vec<Batch> = self.pending.drain(..).map(|(_, b)| b).collect();
            self.catalog.append(self.store, &self.lock, &batches)?;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        self.list_pending()
    }
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
    crate::files::remove_if_present(&legacy)?;
    crate::files::atomic::sync_parent(&legacy)?;
    // The extension's other files (handoff seeds) may share the folder.
    let _ = std::fs::remove_dir(legacy.parent().expect("under context-fold"));
    Ok(())
}

/// Drop `session`'s index (its catalog lines, its legacy file, its extraction's checkpoint);
/// whether it had one. Its objects are left to gc.
pub fn forget(store: &Store, session: &str) -> Result<bool> {
    let legacy = legacy_path(store, session)?;
    let had_legacy = legacy.exists();
    let mut catalog = Catalog::load(store)?;
    let lock = catalog::lock(store)?;
    let gone = catalog.forget(store, &lock, session)?;
    crate::files::remove_if_present(&legacy)?;
    super::resume::forget(store, session)?;
    Ok(had_legacy || gone > 0)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::ledger::FileSource;

    const SESSION: &str = "01a22ec3-195e-7d02-bb4d-4f6fa0817a3c";

    /// Parts in memory that count how many were read.
    struct Counted {
        parts: [&'static str; 3],
        read: Cell<usize>,
    }

    impl Parts for Counted {
        fn each_part(&self, each: &mut EachPart<'_>) -> Result<bool> {
            for part in self.parts {
                self.read.set(self.read.get() + 1);
                if each(&mut part.as_bytes(), "part")?.is_break() {
                    break;
                }
            }
            Ok(true)
        }
    }

    #[test]
    fn the_lines_at_places_are_read_up_to_the_last_of_them() {
        for (at, lines, read) in [
            (vec![(2, 7)], vec![("b", 7)], 1),
            (vec![(4, 1), (1, 2)], vec![("a", 2), ("c", 1)], 2),
            (vec![(5, 3)], vec![("d", 3)], 3),
            (vec![(9, 3)], vec![], 3),
            (vec![], vec![], 0),
        ] {
            let parts = Counted {
                parts: ["a\nb\n", "\nc\n", "d"],
                read: Cell::new(0),
            };
            let mut got = Vec::new();
            each_line_at(&parts, &at.into_iter().collect(), &mut |line, seq| {
                got.push((String::from_utf8(line.to_vec()).unwrap(), seq));
                Ok(())
            })
            .unwrap();
            let got: Vec<(&str, u64)> = got.iter().map(|(l, s)| (l.as_str(), *s)).collect();
            assert_eq!(got, lines);
            assert_eq!(parts.read.get(), read, "{lines:?}");
        }
    }

    /// A committed fixture with two records (a compaction's and the final one).
    fn source() -> FileSource {
        FileSource(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "tests/fixtures/codex/rollout-2026-11-30T23-21-07-{SESSION}.jsonl"
        )))
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path()).unwrap();
        (dir, store)
    }

    /// Stage the fixture's records against `store` in batches of `limit` bytes, stored loose:
    /// the staged session and the bytes of each batch in order.
    fn stage_loose(store: &Store, limit: usize) -> (Staged, Vec<Vec<u8>>) {
        let catalog = Catalog::load(store).unwrap();
        let held = Held::of(store, &catalog, SESSION).unwrap();
        let mut stored = Vec::new();
        let mut put = |digest: &Digest, bytes: Vec<u8>| {
            assert_eq!(put_loose(store, SESSION, &bytes)?.object, *digest);
            stored.push(bytes);
            Ok(Vec::new())
        };
        let mut staged = stage_in(
            limit,
            SESSION,
            held,
            &source(),
            &FactsCache::default(),
            Resume::default(),
            &mut put,
        )
        .unwrap();
        if let Some((digest, bytes)) = staged.take_object() {
            put(&digest, bytes).unwrap();
        }
        assert!(
            staged.take_object().is_none(),
            "the last batch is taken once"
        );
        (staged, stored)
    }

    #[test]
    fn a_batch_that_cannot_be_put_fails_staging_with_its_own_error() {
        let (_dir, store) = store();
        let catalog = Catalog::load(&store).unwrap();
        let held = Held::of(&store, &catalog, SESSION).unwrap();
        let mut put = |_: &Digest, _: Vec<u8>| Err(Error::corrupt("the disk is full"));
        let staged = stage_in(
            1,
            SESSION,
            held,
            &source(),
            &FactsCache::default(),
            Resume::default(),
            &mut put,
        );
        let e = staged.err().expect("staging fails");
        assert_eq!(e.to_string(), "the disk is full");
    }

    #[test]
    fn a_batch_growing_large_gets_room_past_32_mib_at_once() {
        let made = |n: usize, bytes: usize| {
            let head = format!(
                r#"{{"v":2,"kind":"fold-index","harness":"ctxfold","session":"{SESSION}","seq":0,"n":{n},"pad":"{}","userMessages":["#,
                "x".repeat(bytes)
            );
            Made::spliced(0, head, "", "")
        };
        let mut put_batches = Vec::new();
        let mut put = |_: &Digest, bytes: Vec<u8>| {
            put_batches.push(bytes);
            Ok(Vec::new())
        };
        let mut ignore = |_: &Digest, _: Vec<u8>| Ok(Vec::new());
        let mut batcher = Batcher::new(SESSION, Held::default(), 16 << 20);
        let mut lines = String::new();
        for n in 0..7 {
            let record = made(n, 3 << 20);
            record.push_numbered(batcher.seq + 1, &mut lines);
            lines.push('\n');
            batcher.record(record, &mut put).unwrap();
            match n {
                0 => assert!(batcher.lines.capacity() < 32 << 20),
                1..5 => assert!(batcher.lines.capacity() > 32 << 20, "record {n}"),
                _ => assert!(
                    batcher.lines.capacity() < 32 << 20,
                    "record {n}, a new batch"
                ),
            }
        }
        let (_, last, _) = batcher.finish();
        put_batches.push(last.unwrap());
        assert_eq!(put_batches.len(), 2, "sealed past 16 MiB");
        assert_eq!(put_batches.concat(), lines.as_bytes());
        // Small batches grow as they need.
        let mut batcher = Batcher::new(SESSION, Held::default(), 16 << 20);
        for n in 0..100 {
            batcher.record(made(n, 1000), &mut ignore).unwrap();
        }
        assert!(batcher.lines.capacity() < 1 << 20);
        // A buffer given back is the next batch's, emptied.
        let mut give_back = |_: &Digest, bytes: Vec<u8>| Ok(bytes);
        let mut batcher = Batcher::new(SESSION, Held::default(), 1);
        batcher.record(made(0, 1 << 20), &mut give_back).unwrap();
        assert!(batcher.lines.is_empty());
        assert!(batcher.lines.capacity() > 1 << 20);
    }

    fn index(store: &Store) -> Vec<u8> {
        let catalog = Catalog::load(store).unwrap();
        let mut bytes = Vec::new();
        let parts = StoreIndex::new(store, &catalog, SESSION);
        parts
            .each_part(&mut |reader, _| {
                reader.read_to_end(&mut bytes).unwrap();
                Ok(ControlFlow::Continue(()))
            })
            .unwrap();
        bytes
    }

    #[test]
    fn many_unions_list_each_sessions_new_lines_once_in_one_append() {
        let (_dir, store) = store();
        const OTHER: &str = "other-session";
        let mut unions = Unions::begin(&store).unwrap();
        let x = Path::new("x");
        assert_eq!(unions.add(1, SESSION, &mut &b"a\nb\n"[..], x).unwrap(), 2);
        assert_eq!(unions.add(0, OTHER, &mut &b"a\n"[..], x).unwrap(), 1);
        assert!(
            Catalog::load(&store).unwrap().of(SESSION).next().is_none(),
            "not listed yet"
        );
        // Met again: what it was given before counts as held.
        assert_eq!(
            unions.add(2, SESSION, &mut &b"b\nc\n\nd"[..], x).unwrap(),
            1
        );
        assert!(unions.add(3, "../bad", &mut &b"a\n"[..], x).is_err());
        unions.finish().unwrap();
        assert_eq!(index(&store), b"a\nb\nc\n");
        let catalog = Catalog::load(&store).unwrap();
        // Listed by rank among those listed together: meeting the session again listed the two
        // batches before, the lower rank first.
        let sessions: Vec<&str> = (catalog.batches().iter())
            .map(|b| b.session.as_str())
            .collect();
        assert_eq!(sessions, [OTHER, SESSION, SESSION]);
        assert_eq!(catalog.of(SESSION).count(), 2);
        assert_eq!(catalog.of(OTHER).count(), 1);
        assert_eq!(
            union_lines(&store, SESSION, &mut &b"c\na\n"[..], x).unwrap(),
            0
        );
    }

    #[test]
    fn records_past_the_batch_limit_are_handed_on_in_batches_that_read_as_one() {
        let (_whole_dir, whole) = store();
        let (staged, one) = stage_loose(&whole, usize::MAX);
        assert_eq!(one.len(), 1);
        assert_eq!(
            list(&whole, &mut Catalog::load(&whole).unwrap(), vec![staged]).unwrap(),
            [2]
        );

        let (_dir, store) = store();
        let (staged, batches) = stage_loose(&store, 1);
        assert_eq!(batches.len(), 2, "one record per batch");
        assert_eq!(batches.concat(), one[0]);
        assert_eq!(
            list(&store, &mut Catalog::load(&store).unwrap(), vec![staged]).unwrap(),
            [2]
        );
        assert_eq!(Catalog::load(&store).unwrap().of(SESSION).count(), 2);
        assert_eq!(index(&store), index(&whole));

        // Staged again, nothing is new.
        let (staged, batches) = stage_loose(&store, 1);
        assert!(batches.is_empty());
        assert_eq!(
            list(&store, &mut Catalog::load(&store).unwrap(), vec![staged]).unwrap(),
            [0]
        );
        assert_eq!(index(&store), index(&whole));
    }

    #[test]
    fn batches_staged_against_an_index_that_grew_meanwhile_are_made_again_against_it() {
        let (_dir, store) = store();
        let (staged, batches) = stage_loose(&store, 1);
        let first = String::from_utf8(batches[0].clone()).unwrap();
        // Meanwhile another writer appends the first record (with another seq) and a line of
        // its own, no record but with a higher seq.
        let theirs = first.replace("\"seq\":1000001", "\"seq\":1000007");
        assert_ne!(theirs, first);
        let mut lines = format!("{theirs}{{\"kind\":\"note\",\"seq\":1000010}}\n");
        assert_eq!(
            union_lines(&store, SESSION, &mut lines.as_bytes(), Path::new("x")).unwrap(),
            2
        );
        let appended = list(&store, &mut Catalog::load(&store).unwrap(), vec![staged]).unwrap();
        assert_eq!(
            appended,
            [1],
            "the record held already is not appended again"
        );
        let index = String::from_utf8(index(&store)).unwrap();
        let second = String::from_utf8(batches[1].clone()).unwrap();
        lines.push_str(&second.replace("\"seq\":1000002", "\"seq\":1000011"));
        assert_eq!(index, lines);
    }
}
