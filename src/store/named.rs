//! Every manifest by its name, loose or packed: the one way into `manifests/` for readers.
//!
//! A manifest's name is its path as a loose file (`manifests/<id>.json`,
//! `manifests/generations/<id>/<file>.json`, `manifests/conflicts/…`). A loose file of that name
//! is the manifest, whoever wrote it (`write-manifest`, an older ctxfold, the reference
//! implementation, a sync); else the table `manifests/packed.json` may name its body (see `packed`).
//! So a loose file stands over a packed one of the same name, as a loose ref stands over
//! `packed-refs`, and a command that keeps a manifest's path keeps a name that stays good when gc
//! packs it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::manifest::Manifest;
use super::{Store, check_session_id, packed};
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::sync_parent;
use crate::files::remove_if_present;

impl Store {
    /// The name in the table of the manifest whose loose path is `path`.
    fn packed_name(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(self.manifests_dir()).ok()?;
        rel.to_str().map(str::to_string)
    }

    /// The bytes of the manifest named `path`: its loose file's, else its packed body's; `None`
    /// when it is neither.
    pub fn manifest_bytes_at(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        match fs::read(path) {
            Ok(bytes) => return Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_path("read", path),
        }
        let Some(name) = self.packed_name(path) else {
            return Ok(None);
        };
        let table = self.packed()?;
        let Some(body) = table.get(&name) else {
            return Ok(None);
        };
        let bytes = self.packed_body(&table, &name, body).map_err(|e| {
            e.context(format_args!(
                "{} (packed, in {})",
                path.display(),
                packed::FILE
            ))
        })?;
        Ok(Some(bytes.to_vec()))
    }

    /// The object the table names as the body of the manifest named `path`, if it names one
    /// (a loose file of that name stands over it: see [`Store::manifest_bytes_at`]).
    pub fn packed_body_of(&self, path: &Path) -> Result<Option<Digest>> {
        let Some(name) = self.packed_name(path) else {
            return Ok(None);
        };
        Ok(self.packed()?.get(&name))
    }

    /// The manifest named `path` (see [`Store::manifest_bytes_at`]).
    pub fn load_manifest_at(&self, path: &Path) -> Result<Manifest> {
        self.manifest_at(path)?
            .ok_or_else(|| Error::io("read", path, io::ErrorKind::NotFound.into()))
    }

    /// The manifest named `path`, if there is one. A packed one must be of the session its name
    /// says.
    pub fn manifest_at(&self, path: &Path) -> Result<Option<Manifest>> {
        let what = path.display().to_string();
        let Some(bytes) = self.manifest_bytes_at(path)? else {
            return Ok(None);
        };
        let manifest = Manifest::from_slice(&bytes, &what)?;
        if let Some(id) = self.packed_name(path).as_deref().and_then(session_of)
            && id != manifest.session.id
            && !path.exists()
        {
            return Err(Error::manifest_invalid(
                &what,
                format!(
                    "{} names a body of session {:?} here",
                    packed::FILE,
                    manifest.session.id
                ),
            ));
        }
        Ok(Some(manifest))
    }

    /// Whether a manifest is named `path`, loose or packed.
    pub fn manifest_exists_at(&self, path: &Path) -> Result<bool> {
        if path.exists() {
            return Ok(true);
        }
        let name = self.packed_name(path);
        Ok(name.is_some_and(|name| self.packed().is_ok_and(|t| t.get(&name).is_some())))
    }

    pub fn has_manifest(&self, id: &str) -> bool {
        self.manifest_exists_at(&self.manifest_path(id))
            .unwrap_or(false)
    }

    /// The name of every manifest, loose or packed, its subfolders' (`generations/`,
    /// `conflicts/`) included, sorted, each once.
    pub fn manifest_files(&self) -> Result<Vec<PathBuf>> {
        let mut found = self.loose_manifest_files()?;
        let dir = self.manifests_dir();
        found.extend(self.packed()?.iter().map(|(name, _)| dir.join(name)));
        found.sort();
        found.dedup();
        Ok(found)
    }

    /// Every loose manifest file under `manifests/` and its subfolders, sorted.
    pub fn loose_manifest_files(&self) -> Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        let mut dirs = vec![self.manifests_dir()];
        while let Some(dir) = dirs.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_path("list", &dir),
            };
            for entry in entries {
                let entry = entry.with_path("list", &dir)?;
                let path = entry.path();
                let file_type = entry.file_type().with_path("stat", &path)?;
                if file_type.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "json")
                    && !entry.file_name().to_string_lossy().starts_with('.')
                    && path != self.packed_path()
                {
                    found.push(path);
                }
            }
        }
        found.sort();
        Ok(found)
    }

    /// The names in `manifests/<sub>/` (loose files and packed lines), each once, unsorted.
    pub fn manifest_names_in(&self, sub: &str) -> Result<Vec<String>> {
        let dir = self.manifests_dir().join(sub);
        let mut names = crate::files::entry_names(&dir)?;
        let table = self.packed()?;
        let prefix = format!("{sub}/");
        names.extend(table.under(&prefix).map(|n| n[prefix.len()..].to_string()));
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }

    /// Remove the manifests named `paths`, loose and packed: the loose files (their folders
    /// fsynced), then the table's lines (the table replaced). A manifest is gone once both are.
    pub fn remove_manifests(&self, paths: &[PathBuf]) -> Result<()> {
        // One removed file per folder, to fsync that folder by.
        let mut removed: Vec<&Path> = Vec::new();
        for path in paths.iter().filter(|p| p.exists()) {
            remove_if_present(path)?;
            if !removed.iter().any(|r| r.parent() == path.parent()) {
                removed.push(path);
            }
        }
        for path in removed {
            sync_parent(path)?;
        }
        let names: Vec<String> = paths.iter().filter_map(|p| self.packed_name(p)).collect();
        if names
            .iter()
            .any(|n| self.packed().is_ok_and(|t| t.get(n).is_some()))
        {
            self.change_packed(|table| {
                for name in &names {
                    table.remove(name);
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// The session a manifest's name says it is of: `<id>.json`, `generations/<id>/…`.
pub(super) fn session_of(name: &str) -> Option<&str> {
    let id = match name.split_once('/') {
        None => name.strip_suffix(".json")?,
        Some(("generations", rest)) => rest.split_once('/')?.0,
        Some(_) => return None,
    };
    check_session_id(id).ok().map(|()| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_their_session() {
        assert_eq!(session_of("s1.json"), Some("s1"));
        assert_eq!(session_of("generations/s1/x.json"), Some("s1"));
        assert_eq!(session_of("conflicts/s1@ab.json"), None);
        assert_eq!(session_of("s1"), None);
    }
}
