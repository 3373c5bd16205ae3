//! Committing manifests: the one way a manifest enters the store.
//!
//! The contract: a manifest is committed only after every object it names exists (durably) and a
//! reconstruction hash matches the source's sha256 and size. Two ways to meet it:
//! [`Store::commit_manifest`] reads the session back from the store (for manifests whose parts
//! came from elsewhere: `write-manifest`, a remote); [`Store::stage_manifest`] takes a writer's
//! word that the parts were hashed as they were written, checks every object is present, and
//! writes the manifest into a temp file, and [`Store::commit_staged`] puts a group of them in
//! place behind one durability barrier.

use super::Store;
use super::manifest::{Manifest, Source};
use crate::error::{Cause, Error, IoContext, Result};
use crate::files::atomic::{Committed, Pending, sync_dir, sync_parent};

/// Which manifest of its session a commit may replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// None: a manifest there refuses the commit.
    Nothing,
    /// The one of this source, which its committer read (or none): another there was committed
    /// meanwhile by another run, and replacing it would lose it, so it refuses the commit.
    Only(Source),
    /// Whatever is there (`write-manifest --overwrite`: its user's say).
    Any,
}

/// A manifest checked and written into a temp file ([`Store::stage_manifest`]): committed by
/// [`Store::commit_staged`], gone if dropped.
pub struct StagedManifest {
    pending: Pending,
    session: String,
    replace: Replace,
}

impl Store {
    /// Commit a manifest: every object it names must exist, the store is synced, and a
    /// reconstruction from the store must match the source's sha256 and size. Only then is the
    /// manifest written (atomically), in place of what `replace` allows.
    pub fn commit_manifest(&self, manifest: &Manifest, replace: Replace) -> Result<()> {
        let committed = self.checked(manifest, replace).and_then(|()| {
            self.odb().sync()?;
            super::reconstruct::verify(self, manifest)?;
            let mut pending = self.pending_manifest(&manifest.to_json())?;
            pending
                .file()
                .sync_all()
                .with_path("fsync", pending.path())?;
            self.place(pending, &manifest.session.id, replace)?;
            sync_parent(&self.manifest_path(&manifest.session.id))
        });
        committed.map_err(|e| not_committed(e, &manifest.session.id))
    }

    /// Check a manifest whose parts their writer hashed as it wrote them (and found to match the
    /// source), and write it into a temp file, for [`Store::commit_staged`]: it must pass the
    /// manifest checks, not find a manifest there that `replace` does not allow, and name only
    /// present objects.
    pub fn stage_manifest(&self, manifest: &Manifest, replace: Replace) -> Result<StagedManifest> {
        // Its JSON made while it is checked: a long session's manifest (the 1 GB rollout's
        // 110,138 parts, each looked up) takes tens of milliseconds for each.
        let (checked, json) =
            rayon::join(|| self.checked(manifest, replace), || manifest.to_json());
        let session = &manifest.session.id;
        checked
            .and_then(|()| self.pending_manifest(&json))
            .map(|pending| StagedManifest {
                pending,
                session: session.clone(),
                replace,
            })
            .map_err(|e| not_committed(e, session))
    }

    /// Commit staged manifests behind one durability barrier: the temp files' bytes (and the
    /// objects they name) made durable by one `syncfs`, renamed into place, and the folder
    /// fsynced once. Returns one result per manifest, in order, an error staging it gave passed
    /// on: one refused leaves the others committed.
    pub fn commit_staged(&self, staged: Vec<Result<StagedManifest>>) -> Result<Vec<Result<()>>> {
        if staged.iter().any(Result::is_ok) {
            self.odb().sync()?;
        }
        let results: Vec<Result<()>> = (staged.into_iter())
            .map(|staging| {
                let StagedManifest {
                    pending,
                    session,
                    replace,
                } = staging?;
                (self.place(pending, &session, replace)).map_err(|e| not_committed(e, &session))
            })
            .collect();
        if results.iter().any(Result::is_ok) {
            sync_dir(&self.manifests_dir())?;
        }
        Ok(results)
    }

    /// What every commit checks first: the manifest is sound, not already there (unless
    /// `replace` allows one), and every object it names is in the store.
    fn checked(&self, manifest: &Manifest, replace: Replace) -> Result<()> {
        // The caller built this manifest: one that fails the checks is refused, not corruption.
        manifest
            .check()
            .map_err(|e| Error::refused(e.without_context()))?;
        if replace == Replace::Nothing && self.has_manifest(&manifest.session.id) {
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
        crate::files::create_private_dir(&self.manifests_dir())?;
        let mut pending = Pending::new_in(&self.tmp_dir(), ".manifest-")?;
        std::io::Write::write_all(&mut pending, json).with_path("write", pending.path())?;
        Ok(pending)
    }

    /// Rename a durable temp file into place, over the manifest there only if `replace` allows
    /// it. Replacing takes the manifests' lock, which every replacing commit holds from the
    /// moment it reads what is there to the rename.
    fn place(&self, pending: Pending, session: &str, replace: Replace) -> Result<()> {
        let target = self.manifest_path(session);
        let _lock = match replace {
            Replace::Nothing => None,
            Replace::Only(_) | Replace::Any => Some(self.lock_file("manifests")?),
        };
        let overwrite = match replace {
            // A packed one is there as much as a loose one. gc packs under the store lock held
            // exclusive, so none is packed between this look and the rename.
            Replace::Nothing if self.packed()?.get(&format!("{session}.json")).is_some() => {
                return Err(Error::manifest_exists(session));
            }
            Replace::Nothing => false,
            Replace::Any => true,
            // A loose file is renamed over the one read, or stands over the packed one read.
            Replace::Only(source) => match self.manifest_bytes_at(&target)? {
                None => false,
                Some(there) => {
                    let there = Manifest::from_slice(&there, &target.display().to_string())?;
                    match there.source == source {
                        true => true,
                        false => return Err(Error::manifest_exists(session)),
                    }
                }
            },
        };
        match pending.place_unsynced(&target, overwrite)? {
            Committed::Written => Ok(()),
            Committed::AlreadyThere => Err(Error::manifest_exists(session)),
        }
    }
}

/// Say which session was not committed (a manifest that exists says so itself).
fn not_committed(e: Error, session: &str) -> Error {
    match e.cause() {
        Cause::ManifestExists { .. } => e,
        _ => e.context(format_args!("session {session:?} not committed")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digest;
    use crate::odb::Encoder;

    /// A store holding one object, and a manifest of session `s1` made of it.
    fn store_and_manifest(dir: &std::path::Path) -> (Store, Manifest) {
        let store = Store::init(dir.join("store")).unwrap();
        let bytes = b"{\"a\":1}\n";
        let digest = Digest::of(bytes);
        let mut encoder = Encoder::new(crate::odb::DEFAULT_LEVEL).unwrap();
        store.odb().put(&digest, bytes, &mut encoder).unwrap();
        (store, crate::store::manifest::of_one_part("s1", bytes))
    }

    fn temp_files(store: &Store) -> usize {
        std::fs::read_dir(store.tmp_dir()).unwrap().count()
    }

    /// Stage `manifest` and commit it alone.
    fn commit(store: &Store, manifest: &Manifest, replace: Replace) -> Result<()> {
        let staged = store.stage_manifest(manifest, replace);
        store.commit_staged(vec![staged]).unwrap().remove(0)
    }

    fn assert_exists(refused: Error) {
        let exists = matches!(refused.cause(), Cause::ManifestExists { .. });
        assert!(exists, "{refused}");
    }

    #[test]
    fn a_staged_manifest_is_in_place_only_once_committed_and_gone_if_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (store, manifest) = store_and_manifest(dir.path());
        let staged = store.stage_manifest(&manifest, Replace::Nothing).unwrap();
        assert_eq!(temp_files(&store), 1);
        assert!(!store.has_manifest("s1"));
        drop(staged);
        assert_eq!(temp_files(&store), 0);
        assert!(!store.has_manifest("s1"));

        commit(&store, &manifest, Replace::Nothing).unwrap();
        assert_eq!(store.load_manifest("s1").unwrap(), manifest);
        assert_eq!(temp_files(&store), 0);
    }

    #[test]
    fn a_manifest_committed_after_another_was_staged_stands_and_the_staged_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (store, manifest) = store_and_manifest(dir.path());
        let staged = store.stage_manifest(&manifest, Replace::Nothing).unwrap();
        // Another fold of the session commits first, with other (informational) stored sizes.
        let mut theirs = manifest.clone();
        theirs.parts[0].object.stored_bytes = 7;
        commit(&store, &theirs, Replace::Nothing).unwrap();

        let results = store.commit_staged(vec![Ok(staged)]).unwrap();
        assert_exists(results.into_iter().next().unwrap().unwrap_err());
        assert_eq!(store.load_manifest("s1").unwrap(), theirs);
        assert_eq!(temp_files(&store), 0);
    }

    #[test]
    fn a_commit_replaces_only_the_manifest_it_read_unless_any_may_go() {
        let dir = tempfile::tempdir().unwrap();
        let (store, first) = store_and_manifest(dir.path());
        let of = |text: &[u8]| {
            let mut manifest = first.clone();
            manifest.source.sha256 = Digest::of(text);
            manifest
        };
        let (second, third) = (of(b"second"), of(b"third"));
        commit(&store, &first, Replace::Nothing).unwrap();
        commit(&store, &second, Replace::Only(first.source)).unwrap();
        assert_eq!(store.load_manifest("s1").unwrap(), second);
        // Another run replaced the one this commit read: it stands.
        assert_exists(commit(&store, &third, Replace::Only(first.source)).unwrap_err());
        assert_eq!(store.load_manifest("s1").unwrap(), second);
        commit(&store, &third, Replace::Any).unwrap();
        assert_eq!(store.load_manifest("s1").unwrap(), third);
        // None there (removed meanwhile): nothing is lost by putting it there.
        std::fs::remove_file(store.manifest_path("s1")).unwrap();
        commit(&store, &second, Replace::Only(first.source)).unwrap();
        assert_eq!(store.load_manifest("s1").unwrap(), second);
        assert_eq!(temp_files(&store), 0);
    }

    #[test]
    fn a_packed_manifest_is_there_for_a_commit_as_a_loose_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let (store, first) = store_and_manifest(dir.path());
        commit(&store, &first, Replace::Nothing).unwrap();
        assert_eq!(crate::store::packing::pack(&store).unwrap(), 1);
        assert!(!store.manifest_path("s1").exists() && store.has_manifest("s1"));
        assert_exists(commit(&store, &first, Replace::Nothing).unwrap_err());
        let mut second = first.clone();
        second.source.sha256 = Digest::of(b"second");
        // Replacing what was read: a loose file, over the packed one.
        assert_exists(commit(&store, &second, Replace::Only(second.source)).unwrap_err());
        commit(&store, &second, Replace::Only(first.source)).unwrap();
        assert!(store.manifest_path("s1").exists());
        assert_eq!(store.load_manifest("s1").unwrap(), second);
        assert_eq!(temp_files(&store), 0);
    }

    #[test]
    fn an_error_staging_a_manifest_is_its_result_and_the_others_are_committed() {
        let dir = tempfile::tempdir().unwrap();
        let (store, manifest) = store_and_manifest(dir.path());
        let mut missing = manifest.clone();
        missing.session.id = "s2".into();
        missing.parts[0].object.sha256 = Digest::of(b"absent");
        let refused = store
            .stage_manifest(&missing, Replace::Nothing)
            .map(drop)
            .unwrap_err();
        assert!(
            refused.to_string().contains("session \"s2\" not committed"),
            "{refused}"
        );

        let staged = vec![
            store.stage_manifest(&missing, Replace::Nothing),
            store.stage_manifest(&manifest, Replace::Nothing),
        ];
        let results = store.commit_staged(staged).unwrap();
        assert!(results[0].is_err() && results[1].is_ok());
        assert!(!store.has_manifest("s2"));
        assert!(store.has_manifest("s1"));
    }
}
