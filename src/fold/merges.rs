//! The seed index files fold merges into the store (the context-fold extension's, beside Pi
//! sessions), read only when they may add something: a file whose stamp has not changed since it
//! was merged, into a session's stored index that has not changed since either, adds nothing. The
//! stamps are a cache beside the stamp cache (`<store>/cache/seed-merges.jsonl.zst`): lost or
//! damaged, every file is merged again, which adds nothing twice.

use super::stamp::Stamp;
use super::stamps::Stamps;
use crate::digest::Digest;
use crate::error::Result;
use crate::seeds::catalog::Catalog;
use crate::seeds::index::union_file;
use crate::sources::SeedIndex;
use crate::store::Store;

pub struct Merges {
    /// Each file's stamp when merged, with the session's stored index right after.
    stamps: Stamps<Digest>,
    catalog: Catalog,
}

impl Merges {
    pub fn load(store: &Store) -> Result<Self> {
        Ok(Self {
            stamps: Stamps::load_named(store, "seed-merges.jsonl"),
            catalog: Catalog::load(store)?,
        })
    }

    /// Merge `index` into its session's stored index as a union, unless it was merged already:
    /// how many lines were appended, or `None` when the file was not read.
    pub fn merge(&mut self, store: &Store, index: &SeedIndex) -> Result<Option<usize>> {
        let (session, path) = (&index.session_id, &index.path);
        let before = Stamp::of_present(path)?;
        if let Some(stamp) = &before {
            let held = self.held(store, session)?;
            if self.stamps.knows(path, stamp, &held) {
                return Ok(None);
            }
        }
        let lines = union_file(store, session, path)?;
        // A file that changed while it was read may hold lines not merged yet.
        if let Some(stamp) = before
            && Stamp::of_present(path)? == Some(stamp)
        {
            let held = self.held(store, session)?;
            self.stamps.record(path, &stamp, &held);
        }
        Ok(Some(lines))
    }

    /// Keep the stamps for the next fold.
    pub fn save(&self, store: &Store) -> Result<()> {
        self.stamps.save(store)
    }

    /// What `session`'s stored index is now: the names of its batches, in order, hashed.
    fn held(&mut self, store: &Store, session: &str) -> Result<Digest> {
        self.catalog.refresh(store)?;
        let names: Vec<u8> = self
            .catalog
            .of(session)
            .flat_map(|batch| *batch.object.as_bytes())
            .collect();
        Ok(Digest::of(&names))
    }
}
