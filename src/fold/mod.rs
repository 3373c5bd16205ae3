//! Folding found sessions into the store, with every rule of fold-v1's "Mutation Safety": a dry
//! run unless applied, nothing committed when the source changed while it was read, and a source
//! removed only after its manifest is committed and a reconstruction from the store verified (an
//! active one only with `allow_active`, or once unchanged for `inactive_after`).
//!
//! A session folded before is compared with its manifest first (see `compare`): up to date, grown
//! by an append (folded again, the normal path), or changed some other way (refused unless
//! `overwrite`). Either way the manifest replaced is kept first as a generation
//! (`store::generations`), so no fold loses a version.
//!
//! A session is read once: segmenting it also hashes it, and hashing the parts as they are written
//! is what its manifest is checked against (the contract's "in-memory reconstruction"). A session
//! that grew since it was folded (its folded bytes are a prefix of the file) is segmented only from
//! its last folded part on, and hashed only from there when the fold before kept its midstate
//! ([`midstates`]; the bytes before are checked by their xxh3). One whose stamp (size, mtime,
//! ctime, inode) is the one recorded when it was last found up to date is not read at all
//! ([`stamps`]). This module decides and prepares one session; [`run`] folds many, committing them
//! in groups.

pub mod compare;
pub mod merges;
pub mod midstates;
pub mod run;
pub mod stamp;
pub mod stamps;

use std::collections::HashSet;
use std::io::BufRead;
use std::sync::Mutex;

use serde::Serialize;

use crate::digest::{
    Digest, Fingerprint, Fingerprinter, FingerprintingReader, HashingReader, Midstate, SoFar,
};
use crate::error::{Error, Result, Status};
use crate::ledger::Kept;
use crate::odb::Encoder;
use crate::segment::{Settings, segment};
use crate::sources::Found;
use crate::store::Store;
#[cfg(doc)]
use crate::store::commit::Replace;
use crate::store::generations::Reason;
use crate::store::manifest::{KIND, Manifest, Source, VERSION};
use crate::store::writer::{Mode, PartWriter, WriteStats};
use compare::{State, compare_keeping};
use midstates::Midstates;
use stamp::Stamp;
use stamps::Stamps;

#[derive(Debug)]
pub struct Options {
    pub apply: bool,
    pub overwrite: bool,
    pub remove_source: bool,
    pub allow_active: bool,
    /// A source unchanged for this long counts as inactive: `--remove-source` may remove it.
    pub inactive_after: Option<std::time::Duration>,
    pub settings: Settings,
    pub level: i32,
    /// The store's current zstd dictionary, which `settings.dictionary` names.
    pub dictionary: Option<crate::odb::dictionaries::Named>,
    /// Extract the seed index of each session folded (`--apply` without `--no-seeds`).
    pub seeds: bool,
    /// The agents' session trees (`CODEX_HOME/sessions`, …): a source removed takes the folders
    /// it emptied with it, up to its tree and never the tree itself.
    pub session_trees: Vec<std::path::PathBuf>,
}

/// What happened to a session (or, in a dry run, would).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Committed (`--apply`) or would be (a dry run).
    Fold,
    UpToDate,
    /// The session changed other than by an append since it was folded: `--overwrite` folds it.
    NeedsOverwrite,
    /// The source changed while it was read: nothing committed.
    Unsettled,
    Failed,
}

/// What happened to the source file under `--remove-source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Removal {
    Kept,
    Removed,
    WouldRemove,
    /// Active (not archived, and changed within `--older-than`), and `--allow-active` was not
    /// given.
    KeptActive,
    /// Gone before this run could remove it: another fold removed it (it is in the store).
    Gone,
    /// Another process holds it open for writing (an agent still appending to it): were it
    /// removed, what the agent writes next would go to a file no name reaches.
    KeptOpen,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub id: String,
    pub path: String,
    /// The source compared with the store before folding (`None`: not known, it failed first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    pub action: Action,
    /// Decompressed size of the source (0 when it could not be read).
    pub source_bytes: u64,
    #[serde(flatten)]
    pub stats: WriteStats,
    pub source: Removal,
    /// Seed index records appended for the session (`None`: not indexed in this run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed_records: Option<usize>,
    /// The folded session's seed index could not be extracted (the fold itself stands).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub seeds_failed: bool,
    /// The generation the previous version was kept as (`--apply`), relative to the store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// Why it failed, changed or was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// How this session makes the run end (see the exit status table).
    #[serde(skip)]
    pub status: Status,
    /// A write for it found the store's disk full: the run starts no other session.
    #[serde(skip)]
    pub out_of_space: bool,
}

impl Report {
    fn new(found: &Found) -> Self {
        Self {
            id: found.session.id.clone(),
            path: found.path.display().to_string(),
            state: None,
            action: Action::Failed,
            source_bytes: 0,
            stats: WriteStats::default(),
            source: Removal::Kept,
            seed_records: None,
            seeds_failed: false,
            kept: None,
            note: None,
            status: Status::Success,
            out_of_space: false,
        }
    }

    /// Record a failure: the action, the note and the status its error decides.
    pub fn fail(&mut self, e: &Error) {
        self.action = Action::Failed;
        self.note = Some(e.to_string());
        self.status = self.status.worst(e.status());
        self.out_of_space |= e.is_out_of_space();
    }
}

/// A session after its read: what to commit, if anything, and what is needed to finish it.
pub struct Prepared {
    pub report: Report,
    /// The manifest to commit (`Action::Fold` under `--apply`).
    pub manifest: Option<Manifest>,
    /// The manifest the store holds and the source matches (`Action::UpToDate`).
    pub current: Option<Manifest>,
    /// The source's stamp before it was read.
    pub stamp: Option<Stamp>,
    /// The bytes read, which a second pass over the source (the seed index's) must find again.
    pub read: Option<Fingerprint>,
    /// The objects its fold adds to the store.
    pub created: Vec<Digest>,
    /// The manifest this fold replaces (`None`: there is none), as it read it: why it is kept as
    /// a generation, and its source, that of the one manifest its commit may replace (see
    /// [`Replace::Only`]).
    pub replaces: Option<(Reason, Source)>,
    /// The source as folded before, which the bytes read begin with (a session grown since).
    pub grown_from: Option<Source>,
    /// What hashed the bytes before the manifest's last part (for the next fold of it grown).
    pub before_last: Option<Midstate>,
    /// The fingerprint of the bytes read before the ones segmented (a session grown since it was
    /// folded): the seed index's pass need not read them again.
    pub known: Option<Fingerprinter>,
    /// The bytes segmented, when they are few enough to keep for the seed passes ([`KEEP_BYTES`]).
    pub kept: Option<Kept>,
}

/// The bytes a fold reads of a session are kept in memory for its seed passes, which read them
/// twice more, up to this many: one read of the file, not three, for most sessions.
pub const KEEP_BYTES: u64 = 16 << 20;

/// [`KEEP_BYTES`], which tests change (see [`crate::test_sizes`]).
fn keep_bytes() -> u64 {
    crate::test_sizes::size("CTXFOLD_TEST_KEEP_BYTES", KEEP_BYTES)
}

/// What earlier folds left to spare this one reading sources: the stamp cache and the midstates.
pub struct Caches {
    pub stamps: Stamps,
    pub midstates: Midstates,
}

impl Caches {
    pub fn load(store: &Store) -> Self {
        Self {
            stamps: Stamps::load(store),
            midstates: Midstates::load(store),
        }
    }

    pub fn save(&self, store: &Store) -> Result<()> {
        self.stamps.save(store)?;
        self.midstates.save(store)
    }
}

/// Where a worker puts new objects: a pack being written, or (in a dry run) an encoder to measure
/// them with. `claimed` holds what the run's other workers hold already.
pub enum Sink<'a> {
    Pack(&'a mut crate::odb::pack::PackWriter),
    Measure(&'a mut Encoder),
}

/// Read one session and prepare its fold: decide whether it is new, up to date, grown or changed,
/// and segment what must be stored into `sink`. Never returns an error: failures are in the
/// report, so that one bad file does not stop the others.
pub fn prepare(
    store: &Store,
    found: &Found,
    options: &Options,
    caches: &Caches,
    sink: Sink<'_>,
    claimed: &Mutex<HashSet<Digest>>,
) -> Prepared {
    let mut prepared = Prepared {
        report: Report::new(found),
        manifest: None,
        current: None,
        stamp: None,
        read: None,
        created: Vec::new(),
        replaces: None,
        grown_from: None,
        before_last: None,
        known: None,
        kept: None,
    };
    if let Err(e) = prepare_into(store, found, options, caches, sink, claimed, &mut prepared) {
        prepared.report.fail(&e);
        prepared.manifest = None;
    }
    prepared
}

fn prepare_into(
    store: &Store,
    found: &Found,
    options: &Options,
    caches: &Caches,
    sink: Sink<'_>,
    claimed: &Mutex<HashSet<Digest>>,
    prepared: &mut Prepared,
) -> Result<()> {
    let path = &found.path;
    let id = &found.session.id;
    let Some(before) = Stamp::of_present(path)? else {
        if folded_already(store, id, None, &mut prepared.report)? {
            return Ok(());
        }
        return Err(Error::io("stat", path, rustix::io::Errno::NOENT.into()));
    };
    prepared.stamp = Some(before);
    let report = &mut prepared.report;
    report.state = Some(State::New);
    let mut grown_from = None;
    let mut title_before = None;
    if let Some(manifest) = existing_manifest(store, id, options.overwrite)? {
        // A grown source is segmented again from its folded last part on (see `segment_source`).
        let reused = (manifest.settings.same_segmentation(&options.settings))
            .then(|| reused_bytes(&manifest));
        let stamps = &caches.stamps;
        let (state, read_before) = if stamps.knows(path, &before, &manifest.source) {
            (State::UpToDate, None)
        } else {
            let midstate = caches.midstates.of(path, &manifest.source);
            compare_keeping(path, &before, &manifest.source, reused, midstate.as_ref())?
        };
        report.state = Some(state);
        match state {
            State::UpToDate => {
                report.action = Action::UpToDate;
                report.source_bytes = manifest.source.bytes;
                stamps.record(path, &before, &manifest.source);
                prepared.current = Some(manifest);
                return Ok(());
            }
            State::Grown => {
                title_before = Some((manifest.session.title.clone(), manifest.source.bytes));
                prepared.replaces = Some((Reason::Grown, manifest.source));
                prepared.grown_from = Some(manifest.source);
                if reused.is_some() {
                    grown_from = Some((manifest, read_before));
                }
            }
            _ if options.overwrite => {
                prepared.replaces = Some((Reason::Changed, manifest.source));
            }
            _ => {
                report.action = Action::NeedsOverwrite;
                report.source_bytes = before.size;
                report.note = Some(format!(
                    "it changed other than by an append since it was folded: --overwrite folds it, \
                     keeping the folded version as {id}@1"
                ));
                report.status = Status::Refused;
                return Ok(());
            }
        }
    }
    let mut manifest = segment_source(store, found, options, sink, claimed, prepared, grown_from)?;
    let grown = (title_before.as_ref()).map(|(title, bytes)| (title.as_deref(), *bytes));
    manifest.session.title = found.title(grown);
    // The mtime before the read, which the check below finds unchanged after it.
    manifest.session.mtime = Some(crate::time::nanos(before.modified()));
    test_hook_after_read(path);
    let report = &mut prepared.report;
    let change = match Stamp::of_present(path)? {
        Some(after) => before.change(&after),
        None if folded_already(store, id, Some(&manifest.source), report)? => return Ok(()),
        None => Some("it was removed"),
    };
    if let Some(change) = change {
        report.action = Action::Unsettled;
        report.note = Some(format!(
            "the source changed while it was read ({change}); nothing committed"
        ));
        report.status = Status::Refused;
        return Ok(());
    }
    report.action = Action::Fold;
    if prepared.replaces.is_some() && !options.apply {
        report.note = Some(format!("would keep the folded version as {id}@1"));
    }
    prepared.manifest = Some(manifest);
    Ok(())
}

/// When the source is gone, another fold removed it once the session was safe in the store:
/// report it as folded already if the store holds it (with `source`'s bytes, when given).
fn folded_already(
    store: &Store,
    id: &str,
    source: Option<&Source>,
    report: &mut Report,
) -> Result<bool> {
    let Some(manifest) = existing_manifest(store, id, false)? else {
        return Ok(false);
    };
    if source.is_some_and(|s| *s != manifest.source) {
        return Ok(false);
    }
    report.action = Action::UpToDate;
    report.state.get_or_insert(State::UpToDate);
    report.source = Removal::Gone;
    report.source_bytes = manifest.source.bytes;
    report.note = Some("folded already; the source was removed meanwhile (by another fold)".into());
    Ok(true)
}

/// The session's manifest if there is one. One that cannot be read is an error, unless it is
/// about to be replaced (`overwrite`).
fn existing_manifest(store: &Store, id: &str, overwrite: bool) -> Result<Option<Manifest>> {
    if !store.has_manifest(id) {
        return Ok(None);
    }
    match store.load_manifest(id) {
        Ok(manifest) => Ok(Some(manifest)),
        Err(_) if overwrite => Ok(None),
        Err(e) => Err(e.context("the existing manifest cannot be read (--overwrite replaces it)")),
    }
}

/// The bytes of a folded session before its last part (which ended at its end of file, not at a
/// content-defined cut): what a fold of it grown is not segmented again.
fn reused_bytes(manifest: &Manifest) -> u64 {
    let parts = &manifest.parts;
    let before_last = &parts[..parts.len().saturating_sub(1)];
    before_last.iter().map(|p| p.object.raw_bytes).sum()
}

/// Segment the source into `sink` and build its manifest. With `grown_from`, the source's first
/// bytes are the parts of that manifest but its last ([`reused_bytes`]): those are hashed, not
/// segmented again; with what was hashed of them already, read from where they end.
fn segment_source(
    store: &Store,
    found: &Found,
    options: &Options,
    sink: Sink<'_>,
    claimed: &Mutex<HashSet<Digest>>,
    prepared: &mut Prepared,
    grown_from: Option<(Manifest, Option<SoFar>)>,
) -> Result<Manifest> {
    let report = &mut prepared.report;
    let (mut parts, reused, folded, read_before) = match grown_from {
        Some((mut old, read_before)) => {
            let reused = reused_bytes(&old);
            old.parts.pop();
            (old.parts, reused, Some(old.source), read_before)
        }
        None => (Vec::new(), 0, None, None),
    };
    let odb = store.odb();
    // A fold's seed passes follow it (see `Run::extract_seeds`).
    let seeds_follow = matches!(sink, Sink::Pack(_)) && options.seeds && found.agent.is_some();
    let mode = match sink {
        Sink::Pack(writer) => Mode::Pack(odb, writer, claimed),
        Sink::Measure(encoder) => Mode::DryRun(odb, encoder, claimed),
    };
    let rest = match read_before {
        Some(_) => crate::input::open_at(&found.path, reused)?,
        None => None,
    };
    let (mut rest, read_before) = match (rest, read_before) {
        (Some(rest), Some(read_before)) => (rest, read_before),
        _ => {
            let mark = folded.map(|source| source.bytes);
            let mut input = HashingReader::new(crate::input::open(&found.path)?, mark);
            if !crate::input::skip(&mut input, reused, &report.path)? {
                return Err(Error::session_changed(
                    &report.path,
                    "it is shorter than its folded part",
                ));
            }
            input.into_parts()
        }
    };
    // What is segmented is hashed once, as the parts are written, from the reused prefix's bytes
    // as read on; the reader only fingerprints it, which tells the two are the same bytes.
    let known = read_before.hasher().fingerprinter();
    prepared.known = Some(known.clone()).filter(|known| known.bytes() > 0);
    let from = known.bytes();
    let whole = match seeds_follow {
        true => {
            let size = (prepared.stamp.as_ref())
                .filter(|_| !crate::input::is_zstd(&found.path))
                .map(|stamp| stamp.size.saturating_sub(from));
            crate::input::read_small(&mut rest, keep_bytes(), size, &report.path)?
        }
        false => None,
    };
    let rest: Box<dyn BufRead + Send + '_> = match &whole {
        Some(bytes) => Box::new(&bytes[..]),
        None => rest,
    };
    let mut input = FingerprintingReader::going_on(rest, known);
    let mut writer = PartWriter::new(mode, |part| {
        parts.push(part);
        Ok(())
    })
    .after(read_before);
    let read = segment(&options.settings, &mut input, &report.path, &mut writer);
    let written = writer.finish();
    read?;
    let written = written?;
    report.stats = written.stats;
    prepared.created = written.created;
    prepared.before_last = written.before_last;
    let read = input.fingerprint();
    drop(input);
    prepared.kept = whole.map(|bytes| Kept::new(from, bytes));
    check_parts(read, written.fingerprint, &report.path)?;
    report.source_bytes = read.bytes;
    prepared.read = Some(read);
    if let Some(folded) = folded
        && written.at_mark != Some(folded.sha256)
    {
        return Err(Error::session_changed(
            &report.path,
            "its folded bytes are no longer its first bytes",
        ));
    }
    let mut settings = options.settings.clone();
    settings.dictionary = options.dictionary.as_ref().map(|(digest, _)| *digest);
    Ok(Manifest {
        version: VERSION,
        kind: KIND.into(),
        session: found.session.clone(),
        source: Source {
            bytes: written.parts.bytes,
            sha256: written.parts.sha256,
        },
        settings,
        parts,
    })
}

/// The contract's check, from the bytes as they were written: the parts handed to the store (after
/// the reused prefix) have, together, the size and fingerprint of the bytes read, so the sha256
/// taken of them as they were written is the source's.
fn check_parts(read: Fingerprint, written: Fingerprint, what: &str) -> Result<()> {
    if read != written {
        return Err(Error::corrupt(format!(
            "{what}: the parts written ({} bytes, xxh3 {:032x}) are not the bytes read ({} bytes, xxh3 {:032x}); nothing committed",
            written.bytes, written.xxh3, read.bytes, read.xxh3
        )));
    }
    Ok(())
}

/// Tests need a source to change between the read and the check. `CTXFOLD_TEST_AFTER_READ` is a
/// shell command run at that moment with `CTXFOLD_TEST_SOURCE` set to the source's path (as git
/// has its GIT_TEST_* variables); debug builds only, never a release.
#[cfg(not(debug_assertions))]
fn test_hook_after_read(_: &std::path::Path) {}

#[cfg(debug_assertions)]
fn test_hook_after_read(path: &std::path::Path) {
    if let Some(command) = std::env::var_os("CTXFOLD_TEST_AFTER_READ").filter(|c| !c.is_empty()) {
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("CTXFOLD_TEST_SOURCE", path)
            .status();
    }
}
