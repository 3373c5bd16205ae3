//! Merging a fetched tree (another machine's store) into this store, losing nothing and trusting
//! nothing: first every new object and file is staged under `<store>/tmp/` and checked (each remote
//! object must hash to its name; each manifest to be added, read from the mirror, must reconstruct
//! from the staged and local objects), and only then is anything applied. A bad remote object or
//! manifest aborts the merge with the store untouched.
//!
//! zstd dictionaries come first: objects written with one decode only with it. Staging registers
//! every dictionary the store will have after the merge, the local ones and each registration of
//! the remote's this store lacks, whose dictionary object must be the remote's or already here and
//! is verified like any object (a dictionary is compressed without one). The remote's other objects
//! are then verified in staging with them. New dictionary objects are applied with the other
//! objects and registered before any manifest, so nothing is applied early.
//!
//! The rules: objects are added when missing. A manifest new to this store is added; one whose
//! session this store holds with the same source is skipped; of two different folds of one
//! session, the one whose bytes extend the other's (the same rollout folded later) is kept, and
//! otherwise both are kept, the remote's at `manifests/conflicts/<id>@<12 hex of its source
//! sha256>.json`. Files in `manifests/` subfolders are added when new. Seed indexes become the
//! union of their lines: the lines of each batch of the remote's seed catalog that this store does
//! not list (its object checked present and of its size first), and of each seed index file an
//! older store keeps in `context-fold/`, that a session's index lacks are appended to it. Other
//! `context-fold/` files are added when new.
//!
//! Manifests are trusted for their bytes only: every manifest added whose session restore will
//! not place by itself (its `rollout_path` is not an agent's place for it, see `agents::place`) is
//! reported, and left as it is (a file folded by path is an honest one).

use std::collections::{HashMap, HashSet};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::objs::tree::Entry;
use rayon::prelude::*;

use super::verify::Sources;
use super::{GitContext, Mirror};
use crate::agents::place::place;
use crate::digest::Digest;
use crate::error::{Cause, Error, IoContext, Result};
use crate::files::atomic::write_file;
use crate::files::create_private_dir;
use crate::seeds::catalog::{self, Batch, Catalog};
use crate::seeds::index::{Unions, union_file};
use crate::store::commit::{PackedCommit, Replace};
use crate::store::lock::Mode;
use crate::store::manifest::{Manifest, Session, Source};
use crate::store::packing;
use crate::store::{Store, check_session_id};

/// How many manifests new to the store are read and verified together (in parallel; their parts
/// lists held meanwhile).
const VERIFY_BATCH: usize = 64;

/// The file seed indexes live in, merged line by line.
const SEED_INDEX: &str = "seed-index.jsonl";

/// What a merge did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub objects_added: u64,
    /// zstd dictionaries registered (their objects count among the objects).
    pub dictionaries_added: Vec<Digest>,
    pub sessions_added: Vec<String>,
    /// Sessions whose remote fold extends the local one and replaced it.
    pub sessions_extended: Vec<String>,
    pub conflicts: Vec<Conflict>,
    /// Other manifests added under `manifests/` subfolders (generations, others' conflicts).
    pub manifests_added: u64,
    /// Lines appended to seed indexes.
    pub seed_lines_added: u64,
    pub files_added: u64,
    /// Manifests added whose sessions restore will not place without `--to`.
    pub unplaced: Vec<Unplaced>,
}

/// An added manifest whose session restore will not place without `--to`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Unplaced {
    pub session: String,
    /// The manifest, relative to the store.
    pub manifest: String,
    pub why: String,
}

/// A session folded differently on two machines, neither extending the other: both are kept.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Conflict {
    pub session: String,
    /// The remote's manifest, relative to the store.
    pub path: String,
}

impl Report {
    /// Note the manifest added at `rel` (under the store) if restore will not place its session.
    fn check_placement(&mut self, session: &Session, rel: String) {
        if let Err(unplaced) = place(session) {
            self.unplaced.push(Unplaced {
                session: session.id.clone(),
                manifest: rel,
                why: unplaced.to_string(),
            });
        }
    }

    /// Note a session whose manifest was committed: new here, or `extended` (the local one
    /// replaced).
    fn committed(&mut self, session: Session, extended: bool) {
        self.check_placement(&session, format!("manifests/{}.json", session.id));
        match extended {
            true => self.sessions_extended.push(session.id),
            false => self.sessions_added.push(session.id),
        }
    }

    /// Whether the store changed.
    pub fn changed(&self) -> bool {
        self.objects_added > 0
            || !self.dictionaries_added.is_empty()
            || !self.sessions_added.is_empty()
            || !self.sessions_extended.is_empty()
            || !self.conflicts.is_empty()
            || self.manifests_added > 0
            || self.seed_lines_added > 0
            || self.files_added > 0
    }
}

/// Merge `tree` (a mirror tree, fetched) into `store`, holding the store lock shared throughout.
/// `recorded` is the tree the mirror last recorded of this store, if any: a remote manifest
/// that is the same blob as the one there is one this store holds, and is not read.
pub fn merge(
    store: &Store,
    mirror: &Mirror,
    tree: ObjectId,
    recorded: Option<ObjectId>,
) -> Result<Report> {
    let _lock = store.lock(Mode::Shared, || {})?;
    let staging = tempfile::Builder::new()
        .prefix(".sync-")
        .tempdir_in(store.tmp_dir())
        .with_path("create a staging directory in", &store.tmp_dir())?;
    let staged = Store::at(staging.path());
    let mut plan = Planner {
        store,
        mirror,
        staged: &staged,
        held: held_sessions(store)?,
        recorded: HashMap::new(),
        unverified: Vec::new(),
        steps: Vec::new(),
    };
    let recorded = mirror.entries(recorded)?;
    if let Some(manifests) = recorded.get(b"manifests".as_slice()) {
        plan.walk(manifests.oid, &mut Vec::new(), &mut |plan, rel, entry| {
            plan.recorded.insert(rel.join("/"), entry.oid);
            Ok(())
        })?;
    }
    let root = mirror.entries(Some(tree))?;
    let sub = |name: &str| {
        root.get(name.as_bytes())
            .filter(|e| e.mode.is_tree())
            .map(|e| e.oid)
    };
    let mut objects = Vec::new();
    let mut ids = plan
        .stage_local_dictionaries()
        .map_err(|e| e.context("this store's zstd dictionaries, nothing was applied"))?;
    let dictionaries = plan
        .stage_dictionaries(sub("dictionaries"), sub("objects"), &mut ids, &mut objects)
        .map_err(|e| e.context("refused the remote's dictionaries, nothing was applied"))?;
    let mut packs = Vec::new();
    if let Some(id) = sub(crate::odb::pack::DIR) {
        plan.stage_packs(id, &mut packs)
            .map_err(|e| e.context("refused the remote's packs, nothing was applied"))?;
    }
    if let Some(id) = sub("objects") {
        plan.stage_objects(id, &mut objects)
            .map_err(|e| e.context("refused the remote's objects, nothing was applied"))?;
    }
    if let Some(id) = sub("manifests") {
        plan.walk(id, &mut Vec::new(), &mut |plan, rel, entry| {
            plan.manifest(rel, entry)
        })
        .and_then(|()| plan.verify_new())
        .map_err(|e| e.context("refused the remote's manifests, nothing was applied"))?;
    }
    if let Some(id) = sub("context-fold") {
        plan.walk(id, &mut Vec::new(), &mut |plan, rel, entry| {
            plan.context_fold(rel, entry)
        })
        .map_err(|e| e.context("refused the remote's context-fold files, nothing was applied"))?;
    }
    if let Some(id) = sub("seeds") {
        plan.walk(id, &mut Vec::new(), &mut |plan, rel, entry| {
            plan.seed_catalog(rel, entry)
        })
        .map_err(|e| e.context("refused the remote's seed catalog, nothing was applied"))?;
    }
    let steps = std::mem::take(&mut plan.steps);
    apply(&plan, &packs, &objects, &dictionaries, steps)
}

/// One change to the store, decided and checked before any is made.
enum Step {
    /// Commit a top-level manifest (the mirror's blob `body`, at `rel` under the remote's
    /// `manifests/`), replacing the local one it extends or none.
    Commit {
        body: ObjectId,
        rel: String,
        replace: Replace,
    },
    /// Place a manifest (the mirror's blob `body`) at `rel` under `manifests/`, as a conflict or
    /// as it was.
    Place {
        body: ObjectId,
        rel: String,
        conflict: Option<String>,
    },
    /// Merge a staged seed index file of an older store into `session`'s index.
    Union { staged: PathBuf, session: String },
    /// Merge the lines of the remote's seed batches this store does not list: each with its
    /// rank in the remote's catalog, in the order they are read in.
    Seeds { batches: Vec<(usize, Batch)> },
    /// Add a staged `context-fold/` file.
    Add { staged: PathBuf, rel: String },
}

struct Planner<'a> {
    store: &'a Store,
    mirror: &'a Mirror,
    staged: &'a Store,
    /// Every (session id, source sha256) a manifest of this store holds, or will after the merge.
    held: HashSet<(String, Digest)>,
    /// The blobs of this store's manifests as the mirror recorded them, by path under `manifests/`.
    recorded: HashMap<String, ObjectId>,
    /// Manifests new to this store, each to be verified before its step is taken, all at the end
    /// of the walk, in the order of where their last parts lie ([`Planner::verify_new`]).
    unverified: Vec<Unverified>,
    steps: Vec<Step>,
}

/// A manifest new to this store, read again when it is verified (so that many are not all held).
struct Unverified {
    /// Where its last part lies (see [`Sources::last_part_at`]).
    at: Option<(Digest, u32, u64)>,
    /// Its path under `manifests/`, and its blob in the mirror.
    rel: String,
    body: ObjectId,
    step: Step,
}

/// What [`Planner::walk`] calls for each blob: the planner, the blob's path, its tree entry.
type Visit<'a, 'b> = dyn FnMut(&mut Planner<'a>, &[&str], &Entry) -> Result<()> + 'b;

impl<'a> Planner<'a> {
    fn sources(&self) -> Sources<'_> {
        Sources {
            staged: self.staged,
            local: self.store,
        }
    }

    /// Register the store's own dictionaries in staging (their objects linked, and checked), so
    /// that staged objects written with one verify there; returns them by zstd id.
    fn stage_local_dictionaries(&mut self) -> Result<HashMap<u32, Digest>> {
        let mut ids = HashMap::new();
        for digest in self.store.odb().dictionaries()? {
            // One this store lost stays lost (fsck reports it); the remote may bring it back.
            if self.store.odb().stored_bytes(&digest)?.is_some() {
                self.link_local_object(&digest)?;
                self.stage_dictionary(&digest, &mut ids)?;
            }
        }
        Ok(ids)
    }

    /// Register in staging each of the remote's dictionaries (`tree`) not staged already, whose
    /// object is staged from the remote's `objects` (and pushed onto `staged`) unless the store
    /// has it, then verified like any object, and checked against the others' zstd `ids`.
    /// Returns the dictionaries to register.
    fn stage_dictionaries(
        &mut self,
        tree: Option<ObjectId>,
        objects: Option<ObjectId>,
        ids: &mut HashMap<u32, Digest>,
        staged: &mut Vec<Digest>,
    ) -> Result<Vec<Digest>> {
        let mut added = Vec::new();
        let Some(tree) = tree else {
            return Ok(added);
        };
        let remote_objects = self.mirror.entries(objects)?;
        self.walk(tree, &mut Vec::new(), &mut |plan, rel, _| {
            let digest = match rel {
                [name] => Digest::parse(name),
                _ => None,
            }
            .ok_or_else(|| {
                Error::corrupt(format!("unexpected file dictionaries/{}", rel.join("/")))
            })?;
            // Staged already: one of the store's own.
            if plan.staged.odb().stored_bytes(&digest)?.is_some() {
                return Ok(());
            }
            if plan.store.odb().stored_bytes(&digest)?.is_some() {
                plan.link_local_object(&digest)?;
            } else {
                let hex = digest.to_hex();
                let name = format!("{hex}.zst");
                let fan = remote_objects
                    .get(&hex.as_bytes()[..2])
                    .filter(|e| e.mode.is_tree());
                let entry = match fan {
                    Some(fan) => plan.mirror.entries(Some(fan.oid))?.remove(name.as_bytes()),
                    None => None,
                };
                let entry = match entry {
                    Some(e) if plan.mirror.is_file(&e)? => e,
                    _ => {
                        return Err(Error::corrupt(format!(
                            "the remote registers zstd dictionary {digest} but does not hold its object"
                        )));
                    }
                };
                let path = plan.staged.odb().loose_path(&digest);
                create_private_dir(path.parent().expect("object paths have a parent"))?;
                plan.write_blob(entry.oid, &path)?;
                staged.push(digest);
            }
            plan.stage_dictionary(&digest, ids)?;
            added.push(digest);
            Ok(())
        })?;
        Ok(added)
    }

    /// Verify the staged object `digest` as a dictionary whose zstd id no other has, and register
    /// it in staging.
    fn stage_dictionary(&self, digest: &Digest, ids: &mut HashMap<u32, Digest>) -> Result<()> {
        let path = self.staged.odb().loose_path(digest);
        // Read without a dictionary: one that needed another to decode could never be found by
        // its id (readers look dictionaries up by reading them).
        if frame_dictionary_id(&path)?.is_some() {
            return Err(Error::corrupt(format!(
                "zstd dictionary {digest} is itself compressed with a dictionary"
            )));
        }
        let bytes = self.staged.odb().read_to_vec(digest, None)?;
        let id = zstd::zstd_safe::get_dict_id_from_dict(&bytes).ok_or_else(|| {
            Error::corrupt(format!(
                "object {digest} is registered as a zstd dictionary but is not one"
            ))
        })?;
        if let Some(other) = ids.insert(id.get(), *digest) {
            return Err(Error::corrupt(format!(
                "zstd dictionaries {other} and {digest} have the same id {id}"
            )));
        }
        self.staged.odb().register_dictionary(digest)
    }

    /// Make the store's object `digest` readable in staging too (a hard link: nothing is copied).
    fn link_local_object(&self, digest: &Digest) -> Result<()> {
        let path = self.staged.odb().loose_path(digest);
        create_private_dir(path.parent().expect("object paths have a parent"))?;
        fs::hard_link(self.store.odb().loose_path(digest), &path)
            .with_path("link into staging", &path)
    }

    /// Stage every remote pack that holds an object this store lacks, each checked whole (its index
    /// against it, every block, every object's sha256, its own sha256 against its name).
    fn stage_packs(&mut self, tree: ObjectId, staged: &mut Vec<Digest>) -> Result<()> {
        let remote = self.mirror.entries(Some(tree))?;
        let odb = self.staged.odb();
        let dir = odb.packs_dir().to_path_buf();
        for (name, entry) in &remote {
            let name = std::str::from_utf8(name).unwrap_or_default();
            let Some(pack) = name.strip_suffix(".idx").and_then(Digest::parse) else {
                if name.strip_suffix(".pack").and_then(Digest::parse).is_none() {
                    return Err(Error::corrupt(format!(
                        "unexpected file {}/{name}",
                        crate::odb::pack::DIR
                    )));
                }
                continue;
            };
            let data = match remote.get(format!("{pack}.pack").as_bytes()) {
                Some(e) if self.mirror.is_file(e)? => e,
                _ => {
                    return Err(Error::corrupt(format!(
                        "pack {pack} has an index but no pack"
                    )));
                }
            };
            if self.store.odb().has_pack(&pack)? {
                continue;
            }
            create_private_dir(&dir)?;
            // The index first: a pack whose every object this store holds (one it repacked since,
            // as gc does) is left out unread, and a mirror that dropped it (see `partial`) does
            // not fetch it back.
            let index = crate::odb::pack::index_path(&dir, &pack);
            self.write_blob(entry.oid, &index)?;
            if !self.lacks_any(&crate::odb::pack::indexed_objects(&index, &pack)?)? {
                fs::remove_file(&index).with_path("remove", &index)?;
                continue;
            }
            self.write_blob(data.oid, &crate::odb::pack::pack_path(&dir, &pack))?;
            let member = odb.open_pack(&pack)?;
            if let Some(problem) = odb.verify_pack(&member).into_iter().next() {
                return Err(Error::corrupt(problem.to_string()));
            }
            staged.push(pack);
        }
        Ok(())
    }

    /// Whether this store lacks any of `objects`.
    fn lacks_any(&self, objects: &[Digest]) -> Result<bool> {
        for digest in objects {
            if !self.store.odb().contains(digest)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Stage and verify every remote object this store lacks.
    fn stage_objects(&mut self, tree: ObjectId, staged: &mut Vec<Digest>) -> Result<()> {
        self.walk(tree, &mut Vec::new(), &mut |plan, rel, entry| {
            let digest = match rel {
                [fan, name] => name
                    .strip_suffix(".zst")
                    .and_then(Digest::parse)
                    .filter(|d| d.to_hex()[..2] == **fan),
                _ => None,
            };
            let digest = digest.ok_or_else(|| {
                Error::corrupt(format!("unexpected file objects/{}", rel.join("/")))
            })?;
            // Dictionaries are staged and verified already.
            if plan.store.odb().stored_bytes(&digest)?.is_some()
                || plan.staged.odb().stored_bytes(&digest)?.is_some()
            {
                return Ok(());
            }
            let path = plan.staged.odb().loose_path(&digest);
            create_private_dir(path.parent().expect("object paths have a parent"))?;
            plan.write_blob(entry.oid, &path)?;
            plan.staged.odb().read(&digest, None, &mut io::sink())?;
            staged.push(digest);
            Ok(())
        })
    }

    /// A file of the remote's `manifests/`, at `rel` under it.
    fn manifest(&mut self, rel: &[&str], entry: &Entry) -> Result<()> {
        let rel_path = rel.join("/");
        let Some(name) = rel.last().and_then(|n| n.strip_suffix(".json")) else {
            return Ok(());
        };
        if self.recorded.get(&rel_path) == Some(&entry.oid) {
            return Ok(());
        }
        let local = self.store.manifests_dir().join(&rel_path);
        if self.same_file(&local, entry)? {
            return Ok(());
        }
        let body = entry.oid;
        let remote = self.remote_manifest(body, &rel_path)?;
        let id = remote.session.id.clone();
        let what = |e: Error| e.context(format_args!("manifests/{rel_path}"));
        if rel.len() == 1 && id != name {
            return Err(Error::corrupt(format!(
                "manifests/{rel_path} is for session {id:?}"
            )));
        }
        let held = (id.clone(), remote.source.sha256);
        if self.held.contains(&held) {
            return Ok(());
        }
        let source = remote.source.sha256;
        // Loose or packed (see `store::named`).
        let local_exists = self.store.manifest_exists_at(&local)?;
        if rel.len() > 1 && local_exists {
            self.sources().verify(&remote, 0).map_err(what)?;
            self.held.insert(held);
            return self.conflict(body, id, source);
        }
        if !local_exists {
            self.held.insert(held);
            let step = match rel.len() {
                1 => Step::Commit {
                    body,
                    rel: rel_path.clone(),
                    replace: Replace::Nothing,
                },
                _ => Step::Place {
                    body,
                    rel: rel_path.clone(),
                    conflict: None,
                },
            };
            self.unverified.push(Unverified {
                at: self.sources().last_part_at(&remote)?,
                rel: rel_path,
                body,
                step,
            });
            return Ok(());
        }
        let mine = self.store.load_manifest(&id)?;
        // Folded here from the same bytes since the merge listed what this store holds (a fold
        // at the same moment): nothing to add.
        if mine.source == remote.source {
            return Ok(());
        }
        // The remote's is an earlier fold of what this store holds: nothing to add.
        if remote.source.bytes < mine.source.bytes && self.sources().extends(&mine, &remote)? {
            return Ok(());
        }
        self.held.insert(held);
        if remote.source.bytes > mine.source.bytes {
            // Verifies the remote's whole, whatever the answer.
            if self.sources().extends(&remote, &mine).map_err(what)? {
                self.steps.push(Step::Commit {
                    body,
                    rel: rel_path,
                    replace: Replace::Only(mine.source),
                });
                return Ok(());
            }
        } else {
            self.sources().verify(&remote, 0).map_err(what)?;
        }
        self.conflict(body, id, source)
    }

    /// The remote's manifest at `rel` under `manifests/`, the mirror's blob `body`.
    fn remote_manifest(&self, body: ObjectId, rel: &str) -> Result<Manifest> {
        Manifest::from_slice(&self.file(body)?, &format!("manifests/{rel}"))
    }

    /// Verify the manifests new to this store, [`VERIFY_BATCH`] at a time in parallel, in the
    /// order of where their last parts lie, and take their steps (in that order: each commit
    /// stands alone).
    fn verify_new(&mut self) -> Result<()> {
        let mut unverified = std::mem::take(&mut self.unverified);
        unverified.sort_by_key(|new| new.at);
        for batch in unverified.chunks(VERIFY_BATCH) {
            let manifests = (batch.iter())
                .map(|new| self.remote_manifest(new.body, &new.rel))
                .collect::<Result<Vec<_>>>()?;
            let sources = self.sources();
            manifests
                .par_iter()
                .zip(batch)
                .try_for_each(|(remote, new)| {
                    (sources.verify(remote, 0).map(drop))
                        .map_err(|e| e.context(format_args!("manifests/{}", new.rel)))
                })?;
        }
        self.steps
            .extend(unverified.into_iter().map(|new| new.step));
        Ok(())
    }

    /// Keep a remote manifest beside the local one of its session, under its conflict name.
    fn conflict(&mut self, body: ObjectId, id: String, source: Digest) -> Result<()> {
        let rel = format!("conflicts/{id}@{}.json", &source.to_hex()[..12]);
        if !(self.store).manifest_exists_at(&self.store.manifests_dir().join(&rel))? {
            self.steps.push(Step::Place {
                body,
                rel,
                conflict: Some(id),
            });
        }
        Ok(())
    }

    /// A file of the remote's `context-fold/`, at `rel` under it.
    fn context_fold(&mut self, rel: &[&str], entry: &Entry) -> Result<()> {
        let rel_path = rel.join("/");
        let local = self.store.context_fold_dir().join(&rel_path);
        if self.same_file(&local, entry)? {
            return Ok(());
        }
        let seed_index = match rel {
            [session, SEED_INDEX] => Some(check_session_id(session).map(|()| session.to_string())?),
            _ => None,
        };
        if local.exists() && seed_index.is_none() {
            return Ok(());
        }
        let staged = self.staged.context_fold_dir().join(&rel_path);
        create_private_dir(staged.parent().expect("has a parent"))?;
        self.write_blob(entry.oid, &staged)?;
        self.steps.push(match seed_index {
            Some(session) => Step::Union { staged, session },
            None => Step::Add {
                staged,
                rel: rel_path,
            },
        });
        Ok(())
    }

    /// A file of the remote's `seeds/`: its catalog, whose batches this store does not list are
    /// merged once their objects (staged or here) are checked present and of their size, in the
    /// order their objects lie in the packs (each session's batches together, in the catalog's
    /// order): in the catalog's, by session, a clone of 4,914 forks decoded 4.5 GB of blocks
    /// for 124 MiB of batches, twice.
    fn seed_catalog(&mut self, rel: &[&str], entry: &Entry) -> Result<()> {
        if rel != ["catalog.jsonl"] {
            return Err(Error::corrupt(format!(
                "unexpected file seeds/{}",
                rel.join("/")
            )));
        }
        let local = Catalog::load(self.store)?;
        let data = self.file(entry.oid)?;
        let mut batches = Vec::new();
        // A last line without its `\n` was being written when the remote's tree was taken.
        let whole = data.len() - data.iter().rev().take_while(|&&b| b != b'\n').count();
        for (n, line) in data[..whole].split(|&b| b == b'\n').enumerate() {
            if line.is_empty() || line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let batch = catalog::parse(line)
                .map_err(|why| Error::corrupt(format!("seeds/catalog.jsonl:{}: {why}", n + 1)))?;
            if local.of(&batch.session).any(|b| b.object == batch.object) {
                continue;
            }
            let odb = self.sources().holder(&batch.object)?.odb();
            // A packed one's size is its index's (a staged pack was checked whole, every object
            // hashed; this store's are its own); any other is read through, its sha256 checked.
            let at = odb.packed(&batch.object)?;
            let held = match &at {
                Some((_, at)) => at.raw_bytes == batch.bytes,
                None => (odb.read(&batch.object, Some(batch.bytes), &mut std::io::sink())).is_ok(),
            };
            if !held {
                return Err(Error::corrupt(format!(
                    "the remote's seed catalog names object {} of {} bytes (session {}), which it does not hold",
                    batch.object, batch.bytes, batch.session
                )));
            }
            let at = at.map(|(member, at)| (*member.pack.name(), at.block, at.offset));
            batches.push((at, (batches.len(), batch)));
        }
        // Each batch goes where its session's first one lies; stable, so that each session's
        // batches stay in the catalog's order.
        let mut first = HashMap::new();
        for (at, (_, batch)) in &batches {
            first.entry(batch.session.clone()).or_insert(*at);
        }
        for (at, (_, batch)) in &mut batches {
            *at = first[&batch.session];
        }
        batches.sort_by(|(a, (_, x)), (b, (_, y))| (a, &x.session).cmp(&(b, &y.session)));
        let batches: Vec<(usize, Batch)> = batches.into_iter().map(|(_, batch)| batch).collect();
        if !batches.is_empty() {
            self.steps.push(Step::Seeds { batches });
        }
        Ok(())
    }

    /// Call `each` for every blob under `tree`, with its path as checked names.
    fn walk(
        &mut self,
        tree: ObjectId,
        at: &mut Vec<String>,
        each: &mut Visit<'a, '_>,
    ) -> Result<()> {
        let mut entries: Vec<Entry> = self.mirror.entries(Some(tree))?.into_values().collect();
        entries.sort();
        for entry in entries {
            at.push(checked_name(&entry, at)?);
            if self.mirror.is_file(&entry)? {
                let rel: Vec<&str> = at.iter().map(String::as_str).collect();
                each(self, &rel, &entry)?;
            } else if entry.mode.is_tree() {
                self.walk(entry.oid, at, each)?;
            } else {
                return Err(Error::corrupt(format!(
                    "unexpected entry {} in the remote's tree",
                    at.join("/")
                )));
            }
            at.pop();
        }
        Ok(())
    }

    /// A file of the mirror (a blob, or a file cut in parts: see `cut`).
    fn file(&self, oid: ObjectId) -> Result<Vec<u8>> {
        self.mirror.read_file(oid)?.ok_or_else(|| {
            Error::corrupt(format!(
                "{oid} in the remote's tree is a folder, not a file"
            ))
        })
    }

    /// Copy a file of the mirror into a new private file.
    fn write_blob(&self, oid: ObjectId, path: &Path) -> Result<()> {
        let data = self.file(oid)?;
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_path("create", path)?;
        file.write_all(&data).with_path("write", path)
    }

    /// Whether the file at `path` holds what the tree entry does (false when it is missing).
    fn same_file(&self, path: &Path, entry: &Entry) -> Result<bool> {
        if entry.mode.is_blob() {
            return same_blob(path, entry.oid);
        }
        match fs::read(path) {
            Ok(bytes) => Ok(self
                .mirror
                .read_file(entry.oid)?
                .is_some_and(|d| d == bytes)),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::IsADirectory
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e).with_path("read", path),
        }
    }
}

/// A remote tree entry's name, if it is a plain one we may use as a file name.
fn checked_name(entry: &Entry, at: &[String]) -> Result<String> {
    let name = std::str::from_utf8(&entry.filename).ok().filter(|n| {
        !n.is_empty()
            && !n.starts_with('.')
            && !n.contains(['/', '\\', '\0'])
            && !n.chars().any(char::is_control)
    });
    name.map(str::to_string).ok_or_else(|| {
        Error::corrupt(format!(
            "unsafe name {:?} under {:?} in the remote's tree",
            entry.filename,
            at.join("/")
        ))
    })
}

/// Whether the file at `path` exists and holds exactly the blob `oid`.
fn same_blob(path: &Path, oid: ObjectId) -> Result<bool> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::IsADirectory
            ) =>
        {
            return Ok(false);
        }
        Err(e) => return Err(e).with_path("read", path),
    };
    let local = gix::objs::compute_hash(oid.kind(), gix::objs::Kind::Blob, &bytes)
        .git(|| "hash a blob".into())?;
    Ok(local == oid)
}

/// Every (session id, source sha256) the store's manifests hold, conflicts and generations included.
fn held_sessions(store: &Store) -> Result<HashSet<(String, Digest)>> {
    let mut held = HashSet::new();
    for path in store.manifest_files()? {
        let manifest = store.load_manifest_at(&path)?;
        held.insert((manifest.session.id, manifest.source.sha256));
    }
    Ok(held)
}

/// The zstd dictionary id a frame's header names, if any.
fn frame_dictionary_id(path: &Path) -> Result<Option<std::num::NonZeroU32>> {
    let file = fs::File::open(path).with_path("open", path)?;
    // A frame header is at most 18 bytes.
    let mut header = Vec::with_capacity(18);
    file.take(18)
        .read_to_end(&mut header)
        .with_path("read", path)?;
    Ok(zstd::zstd_safe::get_dict_id_from_frame(&header))
}

/// Make the planned changes: objects first (made durable), then the dictionary registrations
/// (readers need them for the manifests' objects), then what names the objects.
fn apply(
    plan: &Planner<'_>,
    packs: &[Digest],
    objects: &[Digest],
    dictionaries: &[Digest],
    steps: Vec<Step>,
) -> Result<Report> {
    let (store, staged) = (plan.store, plan.staged);
    let mut report = Report::default();
    // The staged packs' bytes are durable before they are linked in.
    if !packs.is_empty() {
        staged.odb().sync()?;
    }
    for pack in packs {
        report.objects_added += store.odb().adopt_pack(staged.odb(), pack)?;
    }
    for digest in objects {
        let target = store.odb().loose_path(digest);
        create_private_dir(target.parent().expect("object paths have a parent"))?;
        // A hard link never replaces: an object that appeared meanwhile is the same bytes.
        match fs::hard_link(staged.odb().loose_path(digest), &target) {
            Ok(()) => report.objects_added += 1,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e).with_path("add object", &target),
        }
    }
    store.odb().sync()?;
    for digest in dictionaries {
        store.odb().register_dictionary(digest)?;
        report.dictionaries_added.push(*digest);
    }
    let new_sessions = (steps.iter())
        .filter(|step| matches!(step, Step::Commit { replace, .. } if *replace == Replace::Nothing))
        .count();
    let mut commits = Commits::new(store, new_sessions)?;
    for step in steps {
        if !matches!(step, Step::Commit { .. }) {
            commits.flush_loose(&mut report)?;
        }
        match step {
            Step::Commit { body, rel, replace } => {
                commits.add(plan.remote_manifest(body, &rel)?, replace, &mut report)?;
            }
            Step::Place {
                body,
                rel,
                conflict,
            } => {
                let target = store.manifests_dir().join(&rel);
                create_private_dir(target.parent().expect("has a parent"))?;
                let bytes = plan.file(body)?;
                let rel = format!("manifests/{rel}");
                // Checked when it was planned: this cannot fail half-way through applying.
                let manifest = Manifest::from_slice(&bytes, &rel)?;
                write_file(&store.tmp_dir(), ".manifest-", &target, &bytes, false)?;
                report.check_placement(&manifest.session, rel.clone());
                match conflict {
                    Some(session) => report.conflicts.push(Conflict { session, path: rel }),
                    None => report.manifests_added += 1,
                }
            }
            Step::Union { staged, session } => {
                report.seed_lines_added += union_file(store, &session, &staged)? as u64;
            }
            Step::Seeds { batches } => {
                let mut unions = Unions::begin(store)?;
                for (rank, batch) in batches {
                    let bytes = store.odb().read_to_vec(&batch.object, Some(batch.bytes))?;
                    let what = Path::new("seeds").join(batch.object.to_hex());
                    report.seed_lines_added +=
                        unions.add(rank, &batch.session, &mut &bytes[..], &what)? as u64;
                }
                unions.finish()?;
            }
            Step::Add { staged, rel } => {
                let target = store.context_fold_dir().join(&rel);
                create_private_dir(target.parent().expect("has a parent"))?;
                let bytes = fs::read(&staged).with_path("read", &staged)?;
                write_file(&store.tmp_dir(), ".context-fold-", &target, &bytes, false)?;
                report.files_added += 1;
            }
        }
    }
    commits.finish(&mut report)?;
    // Told in the order of their names, as the remote's tree lists them, not the order of their
    // packs they were verified and committed in.
    report.sessions_added.sort_unstable();
    report.sessions_extended.sort_unstable();
    report.unplaced.sort_by(|a, b| a.manifest.cmp(&b.manifest));
    Ok(report)
}

/// How many sessions' manifests are committed loose behind one durability barrier (each is a
/// temp file held open until then).
const COMMIT_BATCH: usize = 256;

/// The sessions' manifests a merge commits. Each was reconstructed from the remote's objects
/// while planning (or found to extend the local one, verified whole), and every object is in
/// place and synced before any step: a commit checks that its objects are present, and does not
/// read every session back from the store again. They are committed loose, [`COMMIT_BATCH`] behind
/// one durability barrier as fold commits a group; but a merge that adds as many new sessions as
/// make fold pack the loose ones ([`packing::AUTO`]) commits those straight into the packed form
/// ([`PackedCommit`]), at its end.
struct Commits<'a> {
    store: &'a Store,
    loose: Vec<(Manifest, Replace)>,
    packed: Option<(PackedCommit<'a>, Vec<(Session, Source)>)>,
}

impl<'a> Commits<'a> {
    fn new(store: &'a Store, new_sessions: usize) -> Result<Self> {
        let packed = match new_sessions >= packing::AUTO {
            true => Some((PackedCommit::begin(store)?, Vec::new())),
            false => None,
        };
        Ok(Self {
            store,
            loose: Vec::new(),
            packed,
        })
    }

    fn add(&mut self, manifest: Manifest, replace: Replace, report: &mut Report) -> Result<()> {
        if let (Some((packed, sessions)), Replace::Nothing) = (&mut self.packed, replace) {
            let added = packed.add(&manifest);
            if ours(self.store, added, true, &manifest.session, &manifest.source)? {
                sessions.push((manifest.session, manifest.source));
            }
            return Ok(());
        }
        if self.loose.len() == COMMIT_BATCH {
            self.flush_loose(report)?;
        }
        self.loose.push((manifest, replace));
        Ok(())
    }

    /// Commit the loose ones added so far.
    fn flush_loose(&mut self, report: &mut Report) -> Result<()> {
        let staged = (self.loose.iter())
            .map(|(manifest, replace)| self.store.stage_manifest(manifest, *replace))
            .collect();
        let results = self.store.commit_staged(staged)?;
        for (committed, (manifest, replace)) in results.into_iter().zip(self.loose.drain(..)) {
            let new = replace == Replace::Nothing;
            if ours(
                self.store,
                committed,
                new,
                &manifest.session,
                &manifest.source,
            )? {
                report.committed(manifest.session, !new);
            }
        }
        Ok(())
    }

    fn finish(mut self, report: &mut Report) -> Result<()> {
        self.flush_loose(report)?;
        if let Some((packed, sessions)) = self.packed {
            for (committed, (session, source)) in packed.finish()?.into_iter().zip(sessions) {
                if ours(self.store, committed, true, &session, &source)? {
                    report.committed(session, false);
                }
            }
        }
        Ok(())
    }
}

/// Whether this merge commits the manifest of `session` folded from `source`, given what adding or
/// committing it gave: `Ok(false)` when, new to the store when the merge planned, it was refused
/// because another writer committed the same session from the same bytes since (a fold of the same
/// file at the same moment): nothing is lost, and there is nothing to add. Any other refusal is
/// the merge's error.
fn ours(
    store: &Store,
    committed: Result<()>,
    new: bool,
    session: &Session,
    source: &Source,
) -> Result<bool> {
    let Err(e) = committed else {
        return Ok(true);
    };
    let exists = matches!(e.cause(), Cause::ManifestExists { .. });
    if new && exists && store.load_manifest(&session.id)?.source.sha256 == source.sha256 {
        return Ok(false);
    }
    Err(e)
}
