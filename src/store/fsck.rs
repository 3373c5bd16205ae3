//! Checking a store: every manifest readable and every object it names present; with `full`, every
//! object decompressed and re-hashed and every manifest's reconstruction checked.
//!
//! Findings are reported one at a time as they are found. Unreferenced objects are a note, not a
//! fault (git's dangling objects): gc removes them.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;

use super::Store;
use super::manifest::Manifest;
use crate::digest::Digest;
use crate::error::Result;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    BadManifest {
        path: PathBuf,
        why: String,
    },
    MissingObject {
        digest: Digest,
        manifest: PathBuf,
    },
    CorruptObject {
        digest: Digest,
        why: String,
    },
    /// A file under `objects/` that is not named as an object is (nor a temp file).
    StrayFile {
        path: PathBuf,
    },
    BadReconstruction {
        path: PathBuf,
        why: String,
    },
    Unreferenced {
        digest: Digest,
    },
}

impl Finding {
    /// Whether this makes the store unsound (everything but an unreferenced object).
    pub fn is_fault(&self) -> bool {
        !matches!(self, Self::Unreferenced { .. })
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadManifest { path, why } => write!(f, "bad manifest {}: {why}", path.display()),
            Self::MissingObject { digest, manifest } => write!(
                f,
                "missing object {digest} (named by {})",
                manifest.display()
            ),
            Self::CorruptObject { digest, why } => write!(f, "corrupt object {digest}: {why}"),
            Self::StrayFile { path } => write!(f, "stray file {}", path.display()),
            Self::BadReconstruction { path, why } => {
                write!(f, "bad reconstruction {}: {why}", path.display())
            }
            Self::Unreferenced { digest } => write!(f, "unreferenced object {digest}"),
        }
    }
}

/// Check `store`, handing each finding to `report` as it is found.
pub fn check(
    store: &Store,
    full: bool,
    report: &mut dyn FnMut(Finding) -> Result<()>,
) -> Result<()> {
    let mut manifests: Vec<(PathBuf, Manifest)> = Vec::new();
    for path in store.manifest_files()? {
        match Store::load_manifest_file(&path) {
            Ok(manifest) => manifests.push((path, manifest)),
            Err(e) => report(Finding::BadManifest {
                path,
                why: strip_path(&e.to_string()),
            })?,
        }
    }
    // Each referenced object with the size its first manifest gives it.
    let mut sizes: HashMap<Digest, u64> = HashMap::new();
    let mut missing: HashSet<Digest> = HashSet::new();
    for (path, manifest) in &manifests {
        // Once per object and manifest, however many parts name it.
        let mut named = HashSet::new();
        for part in &manifest.parts {
            let digest = part.object.sha256;
            if !named.insert(digest) {
                continue;
            }
            if sizes.insert(digest, part.object.raw_bytes).is_none()
                && store.odb().stored_bytes(&digest)?.is_none()
            {
                missing.insert(digest);
            }
            if missing.contains(&digest) {
                report(Finding::MissingObject {
                    digest,
                    manifest: path.clone(),
                })?;
            }
        }
    }
    // Registered zstd dictionaries are roots too; the registration names the missing one.
    let dictionaries: HashSet<Digest> = store.odb().dictionaries()?.into_iter().collect();
    for digest in &dictionaries {
        if !sizes.contains_key(digest) && store.odb().stored_bytes(digest)?.is_none() {
            report(Finding::MissingObject {
                digest: *digest,
                manifest: store.odb().dictionaries_dir().join(digest.to_hex()),
            })?;
        }
    }
    let mut present = Vec::new();
    for entry in store.odb().list()? {
        match entry {
            Ok(digest) => present.push(digest),
            Err(path)
                if path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp")) => {}
            Err(path) => report(Finding::StrayFile { path })?,
        }
    }
    let mut corrupt: HashSet<Digest> = HashSet::new();
    if full {
        let results = crate::parallel::map(
            &present,
            || (),
            |(), digest| {
                let mut sink = std::io::sink();
                store
                    .odb()
                    .read(digest, sizes.get(digest).copied(), &mut sink)
                    .err()
                    .map(|e| e.to_string())
            },
            || (),
        );
        for (digest, error) in present.iter().zip(results) {
            if let Some(why) = error {
                corrupt.insert(*digest);
                report(Finding::CorruptObject {
                    digest: *digest,
                    why,
                })?;
            }
        }
    }
    for digest in &present {
        if !sizes.contains_key(digest) && !dictionaries.contains(digest) {
            report(Finding::Unreferenced { digest: *digest })?;
        }
    }
    if full {
        // Only manifests whose objects are all sound: the others are already reported.
        let sound: Vec<&(PathBuf, Manifest)> = manifests
            .iter()
            .filter(|(_, m)| {
                m.parts.iter().all(|p| {
                    !missing.contains(&p.object.sha256) && !corrupt.contains(&p.object.sha256)
                })
            })
            .collect();
        let results = crate::parallel::map(
            &sound,
            || (),
            |(), (_, m)| {
                super::reconstruct::verify(store, m)
                    .err()
                    .map(|e| e.to_string())
            },
            || (),
        );
        for ((path, _), error) in sound.into_iter().zip(results) {
            if let Some(why) = error {
                report(Finding::BadReconstruction {
                    path: path.clone(),
                    why,
                })?;
            }
        }
    }
    Ok(())
}

/// Manifest errors start with the file's path, which the finding already names.
fn strip_path(message: &str) -> String {
    message
        .split_once(": ")
        .map_or(message, |(_, rest)| rest)
        .to_string()
}
