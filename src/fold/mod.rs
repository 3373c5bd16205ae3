//! Folding one found session into the store, with every rule of fold-v1's "Mutation Safety": a
//! dry run unless applied, an existing manifest replaced only with `overwrite` (a source whose
//! sha256 already matches is simply up to date), nothing committed when the source changed while
//! it was read, and a source removed only after its manifest is committed and a reconstruction from
//! the store verified (an active one only with `allow_active`).
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
use crate::error::{Error, Result};
use crate::segment::{Settings, segment};
use crate::sources::Found;
use crate::store::Store;
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
    /// A manifest for the session exists and records other bytes: `--overwrite` replaces it.
    NeedsOverwrite,
    /// The source changed while it was read: nothing committed.
    Changed,
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
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub id: String,
    pub path: String,
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
    /// Why it failed, changed or was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Report {
    /// Whether this session makes the run end non-zero.
    pub fn is_failure(&self) -> bool {
        self.seeds_failed
            || match self.action {
                Action::Failed | Action::Changed => true,
                // Refused as the contract says, but not a fault: a session that grew since it was
                // folded is the everyday case, and the line says what to do.
                Action::NeedsOverwrite | Action::Fold | Action::UpToDate => false,
            }
    }
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
        action: Action::Failed,
        source_bytes: 0,
        stats: WriteStats::default(),
        source: Removal::Kept,
        seed_records: None,
        seeds_failed: false,
        note: None,
    };
    if let Err(e) = fold_into(store, found, options, encoder, &mut report) {
        report.action = Action::Failed;
        report.note = Some(e.to_string());
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
    let before = Stamp::of(path)?;
    let id = &found.session.id;
    if let Some(manifest) = &existing_manifest(store, id, options.overwrite)? {
        match compare(path, &before, &manifest.source)? {
            State::UpToDate => {
                report.action = Action::UpToDate;
                report.source_bytes = manifest.source.bytes;
                return remove_source(store, found, manifest, &before, false, options, report);
            }
            _ if !options.overwrite => {
                report.action = Action::NeedsOverwrite;
                report.source_bytes = before.size;
                report.note =
                    Some("folded earlier with other bytes; --overwrite replaces it".into());
                return Ok(());
            }
            _ => {}
        }
    }

    let manifest = segment_source(store, found, options, encoder, report)?;
    test_hook_after_read(path);
    if let Some(change) = before.change(&Stamp::of(path)?) {
        report.action = Action::Changed;
        report.note = Some(format!(
            "the source changed while it was read ({change}); nothing committed"
        ));
        return Ok(());
    }
    report.action = Action::Fold;
    // A manifest committed by this run has just had its reconstruction verified from the store.
    let mut verified = options.apply;
    if options.apply
        && let Err(e) = store.commit_manifest(&manifest, options.overwrite)
    {
        verified = false;
        // Another fold of the same session may have committed first: same bytes, no harm.
        match existing_manifest(store, id, false)? {
            Some(theirs) if !options.overwrite && theirs.source == manifest.source => {
                report.action = Action::UpToDate;
            }
            Some(_) if !options.overwrite => {
                report.action = Action::NeedsOverwrite;
                report.note =
                    Some("folded meanwhile with other bytes; --overwrite replaces it".into());
                return Ok(());
            }
            _ => return Err(e),
        }
    }
    // Seeds are defined for agent sessions; any other JSONL file is folded without them.
    let agent = found.agent.is_some();
    if options.apply && options.seeds && agent && report.action == Action::Fold {
        // From the store, not the source: the index must describe exactly the folded bytes.
        match crate::seeds::index_folded_session(store, &manifest) {
            Ok(records) => report.seed_records = Some(records),
            Err(e) => {
                report.seeds_failed = true;
                report.note = Some(format!("folded, but its seed index failed: {e}"));
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
    if let Some(change) = before.change(&Stamp::of(&found.path)?) {
        return Err(Error::failed(format!(
            "the source changed ({change}); it is kept"
        )));
    }
    crate::store::remove_if_present(&found.path)?;
    crate::store::atomic::sync_parent(&found.path)?;
    report.source = Removal::Removed;
    Ok(())
}
