//! What earlier scans found, by the sha256 of the bytes scanned: a folded session's bytes never
//! change under its sha256, so a sync scans only what is new since, however large the store.
//!
//! A cache, never a record: `<store>/cache/secrets.jsonl` (not mirrored, private as the store),
//! headed by the rules' fingerprint. Under other rules, or damaged, it is as if empty, and
//! sessions are scanned again. It holds masked previews only, never a credential.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Mutex;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::rules::fingerprint;
use super::scan::{Finding, scan};
use crate::error::Result;
use crate::ledger::StoreSource;
use crate::store::Store;
use crate::store::manifest::Manifest;

const FILE: &str = "secrets.jsonl";

#[derive(Serialize, Deserialize)]
struct Header {
    rules: String,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    sha256: String,
    findings: Vec<Finding>,
}

/// The scans a store remembers.
pub struct Remembered {
    file: PathBuf,
    rules: String,
    scans: Mutex<HashMap<String, Vec<Finding>>>,
    changed: Mutex<bool>,
}

impl Remembered {
    /// The scans `store` remembers under the current rules (none when it has no cache yet).
    pub fn load(store: &Store) -> Self {
        let file = store.cache_dir().join(FILE);
        let rules = fingerprint();
        let mut scans = HashMap::new();
        if let Ok(reader) = std::fs::File::open(&file).map(std::io::BufReader::new) {
            let mut lines = reader.lines().map_while(|l| l.ok());
            let same_rules = lines
                .next()
                .and_then(|l| serde_json::from_str::<Header>(&l).ok())
                .is_some_and(|h| h.rules == rules);
            for line in lines.filter(|_| same_rules) {
                if let Ok(entry) = serde_json::from_str::<Entry>(&line) {
                    scans.insert(entry.sha256, entry.findings);
                }
            }
        }
        Self {
            file,
            rules,
            scans: Mutex::new(scans),
            changed: Mutex::new(false),
        }
    }

    /// What each folded session holds, in the order given: remembered, or scanned (in parallel)
    /// and remembered.
    pub fn findings(&self, store: &Store, manifests: &[Manifest]) -> Result<Vec<Vec<Finding>>> {
        self.findings_each(store, manifests).into_iter().collect()
    }

    /// [`findings`](Self::findings), with each session's own failure to be read.
    pub fn findings_each(
        &self,
        store: &Store,
        manifests: &[Manifest],
    ) -> Vec<Result<Vec<Finding>>> {
        manifests
            .par_iter()
            .map(|manifest| {
                let key = manifest.source.sha256.to_hex();
                if let Some(known) = self.scans.lock().expect("never poisoned").get(&key) {
                    return Ok(known.clone());
                }
                let found = scan(&StoreSource { store, manifest })?;
                self.scans
                    .lock()
                    .expect("never poisoned")
                    .insert(key, found.clone());
                *self.changed.lock().expect("never poisoned") = true;
                Ok(found)
            })
            .collect()
    }

    /// Write the cache back (atomically) if a scan was added.
    pub fn save(&self, store: &Store) -> Result<()> {
        if !*self.changed.lock().expect("never poisoned") {
            return Ok(());
        }
        let scans = self.scans.lock().expect("never poisoned");
        let mut sorted: Vec<_> = scans.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        let mut text = serde_json::to_vec(&Header {
            rules: self.rules.clone(),
        })
        .expect("headers serialize");
        text.push(b'\n');
        for (sha256, findings) in sorted {
            let entry = Entry {
                sha256: sha256.clone(),
                findings: findings.clone(),
            };
            serde_json::to_writer(&mut text, &entry).expect("entries serialize");
            text.push(b'\n');
        }
        crate::files::create_private_dir(&store.cache_dir())?;
        crate::files::atomic::write_file(&store.tmp_dir(), ".secrets-", &self.file, &text, true)?;
        Ok(())
    }
}
