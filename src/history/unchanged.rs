//! The session files on disk that the store folded and that have not changed since, told from
//! fold's stamp cache and the manifests' heads without opening them: what lets `log` and `status`
//! over thousands of unchanged files read none of them.
//!
//! A file is taken as unchanged only when its stamp now (size, mtime and ctime to the
//! nanosecond, inode, device) is the one fold recorded with its source, as fold itself trusts it.

use std::collections::HashMap;
use std::path::Path;

use crate::digest::Digest;
use crate::fold::stamp::Stamp;
use crate::fold::stamps::Stamps;
use crate::store::heads::Heads;
use crate::store::manifest::Session;

/// What the store knows of its unchanged files, from caches its caller reads anyway.
pub struct Unchanged<'a> {
    stamps: &'a Stamps,
    sessions: HashMap<Digest, Session>,
}

impl<'a> Unchanged<'a> {
    /// A cache: heads it cannot tell (an unreadable table) only mean those files are read.
    pub fn new(stamps: &'a Stamps, heads: &Heads<'_>) -> Self {
        Self {
            stamps,
            sessions: heads.sessions_by_source().unwrap_or_default(),
        }
    }

    /// The session the file at `path` was folded as, if it is unchanged since.
    pub fn session(&self, path: &Path) -> Option<Session> {
        let source = self.stamps.at(path, &Stamp::of(path).ok()?)?;
        self.sessions.get(&source.sha256).cloned()
    }
}
