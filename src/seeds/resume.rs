//! Where each session's seed extraction ended when it was last folded ([`Midway`]), so that a fold
//! of the session grown since by an append walks only the entries appended: a live session is
//! folded again and again, and walking it whole each time grew with the square of its length.
//!
//! A cache, never a record: `<store>/cache/seed-resume/<session>.json.zst`, not mirrored. One that
//! is lost, damaged, of another ctxfold version, or not of the bytes the session's manifest names
//! is not used (the session is walked whole); nor is one whose last record the session's index
//! does not hold (its batch was never listed).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::extract::Midway;
use super::index::Held;
use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::store::atomic::Pending;
use crate::store::manifest::Source;
use crate::store::{Store, check_session_id};

/// Checkpoints are read and written whole, and small next to the session: any level will do.
const LEVEL: i32 = 3;

#[derive(Serialize, Deserialize)]
pub struct Checkpoint {
    /// The ctxfold that wrote it: the rules of extraction may change between versions.
    version: String,
    /// The source the extraction read (as its manifest names it).
    source: Source,
    /// The identity of the last record the extraction handed on (its final record).
    pub last: Digest,
    pub midway: Midway,
    /// What the session's index holds once the extraction's batches are listed: a long session's
    /// index is read whole to learn it.
    pub held: Option<Held>,
}

impl Checkpoint {
    pub fn new(source: Source, last: Digest, midway: Midway, held: Held) -> Self {
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
        crate::store::create_private_dir(path.parent().expect("in the cache"))?;
        let mut pending = Pending::new_in(&store.tmp_dir(), ".resume-")?;
        let mut out = zstd::stream::Encoder::new(&mut pending, LEVEL).with_path("write", &path)?;
        serde_json::to_writer(&mut out, self)
            .map_err(std::io::Error::from)
            .with_path("write", &path)?;
        out.finish().with_path("write", &path)?;
        pending.replace_unsynced(&path)
    }
}

/// `session`'s checkpoint, when there is one made from the source `folded` (see the module
/// comment for when there is none).
pub fn load(store: &Store, session: &str, folded: &Source) -> Option<Checkpoint> {
    let file = std::fs::File::open(path(store, session).ok()?).ok()?;
    let json = zstd::stream::read::Decoder::new(file).ok()?;
    let checkpoint: Checkpoint = serde_json::from_reader(std::io::BufReader::new(json)).ok()?;
    (checkpoint.version == env!("CARGO_PKG_VERSION") && checkpoint.source == *folded)
        .then_some(checkpoint)
}

/// Drop `session`'s checkpoint, if it has one.
pub fn forget(store: &Store, session: &str) -> Result<()> {
    crate::store::remove_if_present(&path(store, session)?)
}

fn path(store: &Store, session: &str) -> Result<PathBuf> {
    check_session_id(session)?;
    Ok(store
        .cache_dir()
        .join("seed-resume")
        .join(format!("{session}.json.zst")))
}
