//! Folding many sessions on every core: each worker reads and segments one session after another
//! into a pack of its own (its blocks compressed on every core too), extracts each one's seed
//! records into the same pack, and commits what it has read in groups, each behind one durability
//! barrier: its pack in place first, then the group's manifests, then their seed batches listed in
//! the catalog, then the sources removed. A worker commits once its group
//! holds [`GROUP_BYTES`] of new objects or [`GROUP_TIME`] has passed, when it runs out of
//! sessions, and while the seeds of a session extracted alongside its fold are still being
//! extracted (see `Run::commit_ahead`); each group's reports reach the caller as it commits, so a
//! run (interrupted, too) says what it committed as it goes.
//!
//! Never a manifest before the objects it names are durable: a worker that meets an object another
//! worker has claimed names it without writing it, and a manifest naming an object of a pack not
//! yet in place waits for the run's end, when every pack is.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{Action, Caches, Options, Prepared, Removal, Report, Sink, prepare};
use crate::digest::Digest;
use crate::error::{Cause, Error, IoContext, Remembered, Result};
use crate::files::writers::Writers;
use crate::ledger::{AlongsideFile, FoldedFile, Kept};
use crate::odb::Encoder;
use crate::odb::pack::{FEW_BLOCKS_BYTES, PackWriter};
use crate::seeds::catalog::{Batch, Catalog};
use crate::seeds::extract::Resume;
use crate::seeds::facts::FactsCache;
use crate::seeds::index::{self, Held, Staged};
use crate::seeds::resume;
use crate::sources::Found;
use crate::store::Store;
use crate::store::commit::{Replace, StagedManifest};
use crate::store::generations::{self, Reason};
use crate::store::manifest::Manifest;

/// How a run reports its progress and learns it must stop: `read` is called once per session read;
/// once `stop` says so (Ctrl-C), no session is started and the sessions read are committed.
pub struct Progress<'a> {
    pub read: &'a (dyn Fn() + Sync),
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// A worker commits once its new objects add up to this many bytes: large enough that the barrier
/// is cheap, small enough that an interrupted run loses little.
pub const GROUP_BYTES: u64 = 512 << 20;

/// … or once this long has passed since its last commit, so that a person sees lines come.
pub const GROUP_TIME: Duration = Duration::from_secs(1);

/// A session read, until its report is out.
struct Pending {
    prepared: Prepared,
    /// Its place in the run's list.
    at: usize,
    seeds: Seeds,
    /// Its manifest, checked and written into a temp file ahead of the commit (see
    /// [`Run::commit_ahead`]).
    staged: Option<StagedManifest>,
}

/// What becomes of a session's seed records once its manifest is committed.
enum Seeds {
    /// None to add (not asked, not an agent's session, nothing committed, or they failed).
    None,
    /// Extracted, their batch in the worker's pack: to be listed in the catalog.
    Staged(Box<Staged>),
    /// The source changed after it was folded: extracted from the store instead.
    FromStore,
    /// Up to date, but without a seed index (folded with `--no-seeds`, or by a fold stopped
    /// between its commit and its seeds): extracted from the store.
    Missing,
}

/// A new session at least this large, folded when no other is left to take, has its seed records
/// extracted while it is segmented, on a thread of its own: one long session would otherwise keep
/// one core busy and the other waiting.
pub const ALONGSIDE_BYTES: u64 = 64 << 20;

/// [`ALONGSIDE_BYTES`], which tests lower (see [`crate::test_sizes`]).
fn alongside_bytes() -> u64 {
    crate::test_sizes::size("CTXFOLD_TEST_ALONGSIDE_BYTES", ALONGSIDE_BYTES)
}

/// A session's seed extraction run while the session is segmented: it reads the file itself, so
/// whether it read the bytes the fold read is known only once both are done.
struct Alongside {
    source: AlongsideFile,
    staged: Result<Staged>,
    /// Where its full batches went (a long session's): committed only if the extraction stands.
    pack: Option<PackWriter>,
}

/// What the workers share.
struct Run<'a> {
    store: &'a Store,
    sessions: &'a [Found],
    options: &'a Options,
    progress: &'a Progress<'a>,
    caches: Caches,
    /// Objects some worker has put in its pack (committed or not).
    claimed: Mutex<HashSet<Digest>>,
    next: AtomicUsize,
    /// Sessions whose manifests name an object of another worker's pack not in place yet.
    waiting: Mutex<Vec<Pending>>,
    /// The seed catalog, as of the last batches listed.
    catalog: Mutex<Catalog>,
    /// What the lexicons found in the texts met lately, by any worker.
    facts: FactsCache,
    /// A write found the store's disk full: no session is started (each would fail the same way).
    out_of_space: AtomicBool,
    /// Why a worker's pack could not be committed, the first time one could not: the sessions that
    /// name objects only it held cannot be committed either.
    pack_failed: Mutex<Option<Remembered>>,
    /// The files other processes hold open for writing, looked for once, when the first source
    /// is about to be removed.
    writers: OnceLock<Writers>,
}

/// Fold `sessions` (see the module comment), handing each group's reports to `group` once it is
/// committed (or, in a dry run, measured).
pub fn fold_all(
    store: &Store,
    sessions: &[Found],
    options: &Options,
    progress: &Progress<'_>,
    group: &mut dyn FnMut(Vec<Report>) -> Result<()>,
) -> Result<()> {
    // What a fold reads back from the store (the batches its checkpoints end in, sessions it
    // verifies or indexes from there) comes back to few blocks.
    store.odb().set_block_cache(FEW_BLOCKS_BYTES);
    let run = Run {
        store,
        sessions,
        options,
        progress,
        caches: Caches::load(store),
        claimed: Mutex::new(HashSet::new()),
        next: AtomicUsize::new(0),
        waiting: Mutex::new(Vec::new()),
        catalog: Mutex::new(Catalog::load(store)?),
        facts: FactsCache::default(),
        out_of_space: AtomicBool::new(false),
        pack_failed: Mutex::new(None),
        writers: OnceLock::new(),
    };
    let (sender, reports) = crossbeam_channel::unbounded::<Result<Vec<Report>>>();
    let mut outcome = Ok(());
    rayon::in_place_scope(|scope| {
        for _ in 0..rayon::current_num_threads() {
            let (run, sender) = (&run, sender.clone());
            scope.spawn(move |_| {
                if let Err(e) = run.work(&sender) {
                    let _ = sender.send(Err(e));
                }
            });
        }
        drop(sender);
        // The workers hold the only senders left: this ends when the last one is done.
        for reports in reports {
            if let Ok(reports) = &reports {
                run.note_out_of_space(reports.iter());
            }
            if outcome.is_ok() {
                outcome = reports.and_then(&mut *group);
            }
        }
    });
    outcome?;
    // Every pack is in place now: what waited for another worker's can be committed, but for
    // what names an object of a pack that failed.
    let mut waiting = std::mem::take(&mut *run.waiting.lock().expect("never poisoned"));
    if let Some(failed) = &*run.pack_failed.lock().expect("never poisoned") {
        for pending in &mut waiting {
            if let Some(manifest) = &mut pending.prepared.manifest
                && !fill_stored_bytes(store, manifest)?
            {
                pending.prepared.manifest = None;
                let why = failed.again("the pack of some of its objects failed");
                pending.prepared.report.fail(&why);
            }
        }
    }
    if !waiting.is_empty() {
        group(run.commit(waiting, false)?)?;
    }
    // A full disk stopped the run: what it would save is a cache.
    if options.apply && !run.out_of_space.load(Ordering::Relaxed) {
        run.caches.save(store)?;
    }
    Ok(())
}

impl Run<'_> {
    /// Stop starting sessions once one of `reports` found the disk full.
    fn note_out_of_space<'r>(&self, reports: impl IntoIterator<Item = &'r Report>) {
        if reports.into_iter().any(|r| r.out_of_space) {
            self.out_of_space.store(true, Ordering::Relaxed);
        }
    }

    /// One worker: sessions one after another, committed in groups (see the module comment).
    fn work(&self, out: &crossbeam_channel::Sender<Result<Vec<Report>>>) -> Result<()> {
        let mut writer = match self.options.apply {
            true => Some(new_pack(self.store)?),
            false => None,
        };
        let mut encoder =
            Encoder::for_dictionary(self.options.level, self.options.dictionary.as_ref())?;
        let mut pending: Vec<Pending> = Vec::new();
        let mut since = Instant::now();
        while !(self.progress.stop)() && !self.out_of_space.load(Ordering::Relaxed) {
            let at = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(found) = self.sessions.get(at) else {
                break;
            };
            let alongside = self.goes_alongside(found);
            let (prepared, staged, alongside) = std::thread::scope(|scope| {
                let extraction = alongside.then(|| scope.spawn(|| self.extract_alongside(found)));
                let sink = match &mut writer {
                    Some(writer) => Sink::Pack(writer),
                    None => Sink::Measure(&mut encoder),
                };
                let mut prepared = prepare(
                    self.store,
                    found,
                    self.options,
                    &self.caches,
                    sink,
                    &self.claimed,
                );
                let staged = match (&extraction, &mut writer) {
                    (Some(_), Some(full)) => {
                        self.commit_ahead(full, &mut pending, &mut prepared, out)?
                    }
                    _ => None,
                };
                let alongside = extraction.and_then(|e| e.join().ok());
                Ok::<_, Error>((prepared, staged, alongside))
            })?;
            (self.progress.read)();
            let Some(full) = &mut writer else {
                // A dry run commits nothing: each session is reported as it is measured.
                let report = dry_run_removal(prepared, found, self.options);
                let _ = out.send(Ok(vec![report]));
                continue;
            };
            let mut prepared = prepared;
            // What the fold kept for the seed passes goes no further than them.
            let kept = prepared.kept.take();
            // A session whose seeds were extracted alongside has its checkpoint saved meanwhile.
            std::thread::scope(|scope| {
                let settled =
                    alongside.and_then(|a| self.settle_alongside(a, found, &prepared, scope));
                let seeds = match settled {
                    Some(seeds) => seeds,
                    None => self.extract_seeds(found, &mut prepared, kept, full),
                };
                self.note_out_of_space(std::iter::once(&prepared.report));
                pending.push(Pending {
                    prepared,
                    at,
                    seeds,
                    staged,
                });
                if full.raw_bytes() >= GROUP_BYTES || since.elapsed() >= GROUP_TIME {
                    let pack = std::mem::replace(full, new_pack(self.store)?);
                    let _ = out.send(self.commit_pack_and(pack, std::mem::take(&mut pending)));
                    since = Instant::now();
                }
                Ok::<_, Error>(())
            })?;
        }
        if let Some(pack) = writer {
            let _ = out.send(self.commit_pack_and(pack, pending));
        }
        Ok(())
    }

    /// The seed records of a session about to be committed, read from its source (which must
    /// still hold the bytes just folded), staged: full batches go into `pack` as they are made.
    fn extract_seeds(
        &self,
        found: &Found,
        prepared: &mut Prepared,
        kept: Option<Kept>,
        pack: &mut PackWriter,
    ) -> Seeds {
        // Seeds are defined for agent sessions; any other JSONL file is folded without them.
        if !self.options.seeds || found.agent.is_none() {
            return Seeds::None;
        }
        let (Some(manifest), Some(read)) = (&prepared.manifest, prepared.read) else {
            return match &prepared.current {
                Some(current) if !self.indexed(&current.session.id) => Seeds::Missing,
                _ => Seeds::None,
            };
        };
        let source = FoldedFile {
            path: found.path.clone(),
            read,
            known: prepared.known.take(),
            kept,
        };
        let session = &manifest.session.id;
        // A grown session's walk goes on from where its last one ended.
        let mut from = (prepared.grown_from.as_ref())
            .and_then(|folded| resume::load(self.store, session, folded));
        let known = from.as_mut().and_then(|c| c.held.take());
        let (held, batches) = {
            let catalog = self.catalog.lock().expect("never poisoned");
            let batches: Vec<Batch> = catalog.of(session).cloned().collect();
            (
                Held::of_known(self.store, &catalog, session, known),
                batches,
            )
        };
        // The records handed on then are left out now: the index must hold them.
        let resume = Resume {
            from: from.and_then(|c| c.midway(self.store, &batches)),
            keep: resume::worth_keeping(&manifest.source, found.session.archived),
        };
        let staged = held.and_then(|held| {
            index::stage(
                session,
                held,
                &source,
                &self.facts,
                resume,
                &mut |digest, bytes| put_batch(pack, digest, bytes),
            )
        });
        match staged {
            Ok(mut staged) => {
                self.keep_end(&mut staged, manifest, found)();
                Seeds::Staged(Box::new(staged))
            }
            Err(e) if matches!(e.cause(), Cause::SessionChanged { .. }) => Seeds::FromStore,
            Err(e) => {
                seeds_failed(&mut prepared.report, &e);
                Seeds::None
            }
        }
    }

    /// Keep where `staged`'s extraction ended as the checkpoint of `manifest`'s session when it is
    /// worth keeping: the work, to be done once the checkpoint is taken. A cache: without it, the
    /// next fold of the session walks it whole; one of an earlier version would only take room.
    fn keep_end(
        &self,
        staged: &mut Staged,
        manifest: &Manifest,
        found: &Found,
    ) -> impl FnOnce() + Send + use<'_> {
        let session = manifest.session.id.clone();
        let worth = resume::worth_keeping(&manifest.source, found.session.archived);
        let checkpoint = staged.take_end(manifest.source).filter(|_| worth);
        move || {
            let _ = match checkpoint {
                Some(checkpoint) => checkpoint.save(self.store, &session),
                None => resume::forget(self.store, &session),
            };
        }
    }

    /// Whether `found`'s seed records are extracted while it is segmented ([`ALONGSIDE_BYTES`]):
    /// a new agent session that large, under `--apply` with seeds, once no session is left for
    /// another worker to take (before, every core has work, and two sessions' extractions at once
    /// would only hold more memory).
    fn goes_alongside(&self, found: &Found) -> bool {
        let large = std::fs::metadata(&found.path).is_ok_and(|m| m.len() >= alongside_bytes());
        let last = self.next.load(Ordering::Relaxed) >= self.sessions.len();
        last && self.options.apply
            && self.options.seeds
            && found.agent.is_some()
            && large
            && !self.store.has_manifest(&found.session.id)
    }

    /// `found`'s seed records, extracted from its file while a fold reads it (see
    /// [`Alongside`]).
    fn extract_alongside(&self, found: &Found) -> Alongside {
        let session = &found.session.id;
        let source = AlongsideFile::new(found.path.clone());
        let mut pack: Option<PackWriter> = None;
        let held = {
            let catalog = self.catalog.lock().expect("never poisoned");
            Held::of(self.store, &catalog, session)
        };
        let resume = Resume {
            from: None,
            keep: !found.session.archived,
        };
        let staged = held.and_then(|held| {
            index::stage(
                session,
                held,
                &source,
                &self.facts,
                resume,
                &mut |digest, bytes| put_batch(writer_of(self.store, &mut pack)?, digest, bytes),
            )
        });
        Alongside {
            source,
            staged,
            pack,
        }
    }

    /// The seeds of a session extracted alongside its fold, if they stand: the fold is to be
    /// committed, and both passes of the extraction read the very bytes it read (else `None`: they
    /// are extracted again, the usual way). Its checkpoint is saved on a thread of `scope`: a long
    /// session's is megabytes, and the fold's last moments (committing its packs and manifest) are
    /// spent on one core.
    fn settle_alongside<'s>(
        &'s self,
        alongside: Alongside,
        found: &Found,
        prepared: &Prepared,
        scope: &'s std::thread::Scope<'s, '_>,
    ) -> Option<Seeds> {
        let (Some(manifest), Some(read)) = (&prepared.manifest, prepared.read) else {
            return None;
        };
        // A ledger is read in two passes (see `Ledger`).
        if !alongside.source.read_as(2, read) {
            return None;
        }
        let mut staged = alongside.staged.ok()?;
        // Kept even if what follows fails, it goes unused (its final record is not listed).
        scope.spawn(self.keep_end(&mut staged, manifest, found));
        // Its last batch goes with its full ones: the worker's pack went into place before it was
        // made (see `commit_ahead`).
        let mut pack = alongside.pack;
        if let Some((digest, bytes)) = staged.take_object() {
            let writer = writer_of(self.store, &mut pack).ok()?;
            writer.add_owned(&digest, bytes).ok()?;
        }
        // Its batches are durable before the catalog can name them.
        (pack.map(|pack| self.store.odb().commit_pack(pack)))
            .transpose()
            .ok()?;
        Some(Seeds::Staged(Box::new(staged)))
    }

    /// While a session's seeds are still being extracted alongside it (on the other cores), do
    /// what its commit would otherwise do on one core once they are: put the worker's pack in
    /// place (committing the sessions before it in the pack), then check the session's manifest
    /// and write it into a temp file. It is committed with its seeds, behind their barrier. `None`
    /// when it cannot be staged yet (its objects are not all in place: the commit says why).
    fn commit_ahead(
        &self,
        full: &mut PackWriter,
        pending: &mut Vec<Pending>,
        prepared: &mut Prepared,
        out: &crossbeam_channel::Sender<Result<Vec<Report>>>,
    ) -> Result<Option<StagedManifest>> {
        let pack = std::mem::replace(full, new_pack(self.store)?);
        let _ = out.send(self.commit_pack_and(pack, std::mem::take(pending)));
        let replace = replace(prepared);
        let Some(manifest) = prepared.manifest.as_mut() else {
            return Ok(None);
        };
        if !fill_stored_bytes(self.store, manifest)? {
            return Ok(None);
        }
        Ok(self.store.stage_manifest(manifest, replace).ok())
    }

    /// Whether `session` has a seed index (one that cannot be looked up counts as there: a
    /// missing one is made again by `ctxfold seeds`).
    fn indexed(&self, session: &str) -> bool {
        let catalog = self.catalog.lock().expect("never poisoned");
        index::has_index(self.store, &catalog, session).unwrap_or(true)
    }

    /// Put a worker's pack in place, then commit its sessions, but those that name an object of
    /// another worker's pack not in place yet: they wait for the run's end.
    fn commit_pack_and(
        &self,
        mut pack: PackWriter,
        mut group: Vec<Pending>,
    ) -> Result<Vec<Report>> {
        let odb = self.store.odb();
        // The group's seed batches go last, together: recall reads them together, and the batches
        // of forks compress together (a long session's full batches went in as they were made).
        let batches = group.iter_mut().try_for_each(|p| match &mut p.seeds {
            Seeds::Staged(staged) => match staged.take_object() {
                Some((digest, bytes)) => pack.add_owned(&digest, bytes).map(drop),
                None => Ok(()),
            },
            _ => Ok(()),
        });
        if let Err(e) = batches.and_then(|()| odb.commit_pack(pack)) {
            // Nothing this pack held can be named: these folds fail, the rest of the run goes on
            // (unless the disk is full).
            self.out_of_space
                .fetch_or(e.is_out_of_space(), Ordering::Relaxed);
            for p in group.iter_mut().filter(|p| p.prepared.manifest.is_some()) {
                p.prepared.manifest = None;
                p.prepared.report.fail(&e);
            }
            self.pack_failed
                .lock()
                .expect("never poisoned")
                .get_or_insert_with(|| Remembered::of(&e));
        }
        let mut ready = Vec::new();
        for mut pending in group {
            let blocked = match &mut pending.prepared.manifest {
                Some(manifest) => !fill_stored_bytes(self.store, manifest)?,
                None => false,
            };
            if blocked {
                self.waiting.lock().expect("never poisoned").push(pending);
            } else {
                ready.push(pending);
            }
        }
        self.commit(ready, true)
    }

    /// Commit the manifests of `group` (their objects in place), list their seed batches, then
    /// finish each session: stamp, source removal. `in_worker`: on a worker thread already (no
    /// more parallelism).
    fn commit(&self, mut group: Vec<Pending>, in_worker: bool) -> Result<Vec<Report>> {
        let store = self.store;
        // Sessions apart, on every core: the last group's commit is what a fold ends waiting on.
        group
            .par_iter_mut()
            .try_for_each(|Pending { prepared: p, .. }| {
                if let Some(manifest) = p.manifest.as_mut() {
                    fill_stored_bytes(store, manifest)?;
                    // The version this one replaces is kept first, so that no fold loses one.
                    if let Some((reason, replaced)) = p.replaces {
                        let kept =
                            generations::keep(store, &manifest.session.id, reason, &replaced)?;
                        p.report.kept = kept.and_then(|path| {
                            path.strip_prefix(store.root())
                                .ok()
                                .map(|rel| rel.display().to_string())
                        });
                    }
                }
                // What its new objects take: their shares of the blocks they went into.
                for digest in &p.created {
                    let share = store.odb().stored_bytes(digest)?.unwrap_or(0);
                    p.report.stats.new_stored_bytes += share;
                }
                Ok::<_, Error>(())
            })?;
        let staged: Vec<Result<StagedManifest>> = (group.par_iter_mut())
            .filter_map(
                |Pending {
                     prepared: p,
                     staged,
                     ..
                 }| {
                    let manifest = p.manifest.as_ref()?;
                    Some(match staged.take() {
                        Some(staged) => Ok(staged),
                        None => store.stage_manifest(manifest, replace(p)),
                    })
                },
            )
            .collect();
        let results = store.commit_staged(staged)?;
        let mut results = results.into_iter();
        for Pending { prepared: p, .. } in
            group.iter_mut().filter(|p| p.prepared.manifest.is_some())
        {
            match results.next().expect("one result per manifest") {
                Ok(()) if matches!(p.replaces, Some((Reason::Grown, _))) => {
                    let kept = p.report.kept.as_ref().map(|rel| store.root().join(rel));
                    generations::prune_grown(store, &p.report.id, kept.as_deref())?;
                }
                Ok(()) => {}
                Err(e) => settle_refused(store, p, e),
            }
        }
        self.list_seeds(&mut group);
        let finish = |p: Pending| finish(self, p);
        Ok(match in_worker {
            true => group.into_iter().map(finish).collect(),
            false => group.into_par_iter().map(finish).collect(),
        })
    }

    /// List the staged seed batches of the sessions whose manifests were committed (the others'
    /// objects are left to gc).
    fn list_seeds(&self, group: &mut [Pending]) {
        let mut staged = Vec::new();
        let mut reports = Vec::new();
        for pending in group.iter_mut().filter(|p| p.prepared.manifest.is_some()) {
            match std::mem::replace(&mut pending.seeds, Seeds::None) {
                Seeds::Staged(s) => {
                    staged.push(*s);
                    reports.push(&mut pending.prepared.report);
                }
                other => pending.seeds = other,
            }
        }
        if staged.is_empty() {
            return;
        }
        let mut catalog = self.catalog.lock().expect("never poisoned");
        match index::list(self.store, &mut catalog, staged) {
            Ok(appended) => {
                for (report, appended) in reports.into_iter().zip(appended) {
                    report.seed_records = Some(appended);
                }
            }
            Err(e) => reports.into_iter().for_each(|r| seeds_failed(r, &e)),
        }
    }
}

/// Hand a full seed batch to `pack` whole, taking back a buffer for the next one (see
/// [`index::Put`]).
fn put_batch(pack: &mut PackWriter, digest: &Digest, bytes: Vec<u8>) -> Result<Vec<u8>> {
    pack.add_owned(digest, bytes)?;
    Ok(pack.take_spare())
}

/// Which manifest a session's fold may replace: the one it read, if any.
fn replace(prepared: &Prepared) -> Replace {
    match prepared.replaces {
        Some((_, source)) => Replace::Only(source),
        None => Replace::Nothing,
    }
}

/// The pack writer of `pack`, a new one if there is none yet.
fn writer_of<'p>(store: &Store, pack: &'p mut Option<PackWriter>) -> Result<&'p mut PackWriter> {
    Ok(match pack {
        Some(writer) => writer,
        None => pack.insert(new_pack(store)?),
    })
}

/// A new pack for a worker's objects.
fn new_pack(store: &Store) -> Result<PackWriter> {
    let odb = store.odb();
    odb.pack_writer(odb.pack_options(false)?)
}

/// Packed objects' stored sizes are known once their pack is written: the manifest records them.
/// False when an object whose size was not known is not in the store (yet); one whose size was
/// known was found there as it was folded, and is not looked for again (the commit checks every
/// object is present).
fn fill_stored_bytes(store: &Store, manifest: &mut Manifest) -> Result<bool> {
    let mut all = true;
    for part in manifest
        .parts
        .iter_mut()
        .filter(|p| p.object.stored_bytes == 0)
    {
        match store.odb().locate(&part.object.sha256)? {
            Some(found) => part.object.stored_bytes = found.stored_bytes,
            None => all = false,
        }
    }
    Ok(all)
}

/// A manifest the group commit refused. Another fold of the same session may have committed
/// first: the same bytes are no harm; other bytes are not replaced (this run read another version
/// of the source: folding again settles it).
fn settle_refused(store: &Store, prepared: &mut Prepared, e: Error) {
    let manifest = prepared
        .manifest
        .take()
        .expect("only committed manifests are settled");
    let report = &mut prepared.report;
    if !matches!(e.cause(), Cause::ManifestExists { .. }) {
        return report.fail(&e);
    }
    match store.load_manifest(&manifest.session.id) {
        Ok(theirs) if theirs.source == manifest.source => {
            report.action = Action::UpToDate;
            prepared.current = Some(theirs);
        }
        _ => {
            report.action = Action::Unsettled;
            report.note = Some(
                "folded meanwhile by another run with other bytes; nothing committed (fold again)"
                    .into(),
            );
            report.status = report.status.worst(crate::error::Status::Refused);
        }
    }
}

/// A fold that stands although its seed records could not be added.
fn seeds_failed(report: &mut Report, e: &Error) {
    report.seeds_failed = true;
    report.note = Some(format!("folded, but its seed index failed: {e}"));
    report.status = report.status.worst(e.status());
    report.out_of_space |= e.is_out_of_space();
}

/// After the commit: remember the stamp, index the seeds the source could not give, remove the
/// source if asked.
fn finish(run: &Run<'_>, pending: Pending) -> Report {
    let (store, options, caches) = (run.store, run.options, &run.caches);
    let found = &run.sessions[pending.at];
    let Pending {
        mut prepared,
        seeds,
        ..
    } = pending;
    let committed = prepared.manifest.take();
    if let (Some(manifest), Some(stamp)) = (&committed, &prepared.stamp) {
        caches.stamps.record(&found.path, stamp, &manifest.source);
        if let Some(midstate) = prepared.before_last.take() {
            caches
                .midstates
                .record(&found.path, stamp, manifest.source, midstate);
        }
    }
    let from_store = match seeds {
        Seeds::FromStore => committed.as_ref(),
        Seeds::Missing => prepared.current.as_ref(),
        Seeds::None | Seeds::Staged(_) => None,
    };
    if let Some(manifest) = from_store {
        match index::index_folded_session(store, manifest, &run.facts) {
            Ok(records) => prepared.report.seed_records = Some(records),
            // A session up to date that is no ledger has nothing to index, as `ctxfold seeds` says.
            Err(e) if committed.is_none() && matches!(e.cause(), Cause::BadInput { .. }) => {}
            Err(e) => seeds_failed(&mut prepared.report, &e),
        }
    }
    if let Some(manifest) = committed.as_ref().or(prepared.current.as_ref()) {
        match remove_source(store, found, manifest, &prepared, options, &run.writers) {
            Ok(removal) => {
                let report = &mut prepared.report;
                report.source = removal;
                if removal == Removal::KeptOpen
                    && let Some(writer) = run.writers.get().and_then(|w| w.of(&found.path))
                {
                    report.note = Some(format!("source kept: {writer} holds it open for writing"));
                }
                // What the agent keeps beside the session stays: say so rather than leave it
                // unmentioned.
                let companion = found
                    .agent
                    .and_then(|agent| agent.format().companion(&found.path));
                if let (Removal::Removed, Some(dir)) = (removal, companion) {
                    report.note = Some(format!(
                        "left {}: the agent's files for this session beside it are not folded",
                        crate::cli::human::path(&dir)
                    ));
                }
            }
            Err(e) => {
                let report = &mut prepared.report;
                report.note = Some(e.to_string());
                report.status = report.status.worst(e.status());
            }
        }
    }
    prepared.report
}

/// In a dry run, say what `--remove-source` would do.
fn dry_run_removal(mut prepared: Prepared, found: &Found, options: &Options) -> Report {
    let report = &mut prepared.report;
    if options.remove_source && matches!(report.action, Action::Fold | Action::UpToDate) {
        report.source = match removable(found, prepared.stamp.as_ref(), options) {
            true => Removal::WouldRemove,
            false => Removal::KeptActive,
        };
    }
    prepared.report
}

/// Whether `--remove-source` may remove this source at all: an active one only with
/// `--allow-active`, or once it is unchanged for `--older-than` (`stamp`: before it was read).
fn removable(found: &Found, stamp: Option<&super::stamp::Stamp>, options: &Options) -> bool {
    let inactive = options
        .inactive_after
        .zip(stamp)
        .is_some_and(|(age, stamp)| stamp.unchanged_for(age));
    found.session.archived || options.allow_active || inactive
}

/// Remove the source when asked, allowed, and safe: the manifest is committed, a reconstruction
/// read back from the store verifies (the store lock, held shared for the whole fold, keeps gc
/// out), the file is still the one that was read, and no other process holds it open for writing
/// (`writers`, looked for once).
fn remove_source(
    store: &Store,
    found: &Found,
    manifest: &Manifest,
    prepared: &Prepared,
    options: &Options,
    writers: &OnceLock<Writers>,
) -> Result<Removal> {
    if !options.remove_source {
        return Ok(Removal::Kept);
    }
    if !removable(found, prepared.stamp.as_ref(), options) {
        return Ok(Removal::KeptActive);
    }
    crate::store::reconstruct::verify(store, manifest)
        .map_err(|e| e.context("reconstruction failed; the source is kept"))?;
    let Some(stamp) = super::stamp::Stamp::of_present(&found.path)? else {
        return Ok(Removal::Gone);
    };
    if let Some(change) = prepared.stamp.as_ref().and_then(|s| s.change(&stamp)) {
        return Err(Error::session_changed("the source", change).context("it is kept"));
    }
    if writers.get_or_init(Writers::scan).of(&found.path).is_some() {
        return Ok(Removal::KeptOpen);
    }
    crate::files::remove_if_present(&found.path)?;
    let folder = crate::files::folder_of(&found.path);
    match crate::files::atomic::fsync_dir(folder) {
        // Another worker (or fold) removed the folder once this file was gone from it too.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        synced => synced.with_path("fsync directory", folder)?,
    }
    remove_emptied_folders(&found.path, &options.session_trees);
    Ok(Removal::Removed)
}

/// After `source` went, the folders it left empty (Codex's `sessions/YYYY/MM/DD`), from its own
/// upwards, below the session tree it is in and never that tree: `remove_dir` removes a folder
/// only while it is empty, so one that holds anything, or gains something meanwhile, stays and
/// ends the climb. Tidying only: a folder that will not go is left, without a word. A source in
/// no session tree (a file folded by path from elsewhere) leaves its folders alone.
fn remove_emptied_folders(source: &Path, trees: &[PathBuf]) {
    let Some(tree) = trees.iter().find(|tree| source.starts_with(tree)) else {
        return;
    };
    for folder in source.ancestors().skip(1) {
        if folder == tree || !folder.starts_with(tree) || std::fs::remove_dir(folder).is_err() {
            return;
        }
    }
}
