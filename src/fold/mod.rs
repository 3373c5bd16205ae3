//! Folding one found session into the store, with every rule of fold-v1's "Mutation Safety": a
//! dry run unless applied, nothing committed when the source changed while it was read, and a
//! source removed only after its manifest is committed and a reconstruction from the store verified
//! (an active one only with `allow_active`).
//!
//! A session folded before is compared with its manifest first (see `compare`): up to date, grown
//! by an append (folded again, the normal path), or changed some other way (refused unless
//! `overwrite`). Either way the manifest replaced is kept first as a generation
//! (`store::generations`), so no fold loses a version.
//!
//! The source is read once: segmenting it also hashes it. Its stamp (size, mtime, ctime, inode)
//! is taken before the read and compared just before the commit.

pub mod compare;
pub mod stamp;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;

use crate::digest::Digest;
use crate::error::{Cause, Error, Result, Status};
use crate::segment::{Settings, segment};
use crate::sources::Found;
use crate::store::Store;
use crate::store::generations::{self, Reason};
use crate::store::manifest::{KIND, Manifest, Source, VERSION};
use crate::store::objects::Encoder;
use crate::store::reconstruct;
use crate::store::writer::{Mode, PartWriter, WriteStats};
use compare::{State, compare};
use stamp::Stamp;

#[derive(Debug)]
pub struct Options {
    pub apply: bool,
    pub overwrite: bool,
    pub remove_source: bool,
    pub allow_active: bool,
    pub settings: Settings,
    pub level: i32,
    /// The store's current zstd dictionary, which `settings.dictionary` names.
    pub dictionary: Option<crate::store::dictionary::Named>,
    /// Extract the seed index of each session folded (`--apply` without `--no-seeds`).
    pub seeds: bool,
    /// In a dry run, the objects already counted as new by any session of the run.
    pub counted: Mutex<HashSet<Digest>>,
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
    /// Not archived, and `--allow-active` was not given.
    KeptActive,
    /// Gone before this run could remove it: another fold removed it (it is in the store).
    Gone,
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
}

/// Fold one session. Never returns an error: failures are in the report, so that one bad file
/// does not stop the others. `encoder` is the caller's to keep between sessions (one per thread);
/// it is created on first use.
pub fn fold_session(
    store: &Store,
    found: &Found,
    options: &Options,
    encoder: &mut Option<Encoder>,
) -> Report {
    let mut report = Report {
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
    };
    if let Err(e) = fold_into(store, found, options, encoder, &mut report) {
        report.action = Action::Failed;
        report.note = Some(e.to_string());
        report.status = e.status();
    }
    report
}

fn fold_into(
    store: &Store,
    found: &Found,
    options: &Options,
    encoder: &mut Option<Encoder>,
    report: &mut Report,
) -> Result<()> {
    let path = &found.path;
    let id = &found.session.id;
    let Some(before) = Stamp::of_present(path)? else {
        if folded_already(store, id, None, report)? {
            return Ok(());
        }
        return Err(Error::io("stat", path, rustix::io::Errno::NOENT.into()));
    };
    // Why the manifest this fold replaces is kept as a generation (`None`: there is none).
    let mut keep = None;
    report.state = Some(State::New);
    if let Some(manifest) = &existing_manifest(store, id, options.overwrite)? {
        let state = compare(path, &before, &manifest.source)?;
        report.state = Some(state);
        match state {
            State::UpToDate => {
                report.action = Action::UpToDate;
                report.source_bytes = manifest.source.bytes;
                return remove_source(store, found, manifest, &before, false, options, report);
            }
            State::Grown => keep = Some(Reason::Grown),
            _ if options.overwrite => keep = Some(Reason::Changed),
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

    let manifest = segment_source(store, found, options, encoder, report)?;
    test_hook_after_read(path);
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
    if keep.is_some() && !options.apply {
        report.note = Some(format!("would keep the folded version as {id}@1"));
    }
    // A manifest committed by this run has just had its reconstruction verified from the store.
    let mut verified = options.apply;
    if options.apply {
        if let Some(reason) = keep {
            let kept = generations::keep(store, id, reason, &manifest.source)?;
            report.kept = kept.and_then(|p| {
                p.strip_prefix(store.root())
                    .ok()
                    .map(|p| p.display().to_string())
            });
        }
        match store.commit_manifest(&manifest, keep.is_some() || options.overwrite) {
            Ok(()) if keep == Some(Reason::Grown) => {
                generations::prune_grown(store, id)?;
            }
            Ok(()) => {}
            // Another fold of the same session committed first: same bytes, no harm.
            Err(e) if matches!(e.cause(), Cause::ManifestExists { .. }) => {
                verified = false;
                match existing_manifest(store, id, false)? {
                    Some(theirs) if theirs.source == manifest.source => {
                        report.action = Action::UpToDate;
                    }
                    _ => {
                        report.action = Action::Unsettled;
                        report.note = Some(
                            "folded meanwhile by another run with other bytes; nothing committed (fold again)"
                                .into(),
                        );
                        report.status = Status::Refused;
                        return Ok(());
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    // Seeds are defined for agent sessions; any other JSONL file is folded without them.
    let agent = found.agent != crate::sources::Agent::File;
    if options.apply && options.seeds && agent && report.action == Action::Fold {
        // From the store, not the source: the index must describe exactly the folded bytes.
        match crate::seeds::index_folded_session(store, &manifest) {
            Ok(records) => report.seed_records = Some(records),
            Err(e) => {
                report.seeds_failed = true;
                report.note = Some(format!("folded, but its seed index failed: {e}"));
                report.status = e.status();
            }
        }
    }
    remove_source(store, found, &manifest, &before, verified, options, report)
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

/// Segment the source into objects (stored, or only measured in a dry run) and build its manifest.
fn segment_source(
    store: &Store,
    found: &Found,
    options: &Options,
    encoder: &mut Option<Encoder>,
    report: &mut Report,
) -> Result<Manifest> {
    let fresh = match encoder.take() {
        Some(reused) => reused,
        None => Encoder::for_dictionary(options.level, options.dictionary.as_ref())?,
    };
    let mode = if options.apply {
        Mode::Write(store, fresh)
    } else {
        Mode::DryRun(store, fresh, &options.counted)
    };
    let mut parts = Vec::new();
    let mut writer = PartWriter::new(mode, |part| {
        parts.push(part);
        Ok(())
    });
    let mut input = crate::input::open(&found.path)?;
    let summary = segment(&options.settings, &mut input, &report.path, &mut writer);
    report.stats = writer.stats;
    if let Mode::Write(_, kept) | Mode::DryRun(_, kept, _) = writer.into_mode() {
        *encoder = Some(kept);
    }
    let summary = summary?;
    report.source_bytes = summary.bytes;
    Ok(Manifest {
        version: VERSION,
        kind: KIND.into(),
        session: found.session.clone(),
        source: Source {
            bytes: summary.bytes,
            sha256: summary.sha256,
        },
        settings: options.settings.clone(),
        parts,
    })
}

/// Tests need a source to change between the read and the check. `CTXFOLD_TEST_AFTER_READ` is a
/// shell command run at that moment with `CTXFOLD_TEST_SOURCE` set to the source's path (as git
/// has its GIT_TEST_* variables); it is not a user-facing setting.
fn test_hook_after_read(path: &Path) {
    if let Some(command) = std::env::var_os("CTXFOLD_TEST_AFTER_READ").filter(|c| !c.is_empty()) {
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .env("CTXFOLD_TEST_SOURCE", path)
            .status();
    }
}

/// Remove the source when asked, allowed, and safe: the manifest is committed, a reconstruction
/// from the store verifies (`verified`: this run's commit just checked it; the store lock, held
/// shared for the whole fold, keeps gc out since), and the file is still the one that was read.
fn remove_source(
    store: &Store,
    found: &Found,
    manifest: &Manifest,
    before: &Stamp,
    verified: bool,
    options: &Options,
    report: &mut Report,
) -> Result<()> {
    if !options.remove_source {
        return Ok(());
    }
    if !found.session.archived && !options.allow_active {
        report.source = Removal::KeptActive;
        report.note = Some("kept: an active session is removed only with --allow-active".into());
        return Ok(());
    }
    if !options.apply {
        report.source = Removal::WouldRemove;
        return Ok(());
    }
    if !verified {
        reconstruct::verify(store, manifest)
            .map_err(|e| e.context("reconstruction failed; the source is kept"))?;
    }
    let Some(now) = Stamp::of_present(&found.path)? else {
        report.source = Removal::Gone;
        return Ok(());
    };
    if let Some(change) = before.change(&now) {
        return Err(Error::session_changed("the source", change).context("it is kept"));
    }
    crate::store::remove_if_present(&found.path)?;
    crate::store::atomic::sync_parent(&found.path)?;
    report.source = Removal::Removed;
    Ok(())
}
