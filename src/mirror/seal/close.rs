//! A plain mirror tree sealed: each file encrypted at its keyed name (see the module's doc), reusing
//! the blob the ledger remembers for a file sealed before under the same keyring, and the sealed
//! objects written into one pack (see `pack`).
//!
//! Manifests are sealed in groups (see `envelope`), so that they compress against each other as
//! git deltas them in clear: a fork's manifest repeats most of its original's. A group of the tree
//! the new one is built on (the remote's branch) is kept while it holds exactly the manifests it
//! held; one with a manifest changed or gone is regrouped. The manifests in no kept group (new,
//! changed, or of a regrouped group) are grouped in path order, up to `GROUP_BYTES` of plain bytes
//! a group, with the small groups of earlier syncs if any (so that syncs that each add a few
//! manifests do not leave many groups of a few). What a push sends for a changed manifest is
//! therefore its group: at most `GROUP_BYTES` before compression.

use std::collections::{BTreeMap, HashSet};

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};
use gix::zlib::Compression;

use super::envelope::{seal, seal_group};
use super::ledger::{Ledger, Plain};
use super::names::{group_name, name};
use super::pack::PackWriter;
use super::{KEY, Keyring, RECIPIENTS};
use crate::error::{Error, Result};
use crate::mirror::cut::{Objects, write_file};
use crate::mirror::{GitContext, Mirror};

/// The plain bytes of the manifests one group holds, at most (a manifest over it is a group of its
/// own). zstd's window at the level sealing compresses with (2 MiB) spans a whole group.
const GROUP_BYTES: u64 = 2 << 20;

/// A kept group under this many plain bytes is regrouped with the manifests a sync adds.
const SMALL_GROUP: u64 = GROUP_BYTES / 8;

/// Whether the file at a plain path is sealed in a group.
fn grouped(path: &str) -> bool {
    path.starts_with("manifests/")
}

/// Seal the plain `tree` under `keyring`, with `header` (the blobs of `recipients` and `key.age`),
/// on top of the sealed tree `parent` (the remote's, `None` for an empty remote).
pub fn seal_tree(
    mirror: &Mirror,
    tree: ObjectId,
    keyring: &Keyring,
    header: (ObjectId, ObjectId),
    ledger: &mut Ledger,
    parent: Option<ObjectId>,
) -> Result<ObjectId> {
    let cap = mirror.file_cap()?;
    ledger.walking();
    let mut pack = PackWriter::new(mirror, Compression::NONE)?;
    let mut dirs: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    let mut place = |(dir, rest): (String, String), kind: EntryKind, oid| {
        dirs.entry(dir).or_default().push(Entry {
            mode: kind.into(),
            filename: rest.into(),
            oid,
        });
    };
    let (manifests, files): (Vec<Plain>, Vec<Plain>) = plain_files(mirror, tree)?
        .into_iter()
        .partition(|f| grouped(&f.path));
    for file in files {
        let known = ledger.sealed(&file).and_then(|id| {
            let header = mirror.repo().try_find_header(id).ok().flatten()?;
            Some((id, header.kind()))
        });
        let (oid, kind) = match known {
            Some((id, kind)) => {
                ledger.keep(id);
                let kind = match kind {
                    gix::object::Kind::Tree => EntryKind::Tree,
                    _ => EntryKind::Blob,
                };
                (id, kind)
            }
            None => {
                let bytes = mirror
                    .read_file(file.oid)?
                    .ok_or_else(|| Error::corrupt(format!("{} is no file", file.path)))?;
                let sealed = seal(&keyring.recipients, &file.path, &bytes)?;
                let (kind, id) = write_file(&mut pack, &sealed, cap)?;
                ledger.remember(id, file.clone());
                (id, kind)
            }
        };
        place(name(&keyring.secret, &file.path), kind, oid);
    }

    // The parent's groups that hold exactly manifests of this tree, with their sizes.
    let wanted: HashSet<&Plain> = manifests.iter().collect();
    let mut claimed: HashSet<&Plain> = HashSet::new();
    let mut kept = Vec::new();
    for entry in sealed_files(mirror, parent)? {
        let Some(group) = ledger.group(&entry.oid) else {
            continue;
        };
        let group: Vec<&Plain> = group
            .iter()
            .filter_map(|p| wanted.get(p).copied())
            .collect();
        let whole = ledger.group(&entry.oid).map(<[Plain]>::len) == Some(group.len());
        if !whole || group.iter().any(|p| claimed.contains(p)) {
            continue;
        }
        claimed.extend(group.iter().copied());
        let size: u64 = group
            .iter()
            .map(|p| {
                let header = mirror.repo().try_find_header(p.oid).ok().flatten();
                header.map_or(0, |h| h.size())
            })
            .sum();
        kept.push((entry, group, size));
    }
    let mut loose: Vec<&Plain> = manifests.iter().filter(|p| !claimed.contains(p)).collect();
    if !loose.is_empty() {
        kept.retain(|(_, group, size)| {
            let small = *size < SMALL_GROUP;
            if small {
                loose.extend(group.iter().copied());
            }
            !small
        });
    }
    for (entry, group, _) in &kept {
        let kind = match entry.mode.is_tree() {
            true => EntryKind::Tree,
            false => EntryKind::Blob,
        };
        ledger.keep(entry.oid);
        place(
            group_name(&keyring.secret, group.iter().map(|p| p.path.as_str())),
            kind,
            entry.oid,
        );
    }
    loose.sort_by(|a, b| a.path.cmp(&b.path));
    let mut batch: Vec<(String, Vec<u8>)> = Vec::new();
    let mut plains = Vec::new();
    let mut size = 0;
    for (n, file) in loose.iter().enumerate() {
        let bytes = mirror
            .read_file(file.oid)?
            .ok_or_else(|| Error::corrupt(format!("{} is no file", file.path)))?;
        size += bytes.len() as u64;
        batch.push((file.path.clone(), bytes));
        plains.push((*file).clone());
        let next = loose.get(n + 1).map_or(u64::MAX, |p| {
            let header = mirror.repo().try_find_header(p.oid).ok().flatten();
            header.map_or(0, |h| h.size())
        });
        if size.saturating_add(next) <= GROUP_BYTES {
            continue;
        }
        let sealed = seal_group(&keyring.recipients, &batch)?;
        let (kind, id) = write_file(&mut pack, &sealed, cap)?;
        place(
            group_name(
                &keyring.secret,
                plains.iter().map(|p: &Plain| p.path.as_str()),
            ),
            kind,
            id,
        );
        ledger.remember_group(id, std::mem::take(&mut plains));
        batch.clear();
        size = 0;
    }

    let mut root = vec![blob_entry(RECIPIENTS, header.0), blob_entry(KEY, header.1)];
    for (dir, entries) in dirs {
        root.push(Entry {
            mode: EntryKind::Tree.into(),
            filename: dir.into(),
            oid: pack.tree(entries)?,
        });
    }
    let root = pack.tree(root)?;
    pack.finish()?;
    Ok(root)
}

/// The entries of a sealed tree's files (`None`: none).
fn sealed_files(mirror: &Mirror, tree: Option<ObjectId>) -> Result<Vec<Entry>> {
    let mut files = Vec::new();
    for (name, entry) in mirror.entries(tree)? {
        if entry.mode.is_tree() && name.len() == 2 {
            files.extend(mirror.entries(Some(entry.oid))?.into_values());
        }
    }
    Ok(files)
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
