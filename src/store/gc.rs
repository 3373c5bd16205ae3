//! Garbage collection: objects that no manifest references, and stale temp files, removed.
//!
//! Safe beside writers by two means together, as git, restic and kopia do it. First, the caller
//! holds the store lock exclusive while it plans and removes, so no writer that takes the lock
//! (every ctxfold writer, and the reference implementation's fold) is between writing an object
//! and committing the manifest that names it. Second, a grace period: only objects and temp files
//! whose mtime is older than the cutoff go, because a plumbing pipeline (`ctxfold-split --write |
//! ctxfold-write-manifest`) releases the lock between its two steps and leaves its objects
//! unreferenced for a moment, and writers refresh the mtime of every object they reuse.
//!
//! The roots are every manifest under `manifests/`, its subfolders included (`generations/`,
//! `conflicts/`). If any manifest cannot be read, nothing is removed: an unreadable manifest may
//! name objects that would otherwise look unreferenced.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::Store;
use crate::digest::Digest;
use crate::error::{IoContext, Result};

/// What a collection removes (or, in a dry run, would).
#[derive(Debug, Default)]
pub struct Plan {
    /// Objects some manifest names.
    pub referenced: u64,
    /// Unreferenced objects older than the cutoff, with their stored size.
    pub objects: Vec<(Digest, u64)>,
    /// Unreferenced objects kept because they are younger than the cutoff.
    pub young: u64,
    /// Temp files older than the cutoff.
    pub temps: Vec<PathBuf>,
}

/// Every object named by a manifest but those in `dropping` (manifests about to be removed), and
/// every registered zstd dictionary. Fails, naming the file, when any manifest cannot be read.
pub fn roots(store: &Store, dropping: &[PathBuf]) -> Result<HashSet<Digest>> {
    let mut roots = HashSet::new();
    let mut files = store.manifest_files()?;
    files.retain(|path| !dropping.contains(path));
    for path in &files {
        let manifest = Store::load_manifest_file(path).map_err(|e| {
            e.context("gc removes nothing while a manifest is unreadable (see ctxfold fsck)")
        })?;
        roots.extend(manifest.parts.iter().map(|p| p.object.sha256));
        roots.extend(manifest.settings.dictionary);
    }
    // Objects, not manifests, decide which dictionaries are still needed (see dictionary.rs).
    roots.extend(store.dictionaries()?);
    Ok(roots)
}

/// What to remove: objects no manifest but those in `dropping` references, and temp files, whose
/// mtime is before `cutoff`.
pub fn plan(store: &Store, cutoff: SystemTime, dropping: &[PathBuf]) -> Result<Plan> {
    let roots = roots(store, dropping)?;
    let mut plan = Plan::default();
    for entry in store.list_objects()? {
        match entry {
            Ok(digest) if roots.contains(&digest) => plan.referenced += 1,
            Ok(digest) => {
                let path = store.object_path(&digest);
                let Some(meta) = stat(&path)? else { continue };
                if meta.modified().with_path("stat", &path)? < cutoff {
                    plan.objects.push((digest, meta.len()));
                } else {
                    plan.young += 1;
                }
            }
            Err(path) if is_temp_name(&path) && older(&path, cutoff)? => plan.temps.push(path),
            Err(_) => {}
        }
    }
    for dir in [store.tmp_dir(), store.manifests_dir()] {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.with_path("list", &dir)?.path();
            let is_temp = dir == store.tmp_dir() || is_temp_name(&path);
            if is_temp && path.is_file() && older(&path, cutoff)? {
                plan.temps.push(path);
            }
        }
    }
    plan.temps.sort();
    Ok(plan)
}

/// Remove what `plan` lists, checking each object's mtime once more (a writer that does not take
/// the lock may just have reused it), and return what was removed: the plan without the objects
/// found in use since.
pub fn apply(store: &Store, plan: Plan, cutoff: SystemTime) -> Result<Plan> {
    let mut done = Plan {
        referenced: plan.referenced,
        young: plan.young,
        ..Plan::default()
    };
    for (digest, size) in plan.objects {
        let path = store.object_path(&digest);
        match stat(&path)? {
            Some(meta) if meta.modified().with_path("stat", &path)? < cutoff => {
                store.remove_object(&digest)?;
                done.objects.push((digest, size));
            }
            _ => done.young += 1,
        }
    }
    for temp in plan.temps {
        super::remove_if_present(&temp)?;
        done.temps.push(temp);
    }
    Ok(done)
}

/// Temp files as ctxfold and the reference implementation name them: `.<what>-XXXX.tmp`.
fn is_temp_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp"))
}

fn stat(path: &Path) -> Result<Option<fs::Metadata>> {
    match fs::metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_path("stat", path),
    }
}

fn older(path: &Path, cutoff: SystemTime) -> Result<bool> {
    Ok(match stat(path)? {
        Some(meta) => meta.modified().with_path("stat", path)? < cutoff,
        None => false,
    })
}
