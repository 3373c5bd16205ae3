//! What a store holds and what it costs: logical bytes (the sessions as they were), unique raw
//! bytes (after dedupe), stored bytes (after compression), disk bytes actually allocated.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

use super::Store;
use super::manifest::PartKind;
use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::odb::{Listed, Place};
use crate::seeds::catalog::{self, Catalog};
use crate::seeds::index;

#[derive(Debug, Default, Serialize)]
pub struct Usage {
    /// Manifests read (conflicts and generations included).
    pub manifests: u64,
    /// The sessions' bytes as they were: the sum of every manifest's source size.
    pub logical_bytes: u64,
    /// Blocks allocated for everything under the store (`st_blocks` × 512), its git mirror
    /// included.
    pub disk_bytes: u64,
    /// Of that, the git mirror's (`mirror.git`).
    pub mirror_disk_bytes: u64,
    /// Raw bytes of the distinct objects the manifests name.
    pub unique_raw_bytes: u64,
    /// Distinct objects, wherever they live.
    pub objects: u64,
    /// Objects first named as a field part, and as a residual part.
    pub field_objects: u64,
    pub residual_objects: u64,
    /// Objects holding seed index batches (see `seeds::catalog`).
    pub seed_objects: u64,
    pub unreferenced_objects: u64,
    pub loose_objects: u64,
    /// The loose object files' sizes.
    pub loose_bytes: u64,
    pub packs: u64,
    pub packed_objects: u64,
    /// The packs' sizes, their indexes included.
    pub pack_bytes: u64,
    /// Objects in the reference implementation's pack generation.
    pub codexfold_objects: u64,
    /// Loose files and packs: what the objects take after zstd.
    pub stored_bytes: u64,
    pub manifest_bytes: u64,
    /// The seed indexes' raw bytes: the catalog's batches and the files older stores keep in
    /// `context-fold/`.
    pub seed_index_bytes: u64,
    /// The seed catalog's own size.
    pub seed_catalog_bytes: u64,
    /// logical − disk: what folding saves, all told (negative while the store's overhead outweighs
    /// it, as for a few small sessions).
    pub saved_bytes: i64,
    /// logical / unique raw.
    pub dedup_ratio: f64,
    /// unique raw / stored.
    pub compression_ratio: f64,
}

/// Measure `store`. Manifests that cannot be read are skipped and returned as messages.
pub fn measure(store: &Store) -> Result<(Usage, Vec<String>)> {
    let mut usage = Usage::default();
    let mut problems = Vec::new();
    let mut kinds: HashMap<Digest, (PartKind, u64)> = HashMap::new();
    for path in store.manifest_files()? {
        // A packed manifest's body is an object, counted with the packs.
        usage.manifest_bytes += fs::metadata(&path).map_or(0, |m| m.len());
        match store.manifest_at(&path) {
            // Removed since listed (an `rm` at the same moment).
            Ok(None) => {}
            Ok(Some(manifest)) => {
                usage.manifests += 1;
                usage.logical_bytes += manifest.source.bytes;
                for part in &manifest.parts {
                    kinds
                        .entry(part.object.sha256)
                        .or_insert((part.kind, part.object.raw_bytes));
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    for (kind, raw) in kinds.values() {
        usage.unique_raw_bytes += raw;
        match kind {
            PartKind::Field => usage.field_objects += 1,
            PartKind::Residual => usage.residual_objects += 1,
        }
    }
    let catalog = Catalog::load(store)?;
    problems.extend(catalog.problems.iter().cloned());
    let mut seeds = HashSet::new();
    for batch in catalog.batches() {
        usage.seed_index_bytes += batch.bytes;
        seeds.insert(batch.object);
    }
    usage.seed_objects = seeds.len() as u64;
    // Packed manifests' bodies are objects that the table refers to.
    let bodies: HashSet<Digest> = store.packed()?.iter().map(|(_, body)| body).collect();
    for id in index::legacy_sessions(store)? {
        let path = index::legacy_path(store, &id)?;
        usage.seed_index_bytes += fs::metadata(&path).with_path("stat", &path)?.len();
    }
    usage.seed_catalog_bytes = match fs::metadata(catalog::path(store)) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e).with_path("stat", &catalog::path(store)),
    };
    let odb = store.odb();
    for member in odb.packs()? {
        usage.packs += 1;
        usage.pack_bytes += member.pack.pack_bytes() + member.pack.index_bytes();
    }
    let mut seen = HashSet::new();
    for entry in odb.list()? {
        let Listed::Object { digest, place } = entry else {
            continue;
        };
        match place {
            Place::Pack(_) => usage.packed_objects += 1,
            Place::Loose => {
                usage.loose_objects += 1;
                usage.loose_bytes += odb.loose_modified(&digest)?.map_or(0, |(_, size)| size);
            }
            Place::Codexfold => usage.codexfold_objects += 1,
        }
        if seen.insert(digest) {
            usage.objects += 1;
            usage.unreferenced_objects += u64::from(
                ![&seeds, &bodies].iter().any(|set| set.contains(&digest))
                    && !kinds.contains_key(&digest),
            );
        }
    }
    usage.stored_bytes = usage.loose_bytes + usage.pack_bytes;
    usage.disk_bytes = allocated(store.root())?;
    usage.mirror_disk_bytes = allocated(&crate::mirror::default_dir(store))?;
    usage.saved_bytes = usage.logical_bytes as i64 - usage.disk_bytes as i64;
    usage.dedup_ratio = crate::cli::human::ratio(usage.logical_bytes, usage.unique_raw_bytes);
    usage.compression_ratio = crate::cli::human::ratio(usage.unique_raw_bytes, usage.stored_bytes);
    Ok((usage, problems))
}

/// Bytes allocated on disk for `dir` and everything under it.
pub(crate) fn allocated(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_path("list", &dir),
        };
        for entry in entries {
            let entry = entry.with_path("list", &dir)?;
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                // Gone since listed: another ctxfold's temp file renamed, a manifest removed.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_path("stat", &entry.path()),
            };
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(total)
}
