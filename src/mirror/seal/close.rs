//! A plain mirror tree sealed: each file encrypted at its keyed name (see the module's doc), reusing
//! the blob the ledger remembers for a file sealed before under the same keyring.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::envelope::seal;
use super::ledger::{Ledger, Plain};
use super::names::name;
use super::{KEY, Keyring, RECIPIENTS};
use crate::error::{Error, Result};
use crate::mirror::{GitContext, Mirror};

/// Seal the plain `tree` under `keyring`, with `header` (the blobs of `recipients` and `key.age`).
pub fn seal_tree(
    mirror: &Mirror,
    tree: ObjectId,
    keyring: &Keyring,
    header: (ObjectId, ObjectId),
    ledger: &mut Ledger,
) -> Result<ObjectId> {
    let cap = mirror.file_cap()?;
    let mut dirs: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for file in plain_files(mirror, tree)? {
        let known = ledger.sealed(&file).and_then(|id| {
            let header = mirror.repo().try_find_header(id).ok().flatten()?;
            Some((id, header.kind()))
        });
        let (oid, kind) = match known {
            Some((id, gix::object::Kind::Tree)) => (id, EntryKind::Tree),
            Some((id, _)) => (id, EntryKind::Blob),
            None => {
                let bytes = mirror
                    .read_file(file.oid)?
                    .ok_or_else(|| Error::corrupt(format!("{} is no file", file.path)))?;
                let (kind, id) =
                    mirror.write_file(&seal(&keyring.recipients, &file.path, &bytes)?, cap)?;
                ledger.remember(id, file.clone());
                (id, kind)
            }
        };
        let (dir, rest) = name(&keyring.secret, &file.path);
        dirs.entry(dir).or_default().push(Entry {
            mode: kind.into(),
            filename: rest.into(),
            oid,
        });
    }
    let mut root = vec![blob_entry(RECIPIENTS, header.0), blob_entry(KEY, header.1)];
    for (dir, entries) in dirs {
        root.push(Entry {
            mode: EntryKind::Tree.into(),
            filename: dir.into(),
            oid: mirror.write_tree(entries)?,
        });
    }
    mirror.write_tree(root)
}

/// Write the header's two files as blobs: (`recipients`, `key.age`).
pub fn write_header(mirror: &Mirror, keyring: &Keyring) -> Result<(ObjectId, ObjectId)> {
    let (listed, key) = super::header::write(keyring)?;
    let blob = |bytes: &[u8]| -> Result<ObjectId> {
        Ok(mirror
            .repo()
            .write_blob(bytes)
            .git(|| "write a blob into git".into())?
            .detach())
    };
    Ok((blob(&listed)?, blob(&key)?))
}

fn blob_entry(name: &str, oid: ObjectId) -> Entry {
    Entry {
        mode: EntryKind::Blob.into(),
        filename: name.into(),
        oid,
    }
}

/// Every file of a plain tree (a cut file is one file), with its path.
fn plain_files(mirror: &Mirror, tree: ObjectId) -> Result<Vec<Plain>> {
    let mut files = Vec::new();
    let mut pending = vec![(String::new(), tree)];
    while let Some((prefix, tree)) = pending.pop() {
        for (filename, entry) in mirror.entries(Some(tree))? {
            let path = format!("{prefix}{filename}");
            if path.contains('\n') {
                return Err(Error::corrupt(format!(
                    "the mirror holds a file whose name holds a newline: {path:?}"
                )));
            }
            if entry.mode.is_tree() && !mirror.is_file(&entry)? {
                pending.push((format!("{path}/"), entry.oid));
                continue;
            }
            let kind = if entry.mode.is_tree() {
                EntryKind::Tree
            } else {
                EntryKind::Blob
            };
            files.push(Plain {
                path,
                kind,
                oid: entry.oid,
            });
        }
    }
    Ok(files)
}
