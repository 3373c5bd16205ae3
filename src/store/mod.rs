//! The Fold V1 store on disk: where things live, created private, and the rules for session ids.
//!
//! ```text
//! <store>/manifests/<session-id>.json                  fold-v1 manifests
//! <store>/manifests/generations/<session-id>/…json     earlier versions, kept (see `generations`)
//! <store>/manifests/packed.json                        manifests packed by gc: name → body object
//! <store>/objects/<2 hex>/<sha256>.zst                 immutable zstd objects named by raw sha256
//! <store>/packs-ctxfold/<sha256>.pack, .idx            packed objects (see `odb`)
//! <store>/seeds/catalog.jsonl                          where each session's seed index is (objects)
//! <store>/context-fold/<session-id>/                   the extension's other files; older stores'
//!                                                      seed-index.jsonl (read, moved by gc)
//! <store>/dictionaries/<sha256>                        registered zstd dictionaries (objects too)
//! <store>/dictionaries/CURRENT                         the dictionary new objects are written with
//! <store>/cache/heads.jsonl                           packed manifests' heads (see `heads`)
//! <store>/tmp/                                         temp files, renamed into place
//! <store>/locks/objects.lock                           flock shared with the reference implementation
//! <store>/locks/seeds.lock                             held while the seed catalog is appended to
//! ```
//!
//! This module knows nothing of sessions' contents or of ledgers; see `segment` for how bytes
//! become parts, `odb` for objects and `manifest`, `reconstruct` for the rest of the engine.

pub mod bodies;
pub mod by_block;
pub mod commit;
pub mod families;
pub mod fsck;
pub mod gc;
pub mod generations;
pub mod heads;
pub mod ids;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod named;
pub mod packed;
pub mod packing;
pub mod private;
pub mod reconstruct;
pub mod restore_temp;
pub mod skim;
pub mod usage;
pub mod writer;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};
use crate::files::{create_private_dir, not_a_directory};
use crate::odb::Odb;

#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    odb: Odb,
    /// The table of packed manifests last read, and which file it was (see `packed`).
    packed: Arc<Mutex<Option<packed::Read>>>,
    /// Packed manifests' bodies read so far (see `bodies`).
    bodies: Arc<Mutex<bodies::Bodies>>,
}

impl Store {
    /// A handle on a store that may not exist yet; nothing is touched. A relative `root` is taken
    /// from the current folder once, here: paths under the store are handed to git (which reads
    /// some relative to the mirror) and kept in caches, and must not depend on where they are read.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = crate::files::absolute(&root.into()).into_owned();
        let odb = Odb::at(&root);
        Self {
            root,
            odb,
            packed: Arc::default(),
            bodies: Arc::default(),
        }
    }

    /// The store's objects.
    pub fn odb(&self) -> &Odb {
        &self.odb
    }

    /// This store as a reader of the plain Fold V1 layout sees it: its loose objects alone.
    pub fn loose_only(&self) -> Store {
        Store {
            root: self.root.clone(),
            odb: self.odb.loose_only(),
            packed: self.packed.clone(),
            bodies: self.bodies.clone(),
        }
    }

    /// Open an existing store for reading.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let store = Self::at(root);
        if let Ok(meta) = fs::metadata(&store.root)
            && !meta.is_dir()
        {
            return Err(not_a_directory(&store.root));
        }
        let mut found = false;
        for dir in [store.manifests_dir(), store.objects_dir()] {
            match fs::metadata(&dir) {
                Ok(meta) if meta.is_dir() => found = true,
                Ok(_) => return Err(not_a_directory(&dir)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                // Permission denied says so, with the path: never "not a store".
                Err(e) => return Err(Error::io("open store", &dir, e)),
            }
        }
        if !found {
            return Err(Error::not_found(format!(
                "{}: not a ctxfold store yet (no manifests/ or objects/): the first ctxfold fold \
                 --apply that finds sessions creates it, as ctxfold clone URL does",
                store.root.display()
            )));
        }
        private::check(&store)?;
        Ok(store)
    }

    /// Open a store for writing, creating its skeleton (private) when it does not exist.
    pub fn init(root: impl Into<PathBuf>) -> Result<Self> {
        let store = Self::at(root);
        // Before anything is created in a folder others could write.
        private::check(&store)?;
        for dir in [
            store.root.clone(),
            store.objects_dir(),
            store.manifests_dir(),
            store.tmp_dir(),
            store.locks_dir(),
        ] {
            create_private_dir(&dir)?;
        }
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn objects_dir(&self) -> PathBuf {
        self.odb.loose_dir().to_path_buf()
    }

    pub fn manifests_dir(&self) -> PathBuf {
        self.root.join("manifests")
    }

    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// What this store keeps for speed only, never mirrored (the fold's stamp cache).
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    pub fn context_fold_dir(&self) -> PathBuf {
        self.root.join("context-fold")
    }

    /// Where the seed catalog lives (see `seeds::catalog`).
    pub fn seeds_dir(&self) -> PathBuf {
        self.root.join("seeds")
    }

    /// `manifests/<id>.json`, for an id already checked by [`check_session_id`]: the session's
    /// manifest's name, whether it is loose there or packed (see `named`).
    pub fn manifest_path(&self, id: &str) -> PathBuf {
        self.manifests_dir().join(format!("{id}.json"))
    }
}

/// A session id becomes a file name, so it must be a plain one: not empty, no `/`, `\` or NUL, no
/// control characters, no leading `.` (which also rules out `.` and `..`), and short enough.
pub fn check_session_id(id: &str) -> Result<()> {
    let problem = if id.is_empty() {
        Some("is empty")
    } else if id.starts_with('.') {
        Some("starts with '.'")
    } else if id.contains(['/', '\\']) {
        Some("holds a path separator")
    } else if id.chars().any(char::is_control) {
        Some("holds a control character")
    } else if id.len() > 200 {
        Some("is longer than 200 bytes")
    } else if id == packed::RESERVED_ID {
        Some("is reserved (manifests/packed.json is the table of packed manifests)")
    } else {
        None
    };
    match problem {
        Some(why) => Err(Error::usage(format!("unsafe session id {id:?}: it {why}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn unsafe_session_ids_are_refused() {
        for bad in [
            "", ".", "..", ".hidden", "../x", "a/b", "a\\b", "a\0b", "a\nb", "packed",
        ] {
            assert!(check_session_id(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_session_id(&"x".repeat(201)).is_err());
        for good in [
            "019e1625-789d-76c0-80ab-3724b5ddb799",
            "a.b",
            "x..y",
            "é",
            "packed2",
        ] {
            check_session_id(good).unwrap();
        }
    }

    #[test]
    fn init_creates_a_private_skeleton() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("store");
        let store = Store::init(&root).unwrap();
        for sub in [
            store.root().to_path_buf(),
            store.objects_dir(),
            store.tmp_dir(),
        ] {
            let mode = fs::metadata(&sub).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", sub.display());
        }
        Store::open(&root).unwrap();
        assert!(Store::open(dir.path()).is_err());
    }
}
