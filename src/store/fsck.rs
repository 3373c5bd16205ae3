//! Checking a store: every manifest readable (loose or packed: the table of packed manifests
//! against its bodies) and every object it names present; with `full`, every
//! pack checked whole (index sorted and consistent with the pack, every block's checksum, every
//! object's sha256), every loose object and every object of the reference's generation decoded and
//! re-hashed, and every manifest's reconstruction checked.
//!
//! Findings are reported one at a time as they are found. A damaged pack block is reported with the
//! sessions it hits. Unreferenced objects are a note, not a fault (git's dangling objects): gc
//! removes them.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;

use rayon::prelude::*;

use super::Store;
use super::manifest::Manifest;
use crate::digest::Digest;
use crate::error::Result;
use crate::odb::{Listed, Place};
use crate::seeds::catalog::{self, Catalog};

/// What fsck finds; as JSON, `{"type":"bad_manifest",…}` with the variant's fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Finding {
    BadManifest {
        path: PathBuf,
        why: String,
    },
    MissingObject {
        #[serde(rename = "sha256")]
        digest: Digest,
        manifest: PathBuf,
    },
    CorruptObject {
        #[serde(rename = "sha256")]
        digest: Digest,
        why: String,
    },
    /// Part of a pack (or the reference's generation) that does not read back: `what` names the
    /// file and block, `sessions` the folded sessions that lose something.
    BadPack {
        what: String,
        sessions: Vec<String>,
    },
    /// A file among the loose objects that is not named as an object is (nor a temp file).
    StrayFile {
        path: PathBuf,
    },
    BadReconstruction {
        path: PathBuf,
        why: String,
    },
    #[serde(rename = "unreferenced_object")]
    Unreferenced {
        #[serde(rename = "sha256")]
        digest: Digest,
    },
    /// A line of the seed catalog that names no batch: `catalog.jsonl:N: why`.
    BadCatalogLine {
        why: String,
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
            Self::BadPack { what, sessions } => {
                write!(f, "bad pack {what}")?;
                match sessions.as_slice() {
                    [] => Ok(()),
                    some => write!(f, "; sessions hit: {}", some.join(", ")),
                }
            }
            Self::StrayFile { path } => write!(f, "stray file {}", path.display()),
            Self::BadCatalogLine { why } => write!(f, "bad seed catalog line {why}"),
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
    let odb = store.odb();
    let mut manifests: Vec<(PathBuf, Manifest)> = Vec::new();
    let bodies = check_packed(store, report)?;
    // A table that does not read names no manifest fsck could check: the loose ones are.
    let files = match store.packed() {
        Ok(_) => store.manifest_files()?,
        Err(_) => store.loose_manifest_files()?,
    };
    for path in files {
        match store.manifest_at(&path) {
            Ok(Some(manifest)) => manifests.push((path, manifest)),
            // Removed since listed (an `rm` at the same moment).
            Ok(None) => {}
            Err(e) => report(Finding::BadManifest {
                path,
                why: e.without_context(),
            })?,
        }
    }
    // Each referenced object with the size its first manifest gives it (a packed body's own).
    let mut sizes: HashMap<Digest, u64> = bodies.into_iter().collect();
    let mut missing: HashSet<Digest> = HashSet::new();
    for (path, manifest) in &manifests {
        // Once per object and manifest, however many parts name it.
        let mut named = HashSet::new();
        for part in &manifest.parts {
            let digest = part.object.sha256;
            if !named.insert(digest) {
                continue;
            }
            if sizes.insert(digest, part.object.raw_bytes).is_none() && !odb.contains(&digest)? {
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
    let dictionaries: HashSet<Digest> = odb.dictionaries()?.into_iter().collect();
    for digest in &dictionaries {
        if !sizes.contains_key(digest) && !odb.contains(digest)? {
            report(Finding::MissingObject {
                digest: *digest,
                manifest: odb.dictionaries_dir().join(digest.to_hex()),
            })?;
        }
    }
    // The seed catalog's batches are roots too; the catalog names the missing one.
    let catalog = Catalog::load(store)?;
    for why in &catalog.problems {
        report(Finding::BadCatalogLine { why: why.clone() })?;
    }
    for batch in catalog.batches() {
        let digest = batch.object;
        if sizes.insert(digest, batch.bytes).is_none() && !odb.contains(&digest)? {
            missing.insert(digest);
        }
        if missing.contains(&digest) {
            report(Finding::MissingObject {
                digest,
                manifest: catalog::path(store),
            })?;
        }
    }
    let sessions_of = |objects: &[Digest]| -> Vec<String> {
        let hit: HashSet<&Digest> = objects.iter().collect();
        let mut ids: Vec<String> = manifests
            .iter()
            .filter(|(_, m)| m.parts.iter().any(|p| hit.contains(&p.object.sha256)))
            .map(|(_, m)| m.session.id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    };
    let mut present = HashSet::new();
    let mut loose = Vec::new();
    for entry in odb.list()? {
        match entry {
            Listed::Object { digest, place } => {
                present.insert(digest);
                if place == Place::Loose {
                    loose.push(digest);
                }
            }
            Listed::Stray(path)
                if path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp")) => {}
            Listed::Stray(path) => report(Finding::StrayFile { path })?,
            Listed::Broken { what, why } => report(Finding::BadPack {
                what: format!("{}: {why}", what.display()),
                sessions: Vec::new(),
            })?,
        }
    }
    let mut corrupt: HashSet<Digest> = HashSet::new();
    if full {
        let packs = odb.packs()?;
        let verified: Vec<_> = packs.par_iter().map(|m| odb.verify_pack(m)).collect();
        for problem in verified {
            for problem in problem {
                corrupt.extend(problem.objects.iter().copied());
                report(Finding::BadPack {
                    what: problem.to_string(),
                    sessions: sessions_of(&problem.objects),
                })?;
            }
        }
        for problem in odb.verify_codexfold() {
            corrupt.extend(problem.object);
            report(Finding::BadPack {
                what: problem.to_string(),
                sessions: sessions_of(problem.object.as_slice()),
            })?;
        }
        let results: Vec<_> = loose
            .par_iter()
            .map(|digest| {
                let mut sink = std::io::sink();
                odb.read_loose(digest, sizes.get(digest).copied(), &mut sink)
                    .err()
                    .map(|e| e.without_context())
            })
            .collect();
        for (digest, error) in loose.iter().zip(results) {
            if let Some(why) = error {
                corrupt.insert(*digest);
                report(Finding::CorruptObject {
                    digest: *digest,
                    why,
                })?;
            }
        }
    }
    let mut unreferenced: Vec<&Digest> = present
        .iter()
        .filter(|d| !sizes.contains_key(d) && !dictionaries.contains(d))
        .collect();
    unreferenced.sort();
    for digest in unreferenced {
        report(Finding::Unreferenced { digest: *digest })?;
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
        let results: Vec<_> = sound
            .par_iter()
            .map(|(_, m)| {
                super::reconstruct::verify(store, m)
                    .err()
                    .map(|e| e.to_string())
            })
            .collect();
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

/// The table of packed manifests against its bodies; returns each body read, with its size (they
/// are roots). A body that a loose file stands over is checked here: present, a manifest, of the
/// session its name says; the others are read as the manifests they are, by [`check`]'s loop,
/// which reports the same faults.
fn check_packed(
    store: &Store,
    report: &mut dyn FnMut(Finding) -> Result<()>,
) -> Result<Vec<(Digest, u64)>> {
    let table = match store.packed() {
        Ok(table) => table,
        Err(e) => {
            report(Finding::BadManifest {
                path: store.packed_path(),
                why: e.without_context(),
            })?;
            return Ok(Vec::new());
        }
    };
    let mut bodies = Vec::new();
    for (name, body) in table.iter() {
        let path = store.manifests_dir().join(name);
        let read = store.odb().read_to_vec(&body, None);
        if let Ok(bytes) = &read {
            bodies.push((body, bytes.len() as u64));
        }
        if !path.exists() {
            continue;
        }
        let why = match read.and_then(|bytes| Manifest::from_slice(&bytes, name)) {
            Err(e) => format!("its packed body {body}: {}", e.without_context()),
            Ok(m) if super::named::session_of(name) != Some(m.session.id.as_str()) => format!(
                "{} names body {body} for it, of session {:?}",
                super::packed::FILE,
                m.session.id
            ),
            Ok(_) => continue,
        };
        report(Finding::BadManifest { path, why })?;
    }
    Ok(bodies)
}
