//! The store as a git tree: `manifests/` (with its subfolders), `objects/<2 hex>/`, the packs,
//! `seeds/` (the seed catalog), `context-fold/` and the registrations `dictionaries/<sha256>` (not `dictionaries/CURRENT`: which
//! dictionary new objects are written with is each machine's own choice), each file a blob holding
//! the file's bytes as they are (objects stay zstd).
//!
//! Incremental against the previous commit's tree, one directory at a time (memory follows the
//! largest directory, not the store): an object file is immutable and named by its content, so an
//! object path already in the previous tree is reused without being read; every other file
//! (manifests, the seed catalog: small, and they can change) is re-hashed, and written only when new.
//! Blobs and trees already in the repository are hashed but not written again. A file over the
//! mirror's cap is written cut into parts (`cut`).

use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use gix::ObjectId;
use gix::bstr::BString;
use gix::objs::tree::{Entry, EntryKind};

use super::{GitContext, Mirror};
use crate::error::{IoContext, Result};
use crate::odb::dictionaries::CURRENT;
use crate::store::Store;

/// The store folders that are mirrored, and whether their files are immutable (a registration is
/// an empty file named by its dictionary object; a pack is named by its content).
const FOLDERS: [(&str, bool); 6] = [
    ("context-fold", false),
    ("dictionaries", true),
    ("manifests", false),
    ("objects", true),
    (crate::odb::pack::DIR, true),
    ("seeds", false),
];

impl Mirror {
    /// Write the store's current files as a tree, reusing what `previous` (a tree) already holds.
    pub fn write_store_tree(&self, store: &Store, previous: Option<ObjectId>) -> Result<ObjectId> {
        let before = self.entries(previous)?;
        let cap = self.file_cap()?;
        let mut entries = Vec::new();
        for (name, immutable) in FOLDERS {
            let prior = before
                .get(name.as_bytes())
                .filter(|e| e.mode.is_tree())
                .map(|e| e.oid);
            let dir = store.root().join(name);
            let written = match name {
                "manifests" => self.write_manifests(store, cap)?,
                _ => self.write_dir(&dir, prior, immutable, &dir.join(CURRENT), cap)?,
            };
            if let Some(oid) = written {
                entries.push(Entry {
                    mode: EntryKind::Tree.into(),
                    filename: name.into(),
                    oid,
                });
            }
        }
        self.write_tree(entries)
    }

    /// One directory as a tree, without the file at `local` (a local preference that stays here),
    /// each file over `cap` cut (see `cut`); `None` when it is missing or holds no files (git
    /// keeps no empty directories).
    fn write_dir(
        &self,
        dir: &Path,
        previous: Option<ObjectId>,
        immutable: bool,
        local: &Path,
        cap: u64,
    ) -> Result<Option<ObjectId>> {
        let listing = match fs::read_dir(dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_path("list", dir),
        };
        let before = self.entries(previous)?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.with_path("list", dir)?;
            let name = entry.file_name();
            // Dot files are temp files of writers in progress, never store content.
            if name.as_bytes().starts_with(b".") {
                continue;
            }
            let path = entry.path();
            if path == local {
                continue;
            }
            let kind = entry.file_type().with_path("stat", &path)?;
            let filename = BString::from(name.as_bytes());
            let prior = before.get(name.as_bytes());
            let (mode, oid) = if kind.is_dir() {
                match self.write_dir(
                    &path,
                    prior.filter(|e| e.mode.is_tree()).map(|e| e.oid),
                    immutable,
                    local,
                    cap,
                )? {
                    Some(oid) => (EntryKind::Tree.into(), oid),
                    None => continue,
                }
            } else if kind.is_file() {
                match prior.filter(|_| immutable) {
                    // A blob is kept while it is within the cap (a lower one cuts it anew).
                    Some(e) if e.mode.is_tree() && self.is_file(e)? => (e.mode, e.oid),
                    Some(e) if e.mode.is_blob() && within(&entry, cap)? => (e.mode, e.oid),
                    _ => {
                        let bytes = fs::read(&path).with_path("read", &path)?;
                        let (kind, oid) = self.write_file(&bytes, cap)?;
                        (kind.into(), oid)
                    }
                }
            } else {
                continue;
            };
            entries.push(Entry {
                mode,
                filename,
                oid,
            });
        }
        if entries.is_empty() {
            return Ok(None);
        }
        self.write_tree(entries).map(Some)
    }

    /// Write a tree from unsorted entries (gix hashes it first and writes nothing already there).
    pub(crate) fn write_tree(&self, mut entries: Vec<Entry>) -> Result<ObjectId> {
        entries.sort();
        let tree = gix::objs::Tree { entries };
        Ok(self
            .repo()
            .write_object(&tree)
            .git(|| "write a tree into git".into())?
            .detach())
    }

    /// A tree's entries by name (empty for `None`).
    pub(crate) fn entries(&self, tree: Option<ObjectId>) -> Result<HashMap<BString, Entry>> {
        let Some(id) = tree else {
            return Ok(HashMap::new());
        };
        let tree = self
            .repo()
            .find_tree(id)
            .git(|| format!("read tree {id}"))?;
        let decoded = tree.decode().git(|| format!("decode tree {id}"))?;
        Ok(decoded
            .entries
            .iter()
            .map(|e| {
                let entry = Entry {
                    mode: e.mode,
                    filename: e.filename.to_owned(),
                    oid: e.oid.to_owned(),
                };
                (entry.filename.clone(), entry)
            })
            .collect())
    }
}

/// Whether a directory entry's file is at most `cap` bytes.
fn within(entry: &fs::DirEntry, cap: u64) -> Result<bool> {
    let path = entry.path();
    Ok(entry.metadata().with_path("stat", &path)?.len() <= cap)
}
