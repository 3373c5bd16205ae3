//! Folding many sessions: in groups, each group read and segmented on every core (one pack per
//! worker, its blocks compressed on every core too), then committed behind one durability barrier:
//! the packs in place first, then the group's manifests, then their seed indexes and the sources
//! to remove. Each group's reports reach the caller as it commits, so an interrupted run has said
//! what it committed.
//!
//! Never a manifest before the objects it names are durable: a worker that meets an object another
//! worker of the group has claimed names it without writing it, and every pack of the group is in
//! place before any manifest of the group is written.

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use super::stamps::Stamps;
use super::{Action, Options, Prepared, Removal, Report, Sink, prepare};
use crate::digest::Digest;
use crate::error::{Cause, Error, Result};
use crate::odb::Encoder;
use crate::odb::pack::PackWriter;
use crate::sources::Found;
use crate::store::Store;
use crate::store::manifest::Manifest;

/// A group ends once its sources add up to this many bytes: large enough that its barrier is
/// cheap, small enough that an interrupted run loses little.
pub const GROUP_BYTES: u64 = 512 << 20;

/// Fold `sessions` (in groups, see the module comment), handing each group's reports to `group`
/// once it is committed (or, in a dry run, measured). `progress` is called once per session read.
pub fn fold_all(
    store: &Store,
    sessions: &[Found],
    options: &Options,
    progress: &(dyn Fn() + Sync),
    group: &mut dyn FnMut(Vec<Report>) -> Result<()>,
) -> Result<()> {
    let stamps = Stamps::load(store);
    let claimed = Mutex::new(HashSet::new());
    for chunk in groups(sessions) {
        let (prepared, packs) = read_group(store, chunk, options, &stamps, &claimed, progress)?;
        let reports = if options.apply {
            commit_group(store, chunk, (prepared, packs), options, &stamps)?
        } else {
            prepared
                .into_iter()
                .zip(chunk)
                .map(|(p, found)| dry_run_removal(p, found, options))
                .collect()
        };
        group(reports)?;
        // What this group claimed is committed (or, in a dry run, counted) now.
        if options.apply {
            claimed.lock().expect("never poisoned").clear();
        }
    }
    if options.apply {
        stamps.save(store)?;
    }
    Ok(())
}

/// Consecutive sessions adding up to about [`GROUP_BYTES`] (at least one each).
fn groups(sessions: &[Found]) -> impl Iterator<Item = &[Found]> {
    let mut rest = sessions;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut bytes = 0;
        let mut end = 0;
        while end < rest.len() && (end == 0 || bytes < GROUP_BYTES) {
            bytes += std::fs::metadata(&rest[end].path).map_or(0, |m| m.len());
            end += 1;
        }
        let (group, tail) = rest.split_at(end);
        rest = tail;
        Some(group)
    })
}

/// Read and segment a group on every core, each worker into a pack of its own (or measuring, in
/// a dry run). Returns the sessions prepared, in order, with the packs still to commit.
fn read_group(
    store: &Store,
    group: &[Found],
    options: &Options,
    stamps: &Stamps,
    claimed: &Mutex<HashSet<Digest>>,
    progress: &(dyn Fn() + Sync),
) -> Result<(Vec<Prepared>, Vec<PackWriter>)> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Prepared>>> = group.iter().map(|_| Mutex::new(None)).collect();
    let pack_options = store.odb().pack_options(false)?;
    let writers = rayon::broadcast(|_| -> Result<Option<PackWriter>> {
        let mut writer = match options.apply {
            true => Some(store.odb().pack_writer(pack_options.clone())?),
            false => None,
        };
        let mut encoder = Encoder::for_dictionary(options.level, options.dictionary.as_ref())?;
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(found) = group.get(at) else { break };
            let sink = match &mut writer {
                Some(writer) => Sink::Pack(writer),
                None => Sink::Measure(&mut encoder),
            };
            let prepared = prepare(store, found, options, stamps, sink, claimed);
            *slots[at].lock().expect("never poisoned") = Some(prepared);
            progress();
        }
        Ok(writer)
    });
    let mut packs = Vec::new();
    for writer in writers {
        packs.extend(writer?);
    }
    let prepared = slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .expect("never poisoned")
                .expect("every session read")
        })
        .collect();
    Ok((prepared, packs))
}

/// Commit a group: its packs, then its manifests (each with every object confirmed present),
/// then seed indexes and source removals.
fn commit_group(
    store: &Store,
    group: &[Found],
    (mut prepared, packs): (Vec<Prepared>, Vec<PackWriter>),
    options: &Options,
    stamps: &Stamps,
) -> Result<Vec<Report>> {
    let odb = store.odb();
    for writer in packs {
        if let Err(e) = odb.commit_pack(writer) {
            // Nothing of this group can be named: its folds fail, the rest of the run goes on.
            for p in prepared.iter_mut().filter(|p| p.manifest.is_some()) {
                p.manifest = None;
                p.report.fail(&e);
            }
        }
    }
    for p in prepared.iter_mut() {
        if let Some(manifest) = p.manifest.as_mut() {
            fill_stored_bytes(store, manifest)?;
        }
        // What its new objects take: their shares of the blocks they went into.
        for digest in &p.created {
            let share = store.odb().stored_bytes(digest)?.unwrap_or(0);
            p.report.stats.new_stored_bytes += share;
        }
    }
    let manifests: Vec<&Manifest> = prepared
        .iter()
        .filter_map(|p| p.manifest.as_ref())
        .collect();
    let results = store.commit_group(&manifests, options.overwrite)?;
    let mut results = results.into_iter();
    for p in prepared.iter_mut().filter(|p| p.manifest.is_some()) {
        if let Err(e) = results.next().expect("one result per manifest") {
            settle_refused(store, p, e);
        }
    }
    let finished: Vec<Report> = prepared
        .into_par_iter()
        .zip(group.par_iter())
        .map(|(p, found)| finish(store, found, p, options, stamps))
        .collect();
    Ok(finished)
}

/// Packed objects' stored sizes are known once their pack is written: the manifest records them.
fn fill_stored_bytes(store: &Store, manifest: &mut Manifest) -> Result<()> {
    for part in manifest
        .parts
        .iter_mut()
        .filter(|p| p.object.stored_bytes == 0)
    {
        if let Some(found) = store.odb().locate(&part.object.sha256)? {
            part.object.stored_bytes = found.stored_bytes;
        }
    }
    Ok(())
}

/// A manifest the group commit refused. Another fold of the same session may have committed
/// first: the same bytes are no harm; other bytes need `--overwrite`.
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
            report.action = Action::NeedsOverwrite;
            report.note = Some("folded meanwhile with other bytes; --overwrite replaces it".into());
        }
    }
}

/// After the commit: remember the stamp, index the seeds, remove the source if asked.
fn finish(
    store: &Store,
    found: &Found,
    mut prepared: Prepared,
    options: &Options,
    stamps: &Stamps,
) -> Report {
    let committed = prepared.manifest.take();
    if let (Some(manifest), Some(stamp)) = (&committed, &prepared.stamp) {
        stamps.record(&found.path, stamp, &manifest.source);
    }
    let report = &mut prepared.report;
    // Seeds are defined for agent sessions; any other JSONL file is folded without them.
    if let Some(manifest) = &committed
        && options.seeds
        && found.agent.is_some()
    {
        match crate::seeds::index_folded_source(store, manifest, &found.path) {
            Ok(records) => report.seed_records = Some(records),
            Err(e) => {
                report.seeds_failed = true;
                report.note = Some(format!("folded, but its seed index failed: {e}"));
                report.status = report.status.worst(e.status());
            }
        }
    }
    if let Some(manifest) = committed.as_ref().or(prepared.current.as_ref()) {
        match remove_source(store, found, manifest, &prepared, options) {
            Ok(Removal::KeptActive) => {
                let report = &mut prepared.report;
                report.source = Removal::KeptActive;
                report.note =
                    Some("kept: an active session is removed only with --allow-active".into());
            }
            Ok(removal) => prepared.report.source = removal,
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
        report.source = match removable(found, options) {
            true => Removal::WouldRemove,
            false => Removal::KeptActive,
        };
    }
    prepared.report
}

/// Whether `--remove-source` may remove this source at all: an active one only with
/// `--allow-active`.
fn removable(found: &Found, options: &Options) -> bool {
    found.session.archived || options.allow_active
}

/// Remove the source when asked, allowed, and safe: the manifest is committed, a reconstruction
/// read back from the store verifies (the store lock, held shared for the whole fold, keeps gc
/// out), and the file is still the one that was read.
fn remove_source(
    store: &Store,
    found: &Found,
    manifest: &Manifest,
    prepared: &Prepared,
    options: &Options,
) -> Result<Removal> {
    if !options.remove_source {
        return Ok(Removal::Kept);
    }
    if !removable(found, options) {
        return Ok(Removal::KeptActive);
    }
    crate::store::reconstruct::verify(store, manifest)
        .map_err(|e| e.context("reconstruction failed; the source is kept"))?;
    let stamp = super::stamp::Stamp::of(&found.path)?;
    if let Some(change) = prepared.stamp.as_ref().and_then(|s| s.change(&stamp)) {
        return Err(Error::session_changed("the source", change).context("it is kept"));
    }
    crate::store::remove_if_present(&found.path)?;
    crate::store::atomic::sync_parent(&found.path)?;
    Ok(Removal::Removed)
}
