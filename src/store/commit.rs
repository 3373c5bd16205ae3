//! Committing manifests: the one way a manifest enters the store.
//!
//! The contract: a manifest is committed only after every object it names exists (durably) and a
//! reconstruction hash matches the source's sha256 and size. Two ways to meet it:
//! [`Store::commit_manifest`] reads the session back from the store (for manifests whose parts
//! came from elsewhere: `write-manifest`, a remote); [`Store::stage_manifest`] takes a writer's
//! word that the parts were hashed as they were written, checks every object is present, and
//! writes the manifest into a temp file, and [`Store::commit_staged`] puts a group of them in
//! place behind one durability barrier. A merge that brings many new sessions at once commits
//! them straight into the packed form instead ([`PackedCommit`]).
//!
//! Every commit looks for a manifest of its session and puts its own in place while it holds the
//! manifests' lock (`locks/manifests.lock`), as every change of the packed table does: no two
//! commits of one session, one loose and one packed, both succeed.

use super::Store;
use super::lock::StoreLock;
use super::manifest::{Manifest, Source};
use crate::digest::Digest;
use crate::error::{Cause, Error, IoContext, Result};
use crate::files::atomic::{Committed, Pending, sync_dir, sync_parent};
use crate::odb::pack::PackWriter;

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
            let held = self.lock_file(MANIFESTS_LOCK)?;
            self.place(pending, &manifest.session.id, replace, &held)?;
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
        let held = match staged.iter().any(Result::is_ok) {
            true => {
                self.odb().sync()?;
                Some(self.lock_file(MANIFESTS_LOCK)?)
            }
            false => None,
        };
        let results: Vec<Result<()>> = (staged.into_iter())
            .map(|staging| {
                let StagedManifest {
                    pending,
                    session,
                    replace,
                } = staging?;
                let held = held.as_ref().expect("taken when any is staged");
                (self.place(pending, &session, replace, held))
                    .map_err(|e| not_committed(e, &session))
            })
            .collect();
        drop(held);
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
    /// it; the caller holds the manifests' lock from before this reads what is there to after
    /// the rename.
    fn place(
        &self,
        pending: Pending,
        session: &str,
        replace: Replace,
        _held: &StoreLock,
    ) -> Result<()> {
        let target = self.manifest_path(session);
        let overwrite = match replace {
            // A packed one is there as much as a loose one; none is packed meanwhile (gc packs,
            // and a packed commit names new ones, under the manifests' lock).
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

/// The lock every commit holds while it looks for its session's manifest and puts its own in
/// place, and every change of the packed table holds (see [`Store::change_packed`]).
pub const MANIFESTS_LOCK: &str = "manifests";

/// New sessions' manifests committed straight into the packed form: their bodies written into
/// one pack, then named in the table, rather than each written into a file, renamed into place,
/// then read back and removed again by the packing that follows (a clone of 4,914 sessions spent
/// 3 of its 10 s creating those files). As strict as a loose commit: every manifest passes its
/// checks (each object it names present), the objects are durable before the bodies' pack is,
/// and the pack before the table names it; a session that got a manifest meanwhile, loose or
/// packed, keeps it and this one is refused.
pub struct PackedCommit<'a> {
    store: &'a Store,
    writer: PackWriter,
    /// Each manifest added: its session and its body's object.
    bodies: Vec<(String, Digest)>,
}

impl<'a> PackedCommit<'a> {
    pub fn begin(store: &'a Store) -> Result<Self> {
        let odb = store.odb();
        Ok(Self {
            store,
            writer: odb.pack_writer(odb.pack_options(false)?)?,
            bodies: Vec::new(),
        })
    }

    /// Check `manifest` as [`Store::stage_manifest`] does (an error refuses it alone) and write
    /// its body.
    pub fn add(&mut self, manifest: &Manifest) -> Result<()> {
        let session = &manifest.session.id;
        (self.store.checked(manifest, Replace::Nothing)).map_err(|e| not_committed(e, session))?;
        let body = manifest.to_json();
        let digest = Digest::of(&body);
        if self.store.odb().reuse(&digest)?.is_none() {
            self.writer.add(&digest, &body)?;
        }
        self.bodies.push((session.clone(), digest));
        Ok(())
    }

    /// Commit the manifests added: one result for each, in order.
    pub fn finish(self) -> Result<Vec<Result<()>>> {
        let store = self.store;
        if self.bodies.is_empty() {
            return Ok(Vec::new());
        }
        store.odb().sync()?;
        store.odb().commit_pack(self.writer)?;
        store.change_packed(|table| {
            let mut results = Vec::with_capacity(self.bodies.len());
            for (session, digest) in &self.bodies {
                let name = format!("{session}.json");
                let there = table.get(&name).is_some() || store.manifest_path(session).exists();
                results.push(match there {
                    true => Err(Error::manifest_exists(session)),
                    false => table.insert(&name, *digest),
                });
            }
            Ok(results)
        })
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
    fn a_packed_commit_names_new_sessions_in_the_table_and_refuses_one_committed_meanwhile() {
        let dir = tempfile::tempdir().unwrap();
        let (store, first) = store_and_manifest(dir.path());
        let of = |id: &str| {
            let mut manifest = first.clone();
            manifest.session.id = id.into();
            manifest
        };
        let mut missing = of("s4");
        missing.parts[0].object.sha256 = Digest::of(b"absent");
        let mut packed = PackedCommit::begin(&store).unwrap();
        packed.add(&first).unwrap();
        packed.add(&of("s2")).unwrap();
        packed.add(&of("s3")).unwrap();
        let refused = packed.add(&missing).unwrap_err();
        assert!(
            refused.to_string().contains("\"s4\" not committed"),
            "{refused}"
        );
        // Another run commits s2 loose, and s3 as another packed commit, before this one ends.
        commit(&store, &of("s2"), Replace::Nothing).unwrap();
        let mut other = PackedCommit::begin(&store).unwrap();
        other.add(&of("s3")).unwrap();
        assert!(other.finish().unwrap().iter().all(Result::is_ok));
        let results = packed.finish().unwrap();
        assert!(results[0].is_ok());
        assert_exists(results.into_iter().nth(1).unwrap().unwrap_err());

        // s1 and s3 are packed, s2 loose; every one reads back, and a commit refuses them all.
        let table = store.packed().unwrap();
        let names: Vec<&str> = table.iter().map(|(name, _)| name).collect();
        assert_eq!(names, ["s1.json", "s3.json"]);
        assert!(!store.manifest_path("s1").exists() && store.manifest_path("s2").exists());
        for id in ["s1", "s2", "s3"] {
            assert_eq!(store.load_manifest(id).unwrap(), of(id));
            assert_exists(commit(&store, &of(id), Replace::Nothing).unwrap_err());
        }
        assert!(!store.has_manifest("s4"));
        assert_eq!(temp_files(&store), 0);
        // One given up leaves nothing; one finished adds one pack of the bodies.
        let mut given_up = PackedCommit::begin(&store).unwrap();
        given_up.add(&of("s5")).unwrap();
        drop(given_up);
        assert_eq!(temp_files(&store), 0);
        assert!(!store.has_manifest("s5"));
        let mut again = PackedCommit::begin(&store).unwrap();
        again.add(&of("s5")).unwrap();
        let packs = store.odb().packs().unwrap().len();
        assert!(again.finish().unwrap()[0].is_ok());
        assert_eq!(store.odb().packs().unwrap().len(), packs + 1);
        assert_eq!(store.load_manifest("s5").unwrap(), of("s5"));
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
