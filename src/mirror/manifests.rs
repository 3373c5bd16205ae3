//! The store's `manifests/` as the mirror writes it: one plain Fold V1 file per manifest, at its
//! name, whether this store keeps it loose or packed (see `store::named`). A remote (and a `git
//! clone` of it) holds the contract's JSON, which any ctxfold reads, and never this store's table
//! of packed manifests, whose bodies a remote reader would have to find in the packs.

use std::path::PathBuf;

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::Mirror;
use crate::error::Result;
use crate::store::Store;

impl Mirror {
    /// `manifests/` as a tree; `None` when the store holds no manifest.
    pub(crate) fn write_manifests(&self, store: &Store, cap: u64) -> Result<Option<ObjectId>> {
        let dir = store.manifests_dir();
        let files: Vec<(Vec<String>, PathBuf)> = (store.manifest_files()?.into_iter())
            .filter_map(|path| {
                let rel = path.strip_prefix(&dir).ok()?;
                let parts = rel.iter().map(|c| c.to_str().map(str::to_string));
                Some((parts.collect::<Option<_>>()?, path))
            })
            .collect();
        self.write_nested(store, &files, 0, cap)
    }

    /// The tree of `files` (sorted by path, all alike in their first `depth` folders).
    fn write_nested(
        &self,
        store: &Store,
        files: &[(Vec<String>, PathBuf)],
        depth: usize,
        cap: u64,
    ) -> Result<Option<ObjectId>> {
        let mut entries = Vec::new();
        let mut at = 0;
        while at < files.len() {
            let name = &files[at].0[depth];
            let end = (files[at..].iter())
                .position(|(parts, _)| &parts[depth] != name)
                .map_or(files.len(), |n| at + n);
            let (mode, oid) = if files[at].0.len() == depth + 1 {
                // Gone since it was listed (a fold replaced it, gc packed it: read again).
                let Some(bytes) = store.manifest_bytes_at(&files[at].1)? else {
                    at = end;
                    continue;
                };
                let (kind, oid) = self.write_file(&bytes, cap)?;
                (kind.into(), oid)
            } else {
                match self.write_nested(store, &files[at..end], depth + 1, cap)? {
                    Some(oid) => (EntryKind::Tree.into(), oid),
                    None => {
                        at = end;
                        continue;
                    }
                }
            };
            entries.push(Entry {
                mode,
                filename: name.as_str().into(),
                oid,
            });
            at = end;
        }
        match entries.is_empty() {
            true => Ok(None),
            false => self.write_tree(entries).map(Some),
        }
    }
}
