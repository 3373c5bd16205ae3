//! Garbage collection: objects that no manifest references dropped, loose objects and small packs
//! repacked (as `git gc` does), stale temp files removed.
//!
//! Safe beside writers by two means together, as git, restic and kopia do it. First, the caller
//! holds the store lock exclusive while it plans and applies, so no writer that takes the lock
//! (every ctxfold writer, and the reference implementation's fold) is between writing an object
//! and committing the manifest that names it. Second, a grace period: an unreferenced object goes
//! only once the cutoff is past its loose file's mtime, or its pack's, because a plumbing pipeline
//! (`ctxfold-split --write | ctxfold-write-manifest`) releases the lock between its two steps and
//! leaves its objects unreferenced for a moment; writers refresh the mtime of every loose object or
//! pack they reuse.
//!
//! The roots are every manifest under `manifests/`, its subfolders included (`generations/`,
//! `conflicts/`), loose or packed (and a packed one's body), the seed catalog's batches and every
//! registered dictionary. If any manifest or
//! catalog line cannot be read, nothing is removed: it may name objects that would otherwise look
//! unreferenced. The
//! reference implementation's pack generation (`packs/`) is never touched.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::Store;
use super::families::family_order;
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};
use crate::odb::pack::PackOptions;
use crate::odb::repack::{Fate, Repacked, Sources, repack};
use crate::odb::{Listed, Place};
use crate::seeds::catalog::Catalog;

/// More packs than this after a collection are merged into one (all but the largest).
pub const MAX_PACKS: usize = 8;

/// The objects manifests name, each once, in the order sessions name them, and every root.
pub struct Roots {
    pub set: HashSet<Digest>,
    /// Objects by session in fork-family order (see `families`) and by part within one, then
    /// packed manifests' bodies in the table's order, then the seed batches in their sessions'
    /// order: what a new pack is written in, so that each session's objects sit together and
    /// beside its relatives', and the bodies, and the seed indexes (read together by recall, and
    /// alike across forks) share blocks.
    pub order: Vec<Digest>,
}

/// Every object named by a manifest but those in `dropping` (manifests about to be removed), by
/// the seed catalog, and every registered zstd dictionary. Fails, naming the file, when any
/// manifest or catalog line cannot be read.
pub fn roots(store: &Store, dropping: &[PathBuf]) -> Result<Roots> {
    let mut files = store.manifest_files()?;
    files.retain(|path| !dropping.contains(path));
    let table = store.packed()?;
    let (mut sessions, mut named, mut bodies) = (Vec::new(), Vec::new(), Vec::new());
    for path in files {
        let manifest = store.load_manifest_at(&path).map_err(|e| {
            e.context("gc removes nothing while a manifest is unreadable (see ctxfold fsck)")
        })?;
        let parts = manifest.parts.iter().map(|p| p.object.sha256);
        named.push(
            parts
                .chain(manifest.settings.dictionary)
                .collect::<Vec<_>>(),
        );
        sessions.push(manifest.session.id);
        let name = path.strip_prefix(store.manifests_dir()).ok();
        bodies.extend(name.and_then(|n| table.get(n.to_str()?)));
    }
    let families = family_order(&named);
    let mut set = HashSet::new();
    let mut order = Vec::new();
    for &at in &families {
        for &digest in &named[at] {
            if set.insert(digest) {
                order.push(digest);
            }
        }
    }
    drop(named);
    // Packed manifests' bodies together, in the table's order, after every session's objects:
    // readers take them in that order, many from one block (see `bodies`); placed each beside
    // its session's objects, a listing of 4,914 sessions after `gc --aggressive` decoded a 4 MiB
    // block for nearly every one (20 s).
    for digest in bodies {
        if set.insert(digest) {
            order.push(digest);
        }
    }
    let catalog = Catalog::load(store)?;
    if let Some(problem) = catalog.problems.first() {
        return Err(Error::corrupt(format!(
            "{problem}; gc removes nothing while a catalog line is unreadable (see ctxfold fsck)"
        )));
    }
    // Seed batches in their sessions' family order too: a fork's index repeats its relatives'.
    let mut rank = HashMap::new();
    for (place, &at) in families.iter().enumerate() {
        rank.entry(sessions[at].as_str()).or_insert(place);
    }
    let mut batches: Vec<_> = catalog.batches().iter().collect();
    batches.sort_by_key(|batch| {
        rank.get(batch.session.as_str())
            .copied()
            .unwrap_or(usize::MAX)
    });
    for batch in batches {
        if set.insert(batch.object) {
            order.push(batch.object);
        }
    }
    // Objects, not manifests, decide which dictionaries are still needed (see dictionaries.rs).
    set.extend(store.odb().dictionaries()?);
    Ok(Roots { set, order })
}

/// A pack to rewrite, and why.
#[derive(Debug)]
pub struct Rewrite {
    pub pack: Digest,
    pub objects: u32,
    pub pack_bytes: u64,
    /// Unreferenced objects past the grace period, dropped by the rewrite.
    pub dead: Vec<Digest>,
}

/// What a collection does (or, in a dry run, would).
#[derive(Debug, Default)]
pub struct Plan {
    /// Objects some manifest names (or registered dictionaries).
    pub referenced: u64,
    /// Unreferenced loose objects past the grace period, with their size: removed.
    pub dead_loose: Vec<(Digest, u64)>,
    /// Unreferenced objects kept because their file or pack is younger than the cutoff.
    pub young: u64,
    /// Packs rewritten: those holding dead objects, and small ones merged.
    pub rewrite: Vec<Rewrite>,
    /// Loose objects (not dictionaries) packed.
    pub loose_to_pack: u64,
    /// Temp files older than the cutoff, and packs without an index (interrupted writes).
    pub temps: Vec<PathBuf>,
    /// Folders in `tmp/` older than the cutoff: staging left by a killed sync (see
    /// [`temp_folders`]).
    pub temp_folders: Vec<PathBuf>,
}

impl Plan {
    /// Whether applying would change anything.
    pub fn is_empty(&self) -> bool {
        self.dead_loose.is_empty()
            && self.rewrite.is_empty()
            && self.loose_to_pack == 0
            && self.temps.is_empty()
            && self.temp_folders.is_empty()
    }
}

/// What to do: drop unreferenced objects older than `cutoff`, pack loose objects, merge packs
/// when there are more than [`MAX_PACKS`], rewrite every pack when `all_packs`.
pub fn plan(store: &Store, roots: &Roots, cutoff: SystemTime, all_packs: bool) -> Result<Plan> {
    let odb = store.odb();
    let dictionaries: HashSet<Digest> = odb.dictionaries()?.into_iter().collect();
    let mut plan = Plan {
        referenced: roots.set.len() as u64,
        ..Plan::default()
    };
    let members = odb.packs()?;
    let young_packs: HashMap<Digest, bool> = members
        .iter()
        .map(|m| Ok((*m.pack.name(), m.modified()? >= cutoff)))
        .collect::<Result<_>>()?;
    let mut dead: HashMap<Digest, Vec<Digest>> = HashMap::new();
    let mut counted = HashSet::new();
    for entry in odb.list()? {
        let (digest, place) = match entry {
            Listed::Object { digest, place } => (digest, place),
            Listed::Stray(path) => {
                if is_temp_name(&path) && older(&path, cutoff)? {
                    plan.temps.push(path);
                }
                continue;
            }
            Listed::Broken { .. } => continue,
        };
        let packable = place == Place::Loose && !dictionaries.contains(&digest);
        if roots.set.contains(&digest) {
            plan.loose_to_pack += u64::from(packable);
            continue;
        }
        match place {
            Place::Pack(name) if young_packs[&name] => {
                plan.young += u64::from(counted.insert(digest));
            }
            Place::Pack(name) => dead.entry(name).or_default().push(digest),
            Place::Loose => match odb.loose_modified(&digest)? {
                Some((modified, _)) if modified >= cutoff => {
                    plan.young += u64::from(counted.insert(digest));
                }
                Some((_, size)) => plan.dead_loose.push((digest, size)),
                None => {}
            },
            Place::Codexfold => {}
        }
    }
    let mut kept: Vec<(Digest, u32, u64)> = Vec::new();
    for member in &members {
        let name = *member.pack.name();
        let (objects, bytes) = (member.pack.object_count(), member.pack.pack_bytes());
        match dead.remove(&name) {
            Some(dead) => plan.rewrite.push(Rewrite {
                pack: name,
                objects,
                pack_bytes: bytes,
                dead,
            }),
            None if all_packs => plan.rewrite.push(Rewrite {
                pack: name,
                objects,
                pack_bytes: bytes,
                dead: Vec::new(),
            }),
            None => kept.push((name, objects, bytes)),
        }
    }
    // Merge every pack but the largest once there are too many: reads look in each in turn.
    if kept.len() + usize::from(!plan.rewrite.is_empty() || plan.loose_to_pack > 0) > MAX_PACKS {
        kept.sort_by_key(|&(_, _, bytes)| std::cmp::Reverse(bytes));
        for (pack, objects, pack_bytes) in kept.drain(1..) {
            plan.rewrite.push(Rewrite {
                pack,
                objects,
                pack_bytes,
                dead: Vec::new(),
            });
        }
    }
    plan.temps.extend(stale_temps(store, cutoff)?);
    for folder in temp_folders(store)? {
        if older(&folder, cutoff)? {
            plan.temp_folders.push(folder);
        }
    }
    plan.temps.sort();
    plan.temps.dedup();
    Ok(plan)
}

/// Carry out `plan`: one new pack of every kept object of the rewritten packs and of the loose
/// objects, written with `options` in session order; the rewritten packs, the packed and the dead
/// loose files, and the stale temp files removed. An object whose file or pack is in use again
/// since the plan (a writer that does not take the lock reused it) is kept.
pub fn apply(
    store: &Store,
    roots: &Roots,
    plan: &Plan,
    cutoff: SystemTime,
    options: PackOptions,
) -> Result<Repacked> {
    let odb = store.odb();
    let sources = Sources {
        packs: plan.rewrite.iter().map(|r| r.pack).collect(),
        loose: true,
    };
    let young_packs: HashSet<Digest> = odb
        .packs()?
        .iter()
        .filter(|m| m.modified().is_ok_and(|t| t >= cutoff))
        .map(|m| *m.pack.name())
        .collect();
    // Referenced objects are packed; unreferenced ones in their grace period stay where they are
    // (a packed one moves with its rewritten pack), the others go.
    let fate = |digest: &Digest, place: Place| {
        if roots.set.contains(digest) {
            return Fate::Pack;
        }
        let young = match place {
            Place::Pack(name) => young_packs.contains(&name),
            Place::Loose => odb
                .loose_modified(digest)
                .ok()
                .flatten()
                .is_none_or(|(modified, _)| modified >= cutoff),
            Place::Codexfold => true,
        };
        if young { Fate::Leave } else { Fate::Drop }
    };
    // Leftovers first: a pack without its index is one this repack may write again, whole.
    for temp in &plan.temps {
        match temp.extension().is_some_and(|e| e == "pack") {
            true => odb.retire_orphan_pack(temp).map(drop)?,
            false => crate::files::remove_if_present(temp)?,
        }
    }
    let done = repack(odb, &sources, roots.order.iter().copied(), fate, options)?;
    for folder in &plan.temp_folders {
        match fs::remove_dir_all(folder) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_path("remove", folder);
            }
            _ => {}
        }
    }
    Ok(done)
}

/// Files in `tmp/`, `.*.tmp` files under `manifests/`, and packs without an index, all older than
/// the cutoff.
fn stale_temps(store: &Store, cutoff: SystemTime) -> Result<Vec<PathBuf>> {
    let mut temps = Vec::new();
    for dir in [
        store.tmp_dir(),
        store.manifests_dir(),
        store.odb().packs_dir().to_path_buf(),
    ] {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.with_path("list", &dir)?.path();
            let stale = if dir == store.tmp_dir() {
                true
            } else if dir == store.manifests_dir() {
                is_temp_name(&path)
            } else {
                is_orphan_pack(&path)
            };
            if stale && path.is_file() && older(&path, cutoff)? {
                temps.push(path);
            }
        }
    }
    Ok(temps)
}

/// The folders in `tmp/`, each with what it holds: only a sync makes folders there (its staging,
/// `.sync-XXXXXX/`, removed when it ends), under the store lock held shared, so one found while
/// the lock is held exclusive is what a killed sync left.
pub fn temp_folders(store: &Store) -> Result<Vec<PathBuf>> {
    let dir = store.tmp_dir();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_path("list", &dir),
    };
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.with_path("list", &dir)?;
        if entry.file_type().with_path("stat", &entry.path())?.is_dir() {
            folders.push(entry.path());
        }
    }
    folders.sort();
    Ok(folders)
}

/// The bytes the files under `dir` hold (what a leftover folder takes).
pub fn folder_bytes(dir: &Path) -> u64 {
    ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .build()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// A `.pack` whose `.idx` is missing: a pack write interrupted before its index went in place.
fn is_orphan_pack(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "pack") && !path.with_extension("idx").exists()
}

/// Temp files as ctxfold and the reference implementation name them: `.<what>-XXXX.tmp`.
fn is_temp_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp"))
}

fn older(path: &Path, cutoff: SystemTime) -> Result<bool> {
    match fs::metadata(path) {
        Ok(meta) => Ok(meta.modified().with_path("stat", path)? < cutoff),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_path("stat", path),
    }
}
