//! What a store holds and what it costs: logical bytes (the sessions as they were), unique raw
//! bytes (after dedupe), stored bytes (after compression), disk bytes actually allocated.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::Serialize;

use super::Store;
use super::manifest::PartKind;
use crate::digest::Digest;
use crate::error::{IoContext, Result};

#[derive(Debug, Default, Serialize)]
pub struct Usage {
    /// Manifests read (conflicts and generations included).
    pub manifests: u64,
    /// The sessions' bytes as they were: the sum of every manifest's source size.
    pub logical_bytes: u64,
    /// Raw bytes of the distinct objects the manifests name.
    pub unique_raw_bytes: u64,
    pub objects: u64,
    /// Objects first named as a field part, and as a residual part.
    pub field_objects: u64,
    pub residual_objects: u64,
    pub unreferenced_objects: u64,
    /// Compressed size of every object file.
    pub stored_bytes: u64,
    pub manifest_bytes: u64,
    /// Blocks allocated for everything under the store (`st_blocks` × 512).
    pub disk_bytes: u64,
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
        usage.manifest_bytes += fs::metadata(&path).with_path("stat", &path)?.len();
        match Store::load_manifest_file(&path) {
            Ok(manifest) => {
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
    for digest in store.odb().list()?.flatten() {
        usage.objects += 1;
        usage.stored_bytes += store.odb().stored_bytes(&digest)?.unwrap_or(0);
        if !kinds.contains_key(&digest) {
            usage.unreferenced_objects += 1;
        }
    }
    usage.disk_bytes = allocated(store.root())?;
    usage.dedup_ratio = crate::cli::human::ratio(usage.logical_bytes, usage.unique_raw_bytes);
    usage.compression_ratio = crate::cli::human::ratio(usage.unique_raw_bytes, usage.stored_bytes);
    Ok((usage, problems))
}

/// Bytes allocated on disk for `dir` and everything under it.
fn allocated(dir: &Path) -> Result<u64> {
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
            let meta = entry.metadata().with_path("stat", &entry.path())?;
            total += meta.blocks() * 512;
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    Ok(total)
}
