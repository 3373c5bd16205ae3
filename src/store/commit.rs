//! Committing manifests: the one way a manifest enters the store.
//!
//! The contract: a manifest is committed only after every object it names exists (durably) and a
//! reconstruction hash matches the source's sha256 and size. Two ways to meet it:
//! [`Store::commit_manifest`] reads the session back from the store (for manifests whose parts
//! came from elsewhere: `write-manifest`, a remote); [`Store::commit_group`] takes a writer's word
//! that the parts were hashed as they were written, checks every object is present, and writes a
//! group of manifests behind one durability barrier.

use rayon::prelude::*;

use super::Store;
use super::atomic::{Committed, Pending, sync_dir, sync_parent};
use super::manifest::Manifest;
use crate::error::{Cause, Error, IoContext, Result};

impl Store {
    /// Commit a manifest: every object it names must exist, the store is synced, and a
    /// reconstruction from the store must match the source's sha256 and size. Only then is the
    /// manifest written (atomically). An existing manifest is replaced only with `overwrite`.
    pub fn commit_manifest(&self, manifest: &Manifest, overwrite: bool) -> Result<()> {
        let committed = self.checked(manifest, overwrite).and_then(|()| {
            self.odb().sync()?;
            super::reconstruct::verify(self, manifest)?;
            let mut pending = self.pending_manifest(&manifest.to_json())?;
            pending
                .file()
                .sync_all()
                .with_path("fsync", pending.path())?;
            self.place(pending, manifest, overwrite)?;
            sync_parent(&self.manifest_path(&manifest.session.id))
        });
        committed.map_err(|e| not_committed(e, manifest))
    }

    /// Commit manifests whose parts their writer hashed as it wrote them (and found to match the
    /// source), each with whether it may replace the session's manifest: each must pass the
    /// manifest checks and name only present objects. All are written to temp files, made durable
    /// by one `syncfs`, renamed into place, and the folder fsynced once. Returns one result per
    /// manifest, in order: one refused leaves the others committed.
    pub fn commit_group(&self, manifests: &[(&Manifest, bool)]) -> Result<Vec<Result<()>>> {
        let staged: Vec<Result<Pending>> = (manifests.par_iter())
            .map(|&(manifest, overwrite)| {
                // Its JSON made while it is checked: a long session's manifest (the 1 GB
                // rollout's 110,138 parts, each looked up) takes tens of milliseconds for each,
                // the last things a fold of it waits for.
                let (checked, json) =
                    rayon::join(|| self.checked(manifest, overwrite), || manifest.to_json());
                checked
                    .and_then(|()| self.pending_manifest(&json))
                    .map_err(|e| not_committed(e, manifest))
            })
            .collect();
        // One barrier for the group: the temp files' bytes are durable before any is renamed.
        if staged.iter().any(Result::is_ok) {
            self.odb().sync()?;
        }
        let mut results = Vec::new();
        for (staging, &(manifest, overwrite)) in staged.into_iter().zip(manifests) {
            results.push(
                staging
                    .and_then(|pending| self.place(pending, manifest, overwrite))
                    .map_err(|e| not_committed(e, manifest)),
            );
        }
        if results.iter().any(Result::is_ok) {
            sync_dir(&self.manifests_dir())?;
        }
        Ok(results)
    }

    /// What every commit checks first: the manifest is sound, not already there (unless
    /// `overwrite`), and every object it names is in the store.
    fn checked(&self, manifest: &Manifest, overwrite: bool) -> Result<()> {
        // The caller built this manifest: one that fails the checks is refused, not corruption.
        manifest
            .check()
            .map_err(|e| Error::refused(e.without_context()))?;
        if !overwrite && self.has_manifest(&manifest.session.id) {
            return Err(Error::manifest_exists(&manifest.session.id));
        }
        for part in &manifest.parts {
            if !self.odb().contains(&part.object.sha256)? {
                return Err(Error::object_missing(part.object.sha256));
            }
        }
        Ok(())
    }

    /// A manifest's JSON in a temp file.
    fn pending_manifest(&self, json: &[u8]) -> Result<Pending> {
        super::create_private_dir(&self.manifests_dir())?;
        let mut pending = Pending::new_in(&self.tmp_dir(), ".manifest-")?;
        std::io::Write::write_all(&mut pending, json).with_path("write", pending.path())?;
        Ok(pending)
    }

    /// Rename a durable temp file into place (never over an existing manifest unless `overwrite`).
    fn place(&self, pending: Pending, manifest: &Manifest, overwrite: bool) -> Result<()> {
        let target = self.manifest_path(&manifest.session.id);
        match pending.place_unsynced(&target, overwrite)? {
            Committed::Written => Ok(()),
            Committed::AlreadyThere => Err(Error::manifest_exists(&manifest.session.id)),
        }
    }
}

/// Say which session was not committed (a manifest that exists says so itself).
fn not_committed(e: Error, manifest: &Manifest) -> Error {
    match e.cause() {
        Cause::ManifestExists { .. } => e,
        _ => e.context(format_args!(
            "session {:?} not committed",
            manifest.session.id
        )),
    }
}
