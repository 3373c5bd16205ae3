//! `ctxfold grep`'s search: a pattern over the text a person reads in sessions (the decoded string
//! values of their lines), folded or on disk, in two passes.
//!
//! The first pass ([`scan`]) tells which sessions match and which of their lines, on every core:
//! a folded session's lines are told by the stored objects they are made of, each object searched
//! once whatever the sessions that hold it (forks, resumes), each pack block decoded once for all
//! the objects of it that the search needs ([`objects`]), and the answers put together line by
//! line ([`folded`]); a session on disk is read line by line. A folded session whose n-gram
//! filter tells it holds none of the pattern's literals is not read at all ([`filters`]). The
//! second pass ([`hits`]) reads again only the sessions that match, to say each match's turn,
//! role and block and print it; `-l` and `-c` need no second pass.
//!
//! Not for: deciding which sessions there are (the command gathers them as `log` does) or
//! printing (the command's).

pub mod filters;
pub mod folded;
pub mod hits;
pub mod matches;
pub mod ngrams;
pub mod objects;
pub mod pattern;
pub mod prefilter;
pub mod strings;

use std::collections::HashSet;
use std::io::BufRead;
use std::path::PathBuf;

use rayon::prelude::*;

use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::ledger::{FileSource, Source, StoreSource};
use crate::store::Store;
use crate::store::manifest::Manifest;
use filters::Folded;
use folded::{Kept, Memo, Walk, trim_end};
use pattern::Pattern;
use strings::Texts;

/// Where a session's bytes are read from: the store (its manifest, read when the session is: a
/// long session's lists thousands of parts; with the sha256 of its bytes when known, and their
/// number) or a file.
pub enum Place {
    Store {
        id: String,
        sha256: Option<Digest>,
        bytes: u64,
    },
    File(PathBuf),
}

impl Place {
    /// `read` given a reader of the session's bytes (for the second pass).
    pub fn read<T>(
        &self,
        store: Option<&Store>,
        read: impl FnOnce(&dyn Source) -> Result<T>,
    ) -> Result<T> {
        match (self, store) {
            (Place::Store { id, .. }, Some(store)) => {
                let manifest = store.load_manifest(id)?;
                read(&StoreSource {
                    store,
                    manifest: &manifest,
                })
            }
            (Place::File(path), _) => read(&FileSource(path.clone())),
            (Place::Store { id, .. }, None) => Err(crate::error::Error::not_found(format!(
                "session {id}: no store"
            ))),
        }
    }
}

/// When a session's search stops.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// After this many matching text lines (`-m`).
    pub max_count: Option<u64>,
    /// At the first match (`-l`).
    pub first: bool,
}

/// What the first pass found in one session.
#[derive(Debug, Default, Clone)]
pub struct Found {
    /// Text lines that hold a match, up to `-m`.
    pub count: u64,
    /// The session's lines (1 for the first) that hold them, in order.
    pub lines: Vec<u64>,
}

impl Found {
    /// Add `matching` text lines found on line `number`; true when no more are wanted.
    fn add(&mut self, number: u64, matching: u64, limits: Limits) -> bool {
        if matching == 0 {
            return false;
        }
        let room = limits.max_count.map_or(u64::MAX, |max| max - self.count);
        self.count += matching.min(room);
        self.lines.push(number);
        limits.first || limits.max_count.is_some_and(|max| self.count >= max)
    }
}

/// The first pass over `places`, on every core: what each holds, in their order. `live` is the
/// bytes of every folded session (the n-gram filters of others are dropped).
pub fn scan(
    store: Option<&Store>,
    places: &[&Place],
    pattern: &Pattern,
    limits: Limits,
    live: &HashSet<Digest>,
) -> Vec<Result<Found>> {
    if limits.max_count == Some(0) {
        return places.iter().map(|_| Ok(Found::default())).collect();
    }
    let without_match = match (store, pattern.prefilter.as_ref().and_then(|p| p.query())) {
        (Some(store), Some(query)) => {
            let folded: Vec<Folded<'_>> = (places.iter())
                .filter_map(|place| match place {
                    Place::Store {
                        id,
                        sha256: Some(sha256),
                        bytes,
                    } => Some(Folded {
                        id,
                        sha256: *sha256,
                        bytes: *bytes,
                    }),
                    _ => None,
                })
                .collect();
            filters::without_match(store, &folded, query, live)
        }
        _ => HashSet::new(),
    };
    let searched = |place: &Place| match place {
        Place::Store {
            sha256: Some(sha256),
            ..
        } => !without_match.contains(sha256),
        _ => true,
    };
    // Every folded session's manifest first: what they need is read block by block. Each goes
    // once its session is searched. (`-l` too: read each from its start alone, forks decoded the
    // blocks they share again, one after the other: 0.5 -> 3.5 s over 4,914 forks.)
    let manifests: Vec<Option<Result<Option<Manifest>>>> = places
        .par_iter()
        .map(|place| match (place, store) {
            (Place::Store { id, .. }, Some(store)) if searched(place) => {
                Some(store.manifest_of(id))
            }
            _ => None,
        })
        .collect();
    let mut memo = Memo::default();
    if let Some(store) = store {
        // Every manifest is parsed: the bodies read ahead for them would stay beside the search
        // (27 MB of them on bench/run's store, its peak 132 MiB with them).
        store.forget_bodies_read();
        let loaded: Vec<&Manifest> = (manifests.iter().flatten())
            .filter_map(|m| m.as_ref().ok()?.as_ref())
            .collect();
        memo.objects = objects::Objects::plan(store, &loaded);
        // Sessions are read one after the other, each from its own neighbouring blocks: a line
        // read whole reads its objects again from the few blocks decoded last, and each is
        // decoded once otherwise: the cache holds four blocks of a fold's size.
        store
            .odb()
            .set_block_cache(4 * crate::odb::pack::DEFAULT_BLOCK_BYTES);
    }
    places
        .par_iter()
        .zip(manifests.into_par_iter())
        .map_init(Kept::default, |kept, (place, manifest)| {
            match (manifest, store) {
                _ if !searched(place) => Ok(Found::default()),
                (Some(manifest), Some(store)) => match manifest? {
                    Some(manifest) => Walk {
                        store,
                        manifest: &manifest,
                        pattern,
                        limits,
                        memo: &memo,
                    }
                    .run(kept),
                    // Removed since listed (an `rm` at the same moment): none of it to search.
                    None => Ok(Found::default()),
                },
                _ => place.read(store, |source| scan_file(source, pattern, limits)),
            }
        })
        .collect()
}

/// A session read line by line (a file on disk).
fn scan_file(source: &dyn Source, pattern: &Pattern, limits: Limits) -> Result<Found> {
    let mut reader = source.open()?;
    let (mut line, mut texts) = (Vec::new(), Texts::default());
    let mut found = Found::default();
    for number in 1.. {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .context(|| format!("read {}", source.describe()))?;
        if n == 0 {
            break;
        }
        let matching = matches::count(pattern, &mut texts, trim_end(&line));
        if found.add(number, matching, limits) {
            break;
        }
    }
    Ok(found)
}
