//! The session files on disk that the store folded and that have not changed since, told from
//! fold's stamp cache and the manifests' heads without opening them: what lets `log` and `status`
//! over thousands of unchanged files read none of them.
//!
//! A file is taken as unchanged only when its stamp now (size, mtime and ctime to the
//! nanosecond, inode, device) is the one fold recorded with its source, as fold itself trusts it.

use std::collections::HashMap;
use std::path::Path;

use crate::agents::{Homes, Titles};
use crate::digest::Digest;
use crate::error::Result;
use crate::fold::stamp::Stamp;
use crate::fold::stamps::Stamps;
use crate::sources::{Discovery, discover_known};
use crate::store::Store;
use crate::store::heads::Heads;
use crate::store::manifest::Session;

/// What the store knows of its unchanged files.
pub struct Unchanged {
    stamps: Stamps,
    sessions: HashMap<Digest, Session>,
}

impl Unchanged {
    pub fn of(store: &Store) -> Result<Self> {
        Ok(Self {
            stamps: Stamps::load(store),
            sessions: Heads::load(store).sessions_by_source()?,
        })
    }

    /// The session the file at `path` was folded as, if it is unchanged since.
    pub fn session(&self, path: &Path) -> Option<Session> {
        let source = self.stamps.last(path)?;
        let session = self.sessions.get(&source.sha256)?;
        let stamp = Stamp::of(path).ok()?;
        self.stamps
            .knows(path, &stamp, &source)
            .then(|| session.clone())
    }
}

/// The sessions under the agents' homes as a listing of `store` needs them: titles that take
/// reading a whole file left for the sessions whose file speaks, and the files unchanged since
/// their fold not read at all (the store's caches vouch for them; without the caches, read).
pub fn discover_for_listing(store: Option<&Store>, homes: &Homes) -> Discovery {
    let unchanged = store.and_then(|s| Unchanged::of(s).ok());
    discover_known(homes, &[], &[], Titles::Later, &|path| {
        unchanged.as_ref()?.session(path)
    })
}
