//! The midstate cache: for each session folded with 1 MiB or more before its last part, what
//! hashed those bytes ([`Midstate`]). The next fold of it grown by an append reuses those parts and would hash those
//! bytes again only to find the manifest's sha256; with the midstate it checks them by their xxh3
//! and hashes from the last part on (see [`compare_keeping`](super::compare::compare_keeping)).
//!
//! Beside the stamp cache, in `<store>/cache/midstates.jsonl.zst`, and like it a cache: lost,
//! damaged or made for other bytes, a grown source is hashed whole, as without it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::stamp::Stamp;
use super::stamps::Stamps;
use crate::digest::Midstate;
use crate::error::Result;
use crate::store::Store;
use crate::store::manifest::Source;

/// Below this, hashing the bytes again costs less than a millisecond: not worth a line.
const MIN_BYTES: u64 = 1 << 20;

#[derive(Clone, PartialEq, Serialize, Deserialize)]
struct Kept {
    /// The source as folded, whose manifest's parts but the last the midstate was taken after.
    folded: Source,
    midstate: Midstate,
}

pub struct Midstates(Stamps<Kept>);

impl Midstates {
    pub fn load(store: &Store) -> Self {
        Self(Stamps::load_named(store, "midstates.jsonl"))
    }

    /// The midstate kept for `path` when it was folded as `folded`.
    pub fn of(&self, path: &Path, folded: &Source) -> Option<Midstate> {
        let kept = self.0.last(path)?;
        (kept.folded == *folded).then_some(kept.midstate)
    }

    /// `path`, at `stamp`, was folded as `folded`, its parts but the last hashed as `midstate`.
    pub fn record(&self, path: &Path, stamp: &Stamp, folded: Source, midstate: Midstate) {
        if midstate.bytes() >= crate::test_sizes::size("CTXFOLD_TEST_MIDSTATE_BYTES", MIN_BYTES) {
            self.0.record(path, stamp, &Kept { folded, midstate });
        }
    }

    pub fn save(&self, store: &Store) -> Result<()> {
        self.0.save(store)
    }
}
