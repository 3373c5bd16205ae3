//! What a listing says of each session (`ctxfold log`): its id, agent, last
//! activity, size, project folder and title, and where it is: folded and the same on disk, only in
//! the store, grown or changed on disk since it was folded, or only on disk. The one place that
//! gathers it, from a manifest and the store, from a session file found on disk, or both.
//!
//! The last activity is the timestamp of the session's last line that has one (`ends`): it is in
//! every copy of the session, so a session reads the same from the store after its source is gone,
//! and no manifest field beyond the contract's is needed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde::Serialize;

use super::ends;
use super::ends_cache::{Ends, EndsCache};
use super::named::file_of;
use super::unchanged::Unchanged;
use crate::agents::Homes;
use crate::agents::place::started;
use crate::agents::{Agent, Titles};
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::fold::compare::{State as Compared, compare};
use crate::fold::stamp::Stamp;
use crate::fold::stamps::Stamps;
use crate::sources::{Discovery, Found, discover_known, discover_titled};
use crate::store::Store;
use crate::store::heads::{Head, Heads};
use crate::store::manifest::Source;
use crate::time::Instant;

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// In the store, and (when its source was looked at) the same on disk.
    Folded,
    /// Only in the store: its source is gone.
    Stored,
    /// In the store, and appended to on disk since.
    Grown,
    /// In the store, and changed on disk since other than by an append.
    Changed,
    /// Only on disk: not folded.
    New,
}

impl State {
    pub fn word(self) -> &'static str {
        match self {
            State::Folded => "folded",
            State::Stored => "stored",
            State::Grown => "grown",
            State::Changed => "changed",
            State::New => "new",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub id: String,
    /// `null` for a file of no agent's.
    pub agent: Option<Agent>,
    /// The last activity.
    pub date: Option<Instant>,
    /// The session's size: folded, or on disk now when it differs.
    pub bytes: u64,
    pub cwd: Option<String>,
    pub title: Option<String>,
    pub archived: bool,
    pub rollout_path: String,
    pub state: State,
    /// When it started, as its file's name says ([`started`]).
    #[serde(skip)]
    pub started: Option<String>,
    /// What could not be read of it (its ends), said once by the listing.
    #[serde(skip)]
    pub problem: Option<String>,
    /// The sha256 of its folded bytes, for a folded session.
    #[serde(skip)]
    pub folded: Option<Digest>,
}

impl Summary {
    /// A folded session as the store alone tells it (state `folded`, its source not looked at).
    /// A folded session, from its manifest's head; its parts are read only when `cache` does not
    /// know what its ends say. None: removed since its head was read (an `rm` at the same moment).
    fn of_head(store: &Store, head: &Head, cache: &EndsCache) -> Option<Self> {
        let session = &head.session;
        let mut summary = Summary {
            id: session.id.clone(),
            agent: None,
            date: None,
            bytes: head.source.bytes,
            cwd: session.cwd.clone(),
            title: session.title.clone(),
            archived: session.archived,
            rollout_path: session.rollout_path.clone(),
            state: State::Folded,
            started: started(session),
            problem: None,
            folded: Some(head.source.sha256),
        };
        let read = || -> Result<Option<Ends>> {
            if let Some(ends) = cache.get(&head.source.sha256) {
                return Ok(Some(ends));
            }
            let Some(manifest) = store.manifest_of(&session.id)? else {
                return Ok(None);
            };
            let opening = ends::opening(store, &manifest)?;
            let agent = opening.as_ref().map(|(agent, _)| *agent);
            let ends = Ends {
                agent,
                cwd: opening.and_then(|(_, meta)| meta.cwd),
                date: ends::folded_activity(store, &manifest, agent)?,
            };
            cache.record(manifest.source.sha256, ends.clone());
            Ok(Some(ends))
        };
        match read() {
            Ok(Some(ends)) => {
                summary.agent = ends.agent;
                summary.cwd = summary.cwd.or(ends.cwd);
                summary.date = ends.date;
            }
            Ok(None) => return None,
            Err(e) => summary.problem = Some(format!("session {}: {e}", session.id)),
        }
        Some(summary)
    }

    /// A session file found on disk and not folded.
    pub fn of_found(found: &Found) -> Self {
        let mut summary = Summary {
            id: found.session.id.clone(),
            agent: found.agent,
            date: None,
            bytes: 0,
            cwd: found.session.cwd.clone(),
            title: found.title(None),
            archived: found.session.archived,
            rollout_path: found.session.rollout_path.clone(),
            state: State::New,
            started: started(&found.session),
            problem: None,
            folded: None,
        };
        summary.look_at(found);
        summary
    }

    /// Its size and last activity from the file on disk.
    fn look_at(&mut self, found: &Found) {
        let read = || -> Result<_> {
            let size = Stamp::of(&found.path)?.size;
            Ok((size, ends::file_activity(&found.path, found.agent)?))
        };
        match read() {
            Ok((size, date)) => {
                self.bytes = size;
                self.date = date;
            }
            Err(e) => self.problem = Some(format!("{}: {e}", found.path.display())),
        }
    }
}

/// Every session of the store and of the disk, each once.
pub struct Gathered {
    pub summaries: Vec<Summary>,
    /// The sessions found under the agents' homes.
    pub discovery: Discovery,
    /// Manifests that could not be read, one line each.
    pub problems: Vec<Error>,
}

/// The folded sessions of `store` (when there is one) and the sessions `discovery` found on disk
/// (under `homes`),
/// each once, newest first: a folded session found on disk is compared with its source, through
/// fold's stamp cache where it can (an unchanged file is not read again).
pub fn gather(store: Option<&Store>, homes: &Homes) -> Result<Gathered> {
    let caches = store.map(|store| (Stamps::load(store), Heads::load(store)));
    // Titles that take reading a whole file are read only for the sessions whose file speaks,
    // and a file unchanged since its fold not at all.
    let unchanged = (caches.as_ref()).map(|(stamps, heads)| Unchanged::new(stamps, heads));
    let discovery = discover_known(homes, &[], &[], Titles::Later, &|path| {
        unchanged.as_ref()?.session(path)
    });
    let on_disk: HashMap<&str, &Found> = discovery
        .sessions
        .iter()
        .map(|found| (found.session.id.as_str(), found))
        .collect();
    let mut summaries = Vec::new();
    let mut problems = Vec::new();
    let mut folded = std::collections::HashSet::new();
    if let (Some(store), Some((stamps, heads))) = (store, &caches) {
        let cache = EndsCache::load(store);
        let live = Mutex::new(HashSet::new());
        let ids = store.session_ids()?;
        let read: Vec<Result<Option<Summary>>> = ids
            .par_iter()
            .map(|id| {
                // Removed since the ids were listed (an `rm` at the same moment): not listed.
                let Some(head) = heads.of(id)? else {
                    return Ok(None);
                };
                live.lock()
                    .expect("never poisoned")
                    .insert(head.source.sha256);
                let Some(mut summary) = Summary::of_head(store, &head, &cache) else {
                    return Ok(None);
                };
                // A session folded from outside the agents' homes (`fold PATH`) is on disk too
                // while its file is where it was folded from. Its title is read only if the
                // file speaks (it grew or changed), as for the sessions under the homes.
                let elsewhere = |path: PathBuf| {
                    let found = discover_titled(homes, &[path], &[], Titles::Later)
                        .sessions
                        .pop()?;
                    (found.session.id == *id).then_some(found)
                };
                match on_disk.get(id.as_str()) {
                    Some(found) => summary.compare(found, &head.source, stamps),
                    None => match file_of(&head.session) {
                        // Still the bytes folded, as the stamp cache says: not even opened.
                        Some(path) if still_folded(stamps, &path, &head.source) => {}
                        Some(path) => match elsewhere(path) {
                            Some(found) => summary.compare(&found, &head.source, stamps),
                            None => summary.state = State::Stored,
                        },
                        None => summary.state = State::Stored,
                    },
                }
                Ok(Some(summary))
            })
            .collect();
        for (id, result) in ids.into_iter().zip(read) {
            match result {
                Ok(Some(summary)) => summaries.push(summary),
                Ok(None) => continue,
                Err(e) => problems.push(e),
            }
            folded.insert(id);
        }
        // A cache: a store this user cannot write to is listed all the same, only not faster.
        let _ = cache.save(store, &live.into_inner().expect("never poisoned"));
        let _ = heads.save();
    }
    let new: Vec<Summary> = discovery
        .sessions
        .par_iter()
        .filter(|found| !folded.contains(&found.session.id))
        .map(Summary::of_found)
        .collect();
    summaries.extend(new);
    sort_newest_first(&mut summaries);
    Ok(Gathered {
        summaries,
        discovery,
        problems,
    })
}

impl Summary {
    /// Compare a folded session with its file on disk; where they differ, the file speaks.
    fn compare(&mut self, found: &Found, source: &Source, stamps: &Stamps) {
        let path = &found.path;
        let state = Stamp::of(path).and_then(|stamp| {
            if stamps.knows(path, &stamp, source) {
                return Ok(Compared::UpToDate);
            }
            compare(path, &stamp, source)
        });
        self.state = match state {
            Ok(Compared::UpToDate) => return,
            Ok(Compared::Grown) => State::Grown,
            Ok(_) => State::Changed,
            Err(e) => {
                self.problem = Some(format!("{}: {e}", path.display()));
                return;
            }
        };
        self.rollout_path = found.session.rollout_path.clone();
        self.title = found.title(None).or(self.title.take());
        self.look_at(found);
    }
}

/// Whether the file at `path` holds `source`'s bytes still, as fold's stamp cache tells from its
/// metadata alone.
fn still_folded(stamps: &Stamps, path: &Path, source: &Source) -> bool {
    Stamp::of(path).is_ok_and(|stamp| stamps.knows(path, &stamp, source))
}

/// Newest first; sessions without a date last; then by id.
pub fn sort_newest_first(summaries: &mut [Summary]) {
    summaries.sort_by(|a, b| {
        b.date
            .is_some()
            .cmp(&a.date.is_some())
            .then(b.date.cmp(&a.date))
            .then(a.id.cmp(&b.id))
    });
}
