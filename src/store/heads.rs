//! Manifests' heads: what listings show of a folded session (its session fields, its source, the
//! bytes its distinct objects take) without its part list, kept by the sha256 of each packed
//! manifest's body, so that `ls`, `log` and `status` over thousands of packed sessions read one
//! small file rather than decode and parse every body (the part lists are nearly all of their
//! bytes). A body never changes, so an entry is never stale, only unused once the table no longer
//! names its body.
//!
//! A cache, never a record: `<store>/cache/heads.jsonl`, not mirrored; a missing or damaged file,
//! or a line that does not parse, only means those bodies are read again. Loose manifests (a
//! fold's newest, the reference implementation's) are read whole each time: they may be
//! rewritten in place, and they are few once gc or a fold has packed the rest.

use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::Store;
use super::manifest::{Manifest, Session, Source};
use crate::digest::Digest;
use crate::error::Result;

/// A manifest without its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub session: Session,
    pub source: Source,
    /// The stored bytes of its distinct objects, as its parts say them.
    pub stored_bytes: u64,
}

impl Head {
    pub fn of(manifest: &Manifest) -> Self {
        let mut seen = HashSet::new();
        let stored_bytes = (manifest.parts.iter())
            .filter(|p| seen.insert(p.object.sha256))
            .map(|p| p.object.stored_bytes)
            .sum();
        Self {
            session: manifest.session.clone(),
            source: manifest.source,
            stored_bytes,
        }
    }
}

/// One line of the cache file.
#[derive(Serialize, Deserialize)]
struct Line {
    body: Digest,
    #[serde(flatten)]
    head: Head,
}

/// The heads known for `store`'s packed bodies, and those read since they were loaded.
pub struct Heads<'a> {
    store: &'a Store,
    file: PathBuf,
    known: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    by_body: HashMap<Digest, Head>,
    changed: bool,
}

impl<'a> Heads<'a> {
    /// The cache of `store` (empty when it has none yet).
    pub fn load(store: &'a Store) -> Self {
        let file = store.cache_dir().join("heads.jsonl");
        let mut by_body = HashMap::new();
        if let Ok(reader) = std::fs::File::open(&file).map(io::BufReader::new) {
            for line in reader.lines().map_while(|l| l.ok()) {
                if let Ok(line) = serde_json::from_str::<Line>(&line) {
                    by_body.insert(line.body, line.head);
                }
            }
        }
        Self {
            store,
            file,
            known: Mutex::new(Known {
                by_body,
                changed: false,
            }),
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The head of the manifest named `path` (see [`Store::manifest_at`]), if there is one.
    pub fn at(&self, path: &Path) -> Result<Option<Head>> {
        let body = match path.try_exists() {
            Ok(false) => self.store.packed_body_of(path)?,
            // Loose (or not to be told): read whole, as its readers do.
            _ => None,
        };
        if let Some(head) = body.and_then(|body| self.known().by_body.get(&body).cloned()) {
            return Ok(Some(head));
        }
        let Some(manifest) = self.store.manifest_at(path)? else {
            return Ok(None);
        };
        let head = Head::of(&manifest);
        if let Some(body) = body {
            let mut known = self.known();
            known.by_body.insert(body, head.clone());
            known.changed = true;
        }
        Ok(Some(head))
    }

    /// The head of session `id`'s manifest; `None` when it is not folded.
    pub fn of(&self, id: &str) -> Result<Option<Head>> {
        super::check_session_id(id)?;
        self.at(&self.store.manifest_path(id))
    }

    /// The session each source was folded as, by the source's sha256, as far as the cache knows
    /// the table's bodies (a loose manifest's, or a body not read yet, is not in it); a source
    /// folded as two sessions is left out.
    pub fn sessions_by_source(&self) -> Result<HashMap<Digest, Session>> {
        let live: HashSet<Digest> = self.store.packed()?.iter().map(|(_, d)| d).collect();
        let mut by_source: HashMap<Digest, Option<Session>> = HashMap::new();
        for (body, head) in &self.known().by_body {
            if !live.contains(body) {
                continue;
            }
            by_source
                .entry(head.source.sha256)
                .and_modify(|s| {
                    if s.as_ref().is_some_and(|s| s.id != head.session.id) {
                        *s = None;
                    }
                })
                .or_insert_with(|| Some(head.session.clone()));
        }
        Ok(by_source
            .into_iter()
            .filter_map(|(sha, session)| Some((sha, session?)))
            .collect())
    }

    /// Write the cache back (atomically) if it learnt anything or holds bodies the table no
    /// longer names, keeping those it names. A store this user cannot write to is read all the
    /// same, only not faster: callers may ignore the error.
    pub fn save(&self) -> Result<()> {
        let live: HashSet<Digest> = self.store.packed()?.iter().map(|(_, d)| d).collect();
        let known = self.known();
        let dropped = known.by_body.keys().any(|body| !live.contains(body));
        if !known.changed && !dropped {
            return Ok(());
        }
        let mut kept: Vec<(&Digest, &Head)> = (known.by_body.iter())
            .filter(|(body, _)| live.contains(body))
            .collect();
        kept.sort_unstable_by_key(|(body, _)| **body);
        let mut text = Vec::new();
        for (body, head) in kept {
            let line = Line {
                body: *body,
                head: head.clone(),
            };
            serde_json::to_writer(&mut text, &line).expect("heads serialize");
            text.push(b'\n');
        }
        crate::files::create_private_dir(&self.store.cache_dir())?;
        crate::files::create_private_dir(&self.store.tmp_dir())?;
        crate::files::atomic::write_file(&self.store.tmp_dir(), ".heads-", &self.file, &text, true)
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::manifest::of_one_part;

    #[test]
    fn a_head_counts_each_object_once() {
        let mut manifest = of_one_part("s1", b"abc");
        manifest.parts[0].object.stored_bytes = 7;
        manifest.parts.push(manifest.parts[0].clone());
        manifest.source.bytes = 6;
        let head = Head::of(&manifest);
        assert_eq!(head.stored_bytes, 7);
        assert_eq!(head.session, manifest.session);
        assert_eq!(head.source, manifest.source);
    }
}
