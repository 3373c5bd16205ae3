//! Where each session's seed extraction ended when it was last folded ([`Midway`]), so that a fold
//! of the session grown since by an append walks only the entries appended: a live session is
//! folded again and again, and walking it whole each time grew with the square of its length.
//!
//! It keeps what the ledger's first pass found (the skeleton of its entries) too, so that neither
//! pass reads the lines before the append again.
//!
//! A cache, never a record: `<store>/cache/seed-resume/<session>.json.zst`, not mirrored, none for
//! an archived session or a small one ([`worth_keeping`]). It keeps no list its final record gives
//! (spans, files, commands): those come from that record in the index. One that is lost, damaged,
//! of another ctxfold version, or not of the bytes the session's manifest names is not used (the
//! session is walked whole); nor is one whose final record the index does not hold (its batch was
//! never listed). What it says the index holds is used only while the catalog lists the same
//! batches for the session.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::catalog::Batch;
use super::extract::Midway;
use super::index::{Held, identity};
use super::record::{FoldIndex, HARNESS};
use crate::digest::Fingerprint;
use crate::error::{IoContext, Result};
use crate::files::atomic::Pending;
use crate::odb::Check;
use crate::store::manifest::Source;
use crate::store::{Store, check_session_id};

/// Checkpoints are read and written whole, and small next to the session: the fastest level will
/// do. A 26 MB Pi session's (612 KB of JSON, `zstd -b`): 95 KB at 668 MB/s at level 1, 98 KB at
/// 363 MB/s at 3 (saving checkpoints took 6% of a re-fold's CPU after growth, 2.4% compressing).
const LEVEL: i32 = 1;

/// What `gc --aggressive` compresses them at. Measured on the 246 checkpoints of 4,914 forked
/// sessions (29.7 MB of JSON, 29% of the store after the packs were rewritten): 4.80 MB at level
/// 1, 4.06 at 9, 3.65 at 15 in 4 s, 3.61 at 19 in three times that.
pub const AGGRESSIVE_LEVEL: i32 = 15;

/// A session smaller than this is walked whole again (in milliseconds): its checkpoint would cost
/// more, on disk and in the fold that writes it, than it saves.
pub const MIN_BYTES: u64 = 1 << 20;

/// Whether a session folded from `source` gets a checkpoint (an archived one is not appended to).
pub fn worth_keeping(source: &Source, archived: bool) -> bool {
    source.bytes >= min_bytes() && !archived
}

/// [`MIN_BYTES`], which tests lower (see [`crate::test_sizes`]).
fn min_bytes() -> u64 {
    crate::test_sizes::size("CTXFOLD_TEST_CHECKPOINT_BYTES", MIN_BYTES)
}

#[derive(Serialize, Deserialize)]
pub struct Checkpoint {
    /// The ctxfold that wrote it: the rules of extraction may change between versions.
    version: String,
    /// The source the extraction read (as its manifest names it).
    source: Source,
    /// The identity of the last record the extraction handed on (its final record).
    last: Fingerprint,
    midway: Midway,
    /// What the session's index holds once the extraction's batches are listed: a long session's
    /// index is read whole to learn it.
    pub held: Option<Held>,
}

impl Checkpoint {
    pub fn new(source: Source, last: Fingerprint, midway: Midway, held: Held) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").into(),
            source,
            last,
            midway,
            held: Some(held),
        }
    }

    /// Keep it as `session`'s, replacing the one before (unsynced: a cache lost in a crash
    /// costs one whole walk).
    pub fn save(&self, store: &Store, session: &str) -> Result<()> {
        let path = path(store, session)?;
        crate::files::create_private_dir(path.parent().expect("in the cache"))?;
        // Serialized whole first: serde's many small writes, each compressed as it came, cost
        // more than the rest of the save.
        let json = serde_json::to_vec(self).expect("a checkpoint serializes");
        let bytes = zstd::bulk::compress(&json, LEVEL).with_path("write", &path)?;
        let mut pending = Pending::new_in(&store.tmp_dir(), ".resume-")?;
        pending.write_all(&bytes).with_path("write", &path)?;
        pending.replace_unsynced(&path)
    }

    /// Where the extraction ended, made whole with the lists of its final record, read from
    /// `batches` (the session's, the latest first, each from its last line); `None` when they do
    /// not hold that record.
    pub fn midway(self, store: &Store, batches: &[Batch]) -> Option<Midway> {
        let mut bytes = Vec::new();
        for batch in batches.iter().rev() {
            // Not hashed (a long session's batches are tens of megabytes): what is taken of it is
            // one record whose identity must be the one kept.
            bytes.clear();
            (store.odb())
                .read_checked(&batch.object, Some(batch.bytes), &mut bytes, Check::Frame)
                .ok()?;
            for line in bytes.rsplit(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let Ok(mut record) = serde_json::from_slice::<FoldIndex>(line) else {
                    continue;
                };
                if record.harness == HARNESS && identity(&mut record) == self.last {
                    return self.midway.with_final(record);
                }
            }
        }
        None
    }
}

/// `session`'s checkpoint, when there is one made from the source `folded` (see the module
/// comment for when there is none).
pub fn load(store: &Store, session: &str, folded: &Source) -> Option<Checkpoint> {
    let file = std::fs::File::open(path(store, session).ok()?).ok()?;
    let json = zstd::decode_all(file).ok()?;
    let checkpoint: Checkpoint = serde_json::from_slice(&json).ok()?;
    (checkpoint.version == env!("CARGO_PKG_VERSION") && checkpoint.source == *folded)
        .then_some(checkpoint)
}

/// Drop `session`'s checkpoint, if it has one.
pub fn forget(store: &Store, session: &str) -> Result<()> {
    crate::files::remove_if_present(&path(store, session)?)
}

/// Checkpoints compressed again, with their bytes before and after.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Recompressed {
    pub checkpoints: u64,
    pub before: u64,
    pub after: u64,
}

/// Every checkpoint compressed again at `level`, each replaced only when that makes it smaller;
/// one that does not decode is left to the fold that finds it unusable.
pub fn recompress(store: &Store, level: i32) -> Result<Recompressed> {
    let dir = store.cache_dir().join("seed-resume");
    let mut done = Recompressed::default();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(done);
    };
    for entry in entries {
        let path = entry.with_path("read", &dir)?.path();
        if !path.to_string_lossy().ends_with(".json.zst") {
            continue;
        }
        let bytes = std::fs::read(&path).with_path("read", &path)?;
        let Ok(json) = zstd::decode_all(&bytes[..]) else {
            continue;
        };
        let smaller = zstd::bulk::compress(&json, level).with_path("write", &path)?;
        if smaller.len() >= bytes.len() {
            continue;
        }
        let mut pending = Pending::new_in(&store.tmp_dir(), ".resume-")?;
        pending.write_all(&smaller).with_path("write", &path)?;
        pending.replace_unsynced(&path)?;
        done.checkpoints += 1;
        done.before += bytes.len() as u64;
        done.after += smaller.len() as u64;
    }
    Ok(done)
}

fn path(store: &Store, session: &str) -> Result<PathBuf> {
    check_session_id(session)?;
    Ok(store
        .cache_dir()
        .join("seed-resume")
        .join(format!("{session}.json.zst")))
}
