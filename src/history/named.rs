//! A session named on a command line (`show`, `diff`): a session file's path, or the id of a
//! session, or a unique prefix of one, folded in the store or else found on disk under the agents'
//! homes; and where its bytes are read from: the file on disk while it is there, else the store.

use std::path::{Path, PathBuf};

use crate::agents::Homes;
use crate::error::{Error, Result};
use crate::ledger::{FileSource, Source, StoreSource};
use crate::sources::discover;
use crate::store::Store;
use crate::store::ids::{Unresolved, resolve_prefix};
use crate::store::manifest::{Manifest, Session};

/// A session found by what a person typed.
pub struct Named {
    /// Its id (a path named directly has none until its first line is read).
    pub id: Option<String>,
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// Its manifest, when it is folded.
    pub manifest: Option<Manifest>,
    /// Its file on disk, when there is one.
    pub file: Option<PathBuf>,
    /// Whether it was named by its file's path (which then names it in messages).
    pub by_path: bool,
}

impl Named {
    /// Find `spec` in `store` (when there is one), else on disk.
    pub fn find(spec: &str, store: Option<&Store>) -> Result<Self> {
        let path = Path::new(spec);
        if spec.contains('/') || (path.is_file() && !store.is_some_and(|s| s.has_manifest(spec))) {
            return Self::path(path, store);
        }
        if let Some(store) = store {
            match store.resolve_session(spec) {
                Ok(id) => return Self::folded(store.load_manifest(&id)?),
                Err(e) if e.status() == crate::error::Status::Negative => {}
                Err(e) => return Err(e),
            }
        }
        Self::on_disk(spec, store)
    }

    /// A session file named by its path: its id, title and folder as discovery reads them, and
    /// its folded version when the store holds one under that id (and it can be read).
    fn path(path: &Path, store: Option<&Store>) -> Result<Self> {
        if !path.is_file() {
            return Err(Error::not_found(format!(
                "{}: no such session file",
                path.display()
            )));
        }
        let found = discover(&Homes::from_env()?, &[path.to_path_buf()], &[])
            .sessions
            .pop();
        // A manifest that cannot be read does not keep the file from being read.
        let manifest = match (&found, store) {
            (Some(found), Some(store)) => store.load_manifest(&found.session.id).ok(),
            _ => None,
        };
        Ok(Self {
            id: found.as_ref().map(|f| f.session.id.clone()),
            title: found.as_ref().and_then(|f| f.session.title.clone()),
            cwd: found.and_then(|f| f.session.cwd),
            manifest,
            file: Some(path.to_path_buf()),
            by_path: true,
        })
    }

    /// A folded session, with its source when it is still on disk.
    pub fn folded(manifest: Manifest) -> Result<Self> {
        let file = file_of(&manifest.session);
        Ok(Self {
            id: Some(manifest.session.id.clone()),
            title: manifest.session.title.clone(),
            cwd: manifest.session.cwd.clone(),
            file,
            manifest: Some(manifest),
            by_path: false,
        })
    }

    /// A session found under the agents' homes, by id or unique prefix.
    fn on_disk(spec: &str, store: Option<&Store>) -> Result<Self> {
        let discovery = discover(&Homes::from_env()?, &[], &[]);
        let ids: Vec<String> = discovery
            .sessions
            .iter()
            .map(|f| f.session.id.clone())
            .collect();
        let id = resolve_prefix(spec, &ids).map_err(|e| match e {
            Unresolved::Ambiguous(message) => Error::usage(message),
            Unresolved::None => Error::not_found(match store {
                Some(store) => format!(
                    "no session {spec:?}: none folded in {} or found on disk ('ctxfold log' lists them)",
                    store.root().display()
                ),
                None => format!(
                    "no session {spec:?} found on disk, and there is no store ('ctxfold log' lists them)"
                ),
            }),
        })?;
        let found = discovery
            .sessions
            .into_iter()
            .find(|f| f.session.id == id)
            .expect("resolved among these");
        Ok(Self {
            id: Some(id),
            title: found.session.title,
            cwd: found.session.cwd,
            manifest: None,
            file: Some(found.path),
            by_path: false,
        })
    }

    /// Where to read it: the file on disk while it is there, else the store; and which it is.
    pub fn source<'a>(&'a self, store: Option<&'a Store>) -> Result<(Box<dyn Source + 'a>, From)> {
        if let Some(path) = &self.file {
            return Ok((Box::new(FileSource(path.clone())), From::File));
        }
        Ok((self.folded_source(store)?, From::Store))
    }

    /// Its folded version, read from the store.
    pub fn folded_source<'a>(&'a self, store: Option<&'a Store>) -> Result<Box<dyn Source + 'a>> {
        match (&self.manifest, store) {
            (Some(manifest), Some(store)) => Ok(Box::new(StoreSource { store, manifest })),
            _ => Err(Error::not_found(format!(
                "{}: not folded in the store",
                self.describe()
            ))),
        }
    }

    /// What to call it in messages: its id, or its path when it was named so (or has no id).
    pub fn describe(&self) -> String {
        match (&self.id, &self.file) {
            (_, Some(path)) if self.by_path => path.display().to_string(),
            (Some(id), _) => id.clone(),
            (None, Some(path)) => path.display().to_string(),
            (None, None) => "the session".into(),
        }
    }

    /// Its id, else what to call it.
    pub fn id_or_describe(&self) -> String {
        self.id.clone().unwrap_or_else(|| self.describe())
    }
}

/// A folded session's file, when it is on disk where it was folded from (Codex may have compressed
/// an archived one since: its `.jsonl.zst` is the same session).
pub fn file_of(session: &Session) -> Option<PathBuf> {
    let recorded = PathBuf::from(&session.rollout_path);
    let mut compressed = recorded.clone().into_os_string();
    compressed.push(".zst");
    [recorded, PathBuf::from(compressed)]
        .into_iter()
        .find(|p| p.is_file())
}

/// Where a session's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum From {
    File,
    Store,
}
