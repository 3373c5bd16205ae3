//! What the ends of each folded session say (its agent and cwd from its opening, its last
//! activity), kept by the sha256 of its bytes, so that a listing of thousands of sessions does
//! not decode two blocks of every one each time (`ctxfold log`). The same bytes always end alike:
//! an entry is never stale, only unused once no session has those bytes.
//!
//! A cache, never a record: `<store>/cache/ends.jsonl`, not mirrored; a missing or damaged file
//! (or an entry that does not parse) only means the ends are read again.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::agents::Agent;
use crate::digest::Digest;
use crate::error::Result;
use crate::store::Store;
use crate::time::Instant;

/// What a session's ends say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ends {
    pub agent: Option<Agent>,
    pub cwd: Option<String>,
    /// Its last activity.
    pub date: Option<Instant>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    sha256: Digest,
    agent: Option<Agent>,
    cwd: Option<String>,
    /// Milliseconds since the epoch, as [`Instant`] keeps them.
    date_ms: Option<i64>,
}

pub struct EndsCache {
    file: PathBuf,
    entries: Mutex<HashMap<Digest, Ends>>,
    changed: Mutex<bool>,
}

impl EndsCache {
    /// The cache of `store` (empty when it has none yet).
    pub fn load(store: &Store) -> Self {
        let file = store.cache_dir().join("ends.jsonl");
        let mut entries = HashMap::new();
        if let Ok(reader) = std::fs::File::open(&file).map(std::io::BufReader::new) {
            for line in reader.lines().map_while(|l| l.ok()) {
                if let Ok(entry) = serde_json::from_str::<Entry>(&line) {
                    let ends = Ends {
                        agent: entry.agent,
                        cwd: entry.cwd,
                        date: entry.date_ms.map(Instant),
                    };
                    entries.insert(entry.sha256, ends);
                }
            }
        }
        Self {
            file,
            entries: Mutex::new(entries),
            changed: Mutex::new(false),
        }
    }

    /// What the ends of the session whose bytes hash to `sha256` say, when known.
    pub fn get(&self, sha256: &Digest) -> Option<Ends> {
        self.entries
            .lock()
            .expect("never poisoned")
            .get(sha256)
            .cloned()
    }

    pub fn record(&self, sha256: Digest, ends: Ends) {
        let previous = self
            .entries
            .lock()
            .expect("never poisoned")
            .insert(sha256, ends.clone());
        if previous != Some(ends) {
            *self.changed.lock().expect("never poisoned") = true;
        }
    }

    /// Write the cache back (atomically) if anything changed, keeping the entries of `live`, the
    /// bytes of the sessions folded now.
    pub fn save(&self, store: &Store, live: &HashSet<Digest>) -> Result<()> {
        let entries = self.entries.lock().expect("never poisoned");
        let dropped = entries.keys().any(|sha| !live.contains(sha));
        if !*self.changed.lock().expect("never poisoned") && !dropped {
            return Ok(());
        }
        let mut kept: Vec<_> = entries
            .iter()
            .filter(|(sha, _)| live.contains(sha))
            .collect();
        kept.sort_by_key(|(sha, _)| **sha);
        let mut text = Vec::new();
        for (sha256, ends) in kept {
            let entry = Entry {
                sha256: *sha256,
                agent: ends.agent,
                cwd: ends.cwd.clone(),
                date_ms: ends.date.map(|d| d.0),
            };
            serde_json::to_writer(&mut text, &entry).expect("entries serialize");
            text.push(b'\n');
        }
        crate::files::create_private_dir(&store.cache_dir())?;
        crate::files::create_private_dir(&store.tmp_dir())?;
        crate::files::atomic::write_file(&store.tmp_dir(), ".ends-", &self.file, &text, true)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_cache_loads_what_was_recorded_and_drops_what_no_session_holds() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path());
        let (kept, gone) = (Digest::of(b"kept"), Digest::of(b"gone"));
        let ends = Ends {
            agent: Some(Agent::Codex),
            cwd: Some("/work/proj".into()),
            date: Some(Instant(1_764_000_000_123)),
        };
        let cache = EndsCache::load(&store);
        cache.record(kept, ends.clone());
        cache.record(gone, ends.clone());
        cache.save(&store, &HashSet::from([kept])).unwrap();
        let again = EndsCache::load(&store);
        assert_eq!(again.get(&kept), Some(ends));
        assert_eq!(again.get(&gone), None);
    }
}
