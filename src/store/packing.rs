//! Moving manifests between their two forms: gc packs the loose ones (sessions' and
//! generations'; conflicts stay loose), `unpack` writes the packed ones back as loose files.
//!
//! Both keep the order that lets a crash anywhere leave every manifest readable, as git's
//! `pack-refs` does: packing writes the bodies as objects of one pack and makes it durable, then the table
//! naming it, and only then removes the loose file (which stood over the packed one until then);
//! unpacking writes and fsyncs every loose file before the table goes. The caller holds the store
//! lock exclusive, so no commit or removal runs between a read and the removal it justifies.

use std::fs;
use std::path::{Path, PathBuf};

use super::manifest::Manifest;
use super::{Store, packed};
use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::files::atomic::{sync_parent, write_file};

/// How many loose manifests a fold leaves before it packs them (as `git gc --auto` packs loose
/// objects past a count): the store's file count stays bounded however many sessions it holds.
pub const AUTO: usize = 256;

/// Pack the loose manifests if there are [`AUTO`] or more and no other writer holds the store
/// lock (nor waits for it: it is taken only if free); returns how many were packed.
pub fn pack_auto(store: &Store) -> Result<usize> {
    store.migrate_legacy_packed()?;
    if store.loose_manifest_files()?.len() < AUTO {
        return Ok(0);
    }
    match store.try_lock(super::lock::Mode::Exclusive)? {
        Some(_lock) => pack(store),
        None => Ok(0),
    }
}

/// The loose manifests gc packs, with their names: every one a table may name (a session's, a
/// generation's) that reads as a manifest. One that does not read stays loose, for fsck to name
/// (and gc removes nothing while it is there).
pub fn packable(store: &Store) -> Result<Vec<(String, PathBuf, Vec<u8>)>> {
    let dir = store.manifests_dir();
    let mut found = Vec::new();
    for path in store.loose_manifest_files()? {
        let Some(name) = path.strip_prefix(&dir).ok().and_then(|r| r.to_str()) else {
            continue;
        };
        if packed::check_name(name).is_err() {
            continue;
        }
        let bytes = fs::read(&path).with_path("read", &path)?;
        if Manifest::from_slice(&bytes, name).is_ok() {
            found.push((name.to_string(), path, bytes));
        }
    }
    Ok(found)
}

/// Pack the loose manifests [`packable`] finds; returns how many. Each body is kept byte for
/// byte (the reference's pretty JSON stays as it was written).
pub fn pack(store: &Store) -> Result<usize> {
    store.migrate_legacy_packed()?;
    let loose = packable(store)?;
    if loose.is_empty() {
        return Ok(0);
    }
    // One pack of the bodies not stored yet (not a loose file each), durable once committed.
    let odb = store.odb();
    let mut writer = odb.pack_writer(odb.pack_options(false)?)?;
    let mut bodies: Vec<(&str, Digest)> = Vec::with_capacity(loose.len());
    for (name, _, bytes) in &loose {
        let digest = Digest::of(bytes);
        if odb.reuse(&digest)?.is_none() {
            writer.add(&digest, bytes)?;
        }
        bodies.push((name, digest));
    }
    odb.commit_pack(writer)?;
    store.change_packed(|table| {
        for (name, digest) in &bodies {
            table.insert(name, *digest)?;
        }
        Ok(())
    })?;
    // The bodies are durable and named: a loose file may go, if it still holds what was packed.
    let mut gone: Vec<&Path> = Vec::new();
    for (_, path, bytes) in &loose {
        if fs::read(path).is_ok_and(|now| now == *bytes) {
            crate::files::remove_if_present(path)?;
            gone.push(path);
        }
    }
    let mut dirs: Vec<&Path> = gone.iter().filter_map(|p| p.parent()).collect();
    dirs.sort_unstable();
    dirs.dedup();
    for dir in dirs {
        // A generations folder left empty goes (its parent fsynced), as `generations::remove`.
        match dir != store.manifests_dir() && fs::remove_dir(dir).is_ok() {
            true => sync_parent(dir)?,
            false => crate::files::atomic::sync_dir(dir)?,
        }
    }
    Ok(loose.len())
}

/// Write every packed manifest of `store` as a loose file under `into`'s `manifests/` (a file
/// there already stands, as it stood over the packed one), each made durable; returns how many
/// were written. With `into` the store itself, the table then goes: nothing is packed any more.
pub fn unpack(store: &Store, into: &Store) -> Result<usize> {
    let table = store.packed()?;
    let mut written = 0;
    for (name, _) in table.iter() {
        let target = into.manifests_dir().join(name);
        if target.exists() {
            continue;
        }
        let Some(bytes) = store.manifest_bytes_at(&store.manifests_dir().join(name))? else {
            continue;
        };
        crate::files::create_private_dir(target.parent().expect("names are in manifests/"))?;
        crate::files::create_private_dir(&into.tmp_dir())?;
        write_file(&into.tmp_dir(), ".manifest-", &target, &bytes, false)?;
        written += 1;
    }
    if into.root() == store.root() && !table.is_empty() {
        store.change_packed(|table| {
            *table = packed::Table::default();
            Ok(())
        })?;
    }
    Ok(written)
}
