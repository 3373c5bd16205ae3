//! Changing how a store's objects are laid out without changing what it holds: repacking every
//! object into one pack (grouped by session), and unpacking them (and packed manifests) back into
//! the plain Fold V1 layout of loose files, in place or as a copy elsewhere.
//!
//! Callers hold the store lock exclusive. Nothing is removed before what replaces it is durable
//! and checked: a repack's pack is in place before the old packs and loose files go; an unpack
//! checks every manifest against the loose objects alone before any pack goes.

use std::fs;
use std::path::Path;

use rayon::prelude::*;

use super::{Store, gc, packing};
use crate::error::{Error, IoContext, Result};
use crate::odb::pack::PackOptions;
use crate::odb::repack::{Fate, Repacked, Sources, repack};
use crate::odb::unpack::{Unpacked, unpack};

/// Every pack and every loose object (but registered dictionaries, which stay loose) into one
/// pack, each session's objects together in the order its manifest names them. Drops nothing,
/// referenced or not: gc decides what is garbage.
pub fn repack_all(store: &Store, options: PackOptions) -> Result<Repacked> {
    let roots = gc::roots(store, &[])?;
    let packs = store
        .odb()
        .packs()?
        .iter()
        .map(|m| *m.pack.name())
        .collect();
    let sources = Sources { packs, loose: true };
    repack(
        store.odb(),
        &sources,
        roots.order,
        |_, _| Fate::Pack,
        options,
    )
}

/// Unpack in place: every packed manifest written loose (the table then goes), every object
/// written loose (without a dictionary), every manifest checked to reconstruct from loose objects
/// alone, then the packs removed.
pub fn unpack_in_place(store: &Store) -> Result<(Unpacked, usize)> {
    // The packed manifests written loose first, while their bodies are where the table says.
    packing::unpack(store, store)?;
    let unpacked = unpack(store.odb(), store.odb())?;
    check_loose(store)?;
    let mut removed = 0;
    for member in &store.odb().packs()? {
        removed += usize::from(store.odb().retire_pack(member.pack.name(), |_| true)?);
    }
    Ok((unpacked, removed))
}

/// A plain Fold V1 copy of `store` in `dir` (which must not hold a store yet): every object loose
/// without a dictionary, the manifests (generations and conflicts too), the seed indexes and the
/// dictionary registrations, each manifest checked against the copy's loose objects.
pub fn unpack_to(store: &Store, dir: &Path) -> Result<Unpacked> {
    if dir.join("manifests").exists() || dir.join("objects").exists() {
        return Err(Error::refused(format!(
            "{} holds a store already; unpack --to writes a new one",
            dir.display()
        )));
    }
    let copy = Store::init(dir)?;
    let unpacked = unpack(store.odb(), copy.odb())?;
    for name in ["manifests", "seeds", "context-fold", "dictionaries"] {
        copy_tree(
            &store.root().join(name),
            &copy.root().join(name),
            &copy.tmp_dir(),
            &store.packed_path(),
        )?;
    }
    packing::unpack(store, &copy)?;
    copy.odb().sync()?;
    check_loose(&copy)?;
    Ok(unpacked)
}

/// Every manifest of `store` reconstructs from its loose objects alone.
fn check_loose(store: &Store) -> Result<()> {
    let loose = store.loose_only();
    let files = store.manifest_files()?;
    files.par_iter().try_for_each(|path| {
        let manifest = Store::load_manifest_file(path)?;
        super::reconstruct::verify(&loose, &manifest).map_err(|e| {
            e.context(format_args!(
                "{} does not reconstruct from loose objects; nothing was removed",
                path.display()
            ))
        })
    })
}

/// Copy the files under `from` into `to` (private, each written through `tmp`), skipping temp
/// files and `skip` (the table of packed manifests: the copy gets them loose).
fn copy_tree(from: &Path, to: &Path, tmp: &Path, skip: &Path) -> Result<()> {
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_path("list", from),
    };
    crate::files::create_private_dir(to)?;
    for entry in entries {
        let entry = entry.with_path("list", from)?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') || path == skip {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().with_path("stat", &path)?.is_dir() {
            copy_tree(&path, &target, tmp, skip)?;
        } else {
            let bytes = fs::read(&path).with_path("read", &path)?;
            crate::files::atomic::write_file(tmp, ".copy-", &target, &bytes, false)?;
        }
    }
    Ok(())
}
