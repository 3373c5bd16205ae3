//! A sealed tree opened back into the plain tree it was made from, every file authenticated before
//! the plain tree exists: a blob that does not open (changed on the remote, or not age), a name that
//! is not its content's keyed path (a group's: all its paths), a path that is not a plain relative
//! one, a path held twice, or a file that is not where a sealed tree has files, and nothing is
//! returned but the error naming it. The plain tree is then merged as any fetched tree is
//! (`merge`), which verifies the store's files in their turn.

use std::collections::BTreeMap;

use age::x25519::Identity;
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::objs::tree::{Entry, EntryKind};
use gix::zlib::Compression;

use super::envelope::{Opened, Unopened, open};
use super::ledger::{Ledger, Plain};
use super::names::{group_name, name};
use super::pack::PackWriter;
use super::{KEY, Keyring, RECIPIENTS};
use crate::error::{Error, Result};
use crate::mirror::Mirror;
use crate::mirror::cut::write_file;

/// Open a sealed tree's header with `identities` (see `header::open`).
pub fn open_header(mirror: &Mirror, tree: ObjectId, identities: &[Identity]) -> Result<Keyring> {
    let root = mirror.entries(Some(tree))?;
    let file = |name: &str| -> Result<Vec<u8>> {
        let entry = root
            .get(name.as_bytes())
            .filter(|e| e.mode.is_blob())
            .ok_or_else(|| {
                Error::corrupt(format!("the remote's encrypted branch has no {name}"))
            })?;
        Ok(mirror.read_file(entry.oid)?.unwrap_or_default())
    };
    super::header::open(identities, &file(RECIPIENTS)?, &file(KEY)?)
}

/// Whether a tree is a sealed one (it has a `key.age`).
pub fn is_sealed(mirror: &Mirror, tree: ObjectId) -> Result<bool> {
    Ok(mirror.entries(Some(tree))?.contains_key(KEY.as_bytes()))
}

/// The plain tree a sealed `tree` holds, opened with `identities` under `keyring`.
pub fn unseal_tree(
    mirror: &Mirror,
    tree: ObjectId,
    identities: &[Identity],
    keyring: &Keyring,
    ledger: &mut Ledger,
) -> Result<ObjectId> {
    let cap = mirror.file_cap()?;
    ledger.walking();
    // The plain files opened go into one pack, as a fetch's objects do (not one loose file each).
    let mut pack = PackWriter::new(mirror, Compression::BEST_SPEED)?;
    let mut files = Vec::new();
    for (dir, entry) in mirror.entries(Some(tree))? {
        let dir = dir.to_str_lossy().into_owned();
        if dir == RECIPIENTS || dir == KEY {
            continue;
        }
        if !entry.mode.is_tree() || dir.len() != 2 {
            return Err(Error::corrupt(format!(
                "the remote holds {dir}, no sealed file"
            )));
        }
        for (rest, entry) in mirror.entries(Some(entry.oid))? {
            let at = format!("{dir}/{}", rest.to_str_lossy());
            // A blob opened before holds what it held then (its id is its content's hash).
            let known = ledger
                .opened(&entry.oid)
                .filter(|p| mirror.repo().has_object(p.oid));
            if let Some(plain) = known {
                files.push(checked(keyring, &at, plain.clone())?);
                ledger.keep(entry.oid);
                continue;
            }
            let group = ledger
                .group(&entry.oid)
                .filter(|g| g.iter().all(|p| mirror.repo().has_object(p.oid)));
            if let Some(group) = group {
                files.extend(checked_group(keyring, &at, group.to_vec())?);
                ledger.keep(entry.oid);
                continue;
            }
            let sealed = mirror
                .read_file(entry.oid)?
                .ok_or_else(|| Error::corrupt(format!("the remote's {at} is a folder, no file")))?;
            let opened = open(identities, &sealed).map_err(|why| {
                Error::corrupt(format!(
                    "the remote's {at} fails authentication ({}): it was changed, nothing was merged",
                    match why {
                        Unopened::NotForUs => "it is not encrypted to this machine's key".into(),
                        Unopened::Forged(why) => why,
                    }
                ))
            })?;
            match opened {
                Opened::File(path, bytes) => {
                    let (kind, oid) = write_file(&mut pack, &bytes, cap)?;
                    let plain = checked(keyring, &at, Plain { path, kind, oid })?;
                    ledger.remember(entry.oid, plain.clone());
                    files.push(plain);
                }
                Opened::Group(members) => {
                    let mut group = Vec::with_capacity(members.len());
                    for (path, bytes) in members {
                        let (kind, oid) = write_file(&mut pack, &bytes, cap)?;
                        group.push(Plain { path, kind, oid });
                    }
                    let group = checked_group(keyring, &at, group)?;
                    ledger.remember_group(entry.oid, group.clone());
                    files.extend(group);
                }
            }
        }
    }
    pack.finish()?;
    plain_tree(mirror, files)
}

/// The files of a group, if the group belongs at the sealed name `at` and each path is a plain
/// relative one.
fn checked_group(keyring: &Keyring, at: &str, group: Vec<Plain>) -> Result<Vec<Plain>> {
    let (dir, rest) = group_name(&keyring.secret, group.iter().map(|p| p.path.as_str()));
    if format!("{dir}/{rest}") != at {
        return Err(Error::corrupt(format!(
            "the remote's {at} holds files of other names: it was moved, nothing was merged"
        )));
    }
    group.into_iter().map(plain_path(at)).collect()
}

/// `plain`, if it belongs at the sealed name `at`, and its path is a plain relative one.
fn checked(keyring: &Keyring, at: &str, plain: Plain) -> Result<Plain> {
    let (dir, rest) = name(&keyring.secret, &plain.path);
    if format!("{dir}/{rest}") != at {
        return Err(Error::corrupt(format!(
            "the remote's {at} holds a file of another name: it was moved, nothing was merged"
        )));
    }
    plain_path(at)(plain)
}

/// `plain` if its path is a plain relative one, for the sealed file at `at`.
fn plain_path(at: &str) -> impl Fn(Plain) -> Result<Plain> + '_ {
    move |plain| {
        let relative = plain
            .path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..");
        if !relative {
            return Err(Error::corrupt(format!(
                "the remote's {at} names a path that is not a plain relative one"
            )));
        }
        Ok(plain)
    }
}

/// A folder of the plain tree being built: files, and folders by name.
#[derive(Default)]
struct Folder {
    files: Vec<Entry>,
    folders: BTreeMap<String, Folder>,
}

/// Write the plain tree of `files`.
fn plain_tree(mirror: &Mirror, files: Vec<Plain>) -> Result<ObjectId> {
    let mut root = Folder::default();
    for file in files {
        let mut parts: Vec<&str> = file.path.split('/').collect();
        let filename = parts.pop().expect("split yields one part at least");
        let folder = parts.into_iter().fold(&mut root, |folder, part| {
            folder.folders.entry(part.to_string()).or_default()
        });
        folder.files.push(Entry {
            mode: file.kind.into(),
            filename: filename.into(),
            oid: file.oid,
        });
    }
    write_folder(mirror, root)
}

fn write_folder(mirror: &Mirror, folder: Folder) -> Result<ObjectId> {
    let mut entries = folder.files;
    entries.sort_by(|a, b| a.filename.cmp(&b.filename));
    if let Some(twice) = entries.windows(2).find(|w| w[0].filename == w[1].filename) {
        return Err(Error::corrupt(format!(
            "the remote holds {} twice",
            twice[0].filename
        )));
    }
    for (name, sub) in folder.folders {
        if entries.iter().any(|e| e.filename == name.as_bytes()) {
            return Err(Error::corrupt(format!(
                "the remote holds {name} both as a file and as a folder"
            )));
        }
        entries.push(Entry {
            mode: EntryKind::Tree.into(),
            filename: name.into(),
            oid: write_folder(mirror, sub)?,
        });
    }
    mirror.write_tree(entries)
}
