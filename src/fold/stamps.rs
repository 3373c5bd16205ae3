//! The stamp cache: for each source found up to date or folded, the stamp it had (size, mtime and
//! ctime to the nanosecond, inode, device) and the size and sha256 of its bytes then. A source
//! whose stamp is unchanged and whose manifest records those bytes is up to date without being
//! read, as git's index answers `git status` from metadata.
//!
//! A cache, never a record: it lives in `<store>/cache/stamps.jsonl.zst`, is not mirrored, and a
//! missing or damaged file (or an entry that does not parse) only means sources are read again.
//! Compressed, since it names every session's path: 62 KB of JSON for bench/forks' 182 sessions
//! (4% of the store after `gc --aggressive`), 1.7 MB for 4,914. An earlier ctxfold's plain
//! `stamps.jsonl` is read while there is no compressed one, and removed by the next save.
//! An entry can only say "these bytes were here at this stamp"; the manifest must agree too.
//! Paths are kept absolute: a session folded by a relative path (`fold ./s.jsonl`, a relative
//! `CODEX_HOME`) is looked up later from another folder, or by the absolute path its manifest
//! records (`log`, `status`, `grep`), and must be found.
//!
//! The same cache, with what a file's stamp vouches for in place of its bytes, keeps the seed
//! index files fold merged (`fold::merges`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::stamp::Stamp;
use crate::error::{IoContext, Result};
use crate::store::Store;
use crate::store::manifest::Source;

/// How the cache is compressed: it is rewritten whole by every fold that changes it.
const LEVEL: i32 = 3;

#[derive(Serialize, Deserialize)]
struct Entry<V> {
    path: String,
    #[serde(flatten)]
    stamp: Stamp,
    source: V,
}

/// Each path's stamp when last seen, with what that stamp vouches for (`V`: a source's bytes).
pub struct Stamps<V = Source> {
    file: PathBuf,
    /// Where an earlier ctxfold kept it, uncompressed.
    legacy: PathBuf,
    entries: Mutex<HashMap<PathBuf, (Stamp, V)>>,
    changed: Mutex<bool>,
}

impl Stamps {
    /// The cache of `store` (empty when it has none yet).
    pub fn load(store: &Store) -> Self {
        Self::load_named(store, "stamps.jsonl")
    }
}

impl<V: Clone + PartialEq + Serialize + DeserializeOwned> Stamps<V> {
    /// The cache `<store>/cache/<name>.zst`, or an earlier ctxfold's `<name>` (empty when there
    /// is neither yet).
    pub fn load_named(store: &Store, name: &str) -> Self {
        let legacy = store.cache_dir().join(name);
        let file = store.cache_dir().join(format!("{name}.zst"));
        let text = match std::fs::File::open(&file) {
            Ok(compressed) => zstd::decode_all(compressed).ok(),
            Err(_) => std::fs::read(&legacy).ok(),
        };
        let mut entries = HashMap::new();
        for line in text.as_deref().unwrap_or_default().split(|&b| b == b'\n') {
            if let Ok(entry) = serde_json::from_slice::<Entry<V>>(line) {
                // An earlier ctxfold kept paths as they were given: a relative one names
                // nothing certain, and is read again.
                let path = PathBuf::from(entry.path);
                if path.is_absolute() {
                    entries.insert(path, (entry.stamp, entry.source));
                }
            }
        }
        Self {
            file,
            legacy,
            entries: Mutex::new(entries),
            changed: Mutex::new(false),
        }
    }

    /// Whether `path`, now at `stamp`, held `source`'s bytes when last seen.
    pub fn knows(&self, path: &Path, stamp: &Stamp, source: &V) -> bool {
        self.entries
            .lock()
            .expect("never poisoned")
            .get(&*crate::files::absolute(path))
            .is_some_and(|(s, src)| s == stamp && src == source)
    }

    /// What `path` holds if it is still at `stamp`, as when it was last seen.
    pub fn at(&self, path: &Path, stamp: &Stamp) -> Option<V> {
        let entries = self.entries.lock().expect("never poisoned");
        let (seen, source) = entries.get(&*crate::files::absolute(path))?;
        (seen == stamp).then(|| source.clone())
    }

    /// What `path` was last recorded to hold, whatever its stamp now.
    pub fn last(&self, path: &Path) -> Option<V> {
        let entries = self.entries.lock().expect("never poisoned");
        entries
            .get(&*crate::files::absolute(path))
            .map(|(_, source)| source.clone())
    }

    /// `path` at `stamp` holds `source`'s bytes (they were just read, or just folded).
    pub fn record(&self, path: &Path, stamp: &Stamp, source: &V) {
        let previous = self.entries.lock().expect("never poisoned").insert(
            crate::files::absolute(path).into_owned(),
            (*stamp, source.clone()),
        );
        if previous.is_none_or(|(s, v)| s != *stamp || v != *source) {
            *self.changed.lock().expect("never poisoned") = true;
        }
    }

    /// Write the cache back (atomically) if anything changed. Entries of sources that are gone
    /// are dropped.
    pub fn save(&self, store: &Store) -> Result<()> {
        if !*self.changed.lock().expect("never poisoned") {
            return Ok(());
        }
        let entries = self.entries.lock().expect("never poisoned");
        let mut text = Vec::new();
        let mut sorted: Vec<_> = entries.iter().filter(|(path, _)| path.exists()).collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (path, (stamp, source)) in sorted {
            // Paths that are not UTF-8 are not cached (their sources are simply read again).
            let Some(path) = path.to_str() else { continue };
            let entry = Entry {
                path: path.to_string(),
                stamp: *stamp,
                source: source.clone(),
            };
            serde_json::to_writer(&mut text, &entry).expect("entries serialize");
            text.push(b'\n');
        }
        let compressed = zstd::bulk::compress(&text, LEVEL).with_path("write", &self.file)?;
        crate::files::create_private_dir(&store.cache_dir())?;
        crate::files::atomic::write_file(
            &store.tmp_dir(),
            ".stamps-",
            &self.file,
            &compressed,
            true,
        )?;
        crate::files::remove_if_present(&self.legacy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_cache_loads_with_every_entry() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path().join("store")).unwrap();
        let session = dir.path().join("session.jsonl");
        std::fs::write(&session, b"{}\n").unwrap();
        let stamp = Stamp::of(&session).unwrap();
        let source = Source {
            bytes: 3,
            sha256: crate::digest::Digest::of(b"{}\n"),
        };
        let stamps = Stamps::load(&store);
        assert!(!stamps.knows(&session, &stamp, &source));
        stamps.record(&session, &stamp, &source);
        stamps.save(&store).unwrap();
        let again = Stamps::load(&store);
        assert!(again.knows(&session, &stamp, &source));
        let other = Source { bytes: 4, ..source };
        assert!(!again.knows(&session, &stamp, &other));
        let (compressed, legacy) = (
            store.cache_dir().join("stamps.jsonl.zst"),
            store.cache_dir().join("stamps.jsonl"),
        );
        assert!(zstd::decode_all(&std::fs::read(&compressed).unwrap()[..]).is_ok());
        // An earlier ctxfold's plain cache is read while there is no compressed one, and goes
        // with the next save.
        let text = zstd::decode_all(&std::fs::read(&compressed).unwrap()[..]).unwrap();
        std::fs::write(&legacy, &text).unwrap();
        std::fs::remove_file(&compressed).unwrap();
        let earlier = Stamps::load(&store);
        assert!(earlier.knows(&session, &stamp, &source));
        earlier.record(&session, &stamp, &other);
        earlier.save(&store).unwrap();
        assert!(!legacy.exists());
        assert!(Stamps::load(&store).knows(&session, &stamp, &other));
        // Killed between the two (the compressed cache in place, the plain one not yet removed):
        // the compressed one is read.
        std::fs::write(&legacy, text).unwrap();
        let both = Stamps::load(&store);
        assert!(both.knows(&session, &stamp, &other));
        assert!(!both.knows(&session, &stamp, &source));
    }
}
