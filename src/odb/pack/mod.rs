//! ctxfold's own packs: many objects in one immutable file, in solid zstd blocks of related
//! objects, with an index sorted by sha256 beside it (`format` gives the byte layout).
//!
//! A pack is `<dir>/<sha256 of the .pack>.pack` plus the same name with `.idx`; the index is renamed
//! into place last, so a pack without its index is an interrupted write that readers never see.
//! Writing ([`PackWriter`]) compresses blocks on worker threads; reading ([`Pack`]) maps the index
//! and decodes one block per object read (a [`BlockCache`] saves decoding it again); [`verify`]
//! checks everything. This module does not decide which objects go in which pack, when to repack,
//! or where in a store packs live beyond [`DIR`]: that is the object database's business.

mod cache;
mod format;
mod frame;
mod index;
mod read;
mod verify;
mod workers;
mod write;

#[cfg(test)]
mod tests;

use std::fmt::Display;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};

pub use cache::{BlockCache, DEFAULT_CACHE_BYTES, Decoded, FEW_BLOCKS_BYTES};
pub use read::{Block, Location, Pack};
pub use verify::{Problem, verify};
pub use write::PackWriter;

/// The folder of a store that holds its packs (the reference's generations live in `packs/`).
pub const DIR: &str = "packs-ctxfold";

/// Raw bytes per block. Measured (examples/pack-bench.rs, level 3, no dictionary): going from
/// 256 KiB to 1 MiB blocks shrinks a fork-heavy store of real sessions by 20% and a generated one
/// by 8%, and 4 MiB by another 23% and 4%, but a read of one object decodes its whole block, and
/// that costs about 4 times more at 4 MiB than at 1 MiB. Folds take 1 MiB; see
/// [`PackOptions::aggressive`] for repacking.
pub const DEFAULT_BLOCK_BYTES: usize = 1 << 20;

/// The blocks of [`PackOptions::aggressive`]: the largest we write but for objects larger still.
pub const AGGRESSIVE_BLOCK_BYTES: usize = 4 << 20;

/// How a pack is written.
#[derive(Clone)]
pub struct PackOptions {
    /// A block is sealed once it holds this many raw bytes; an object that would overflow it
    /// starts the next block, and an object larger than this gets a block of its own.
    pub block_bytes: usize,
    /// zstd level (`repack --aggressive` uses ~19 with larger blocks).
    pub level: i32,
    /// Frames are written with this zstd dictionary (its id goes into every frame header).
    pub dictionary: Option<std::sync::Arc<[u8]>>,
    /// Compression threads.
    pub threads: usize,
}

impl PackOptions {
    /// What `repack --aggressive` is for: the smallest packs. Measured against the default, 42%
    /// smaller on a fork-heavy store of real sessions and 8% on a generated one, but written at 2
    /// to 3 MB per CPU-second instead of about 150, and a random read costs 4 times more. A
    /// dictionary matters less at this block size, either way (-5% on the first store, +2% on the
    /// second): whoever sets one should check that it pays.
    pub fn aggressive() -> Self {
        Self {
            block_bytes: AGGRESSIVE_BLOCK_BYTES,
            level: 19,
            ..Self::default()
        }
    }
}

impl Default for PackOptions {
    fn default() -> Self {
        Self {
            block_bytes: DEFAULT_BLOCK_BYTES,
            level: crate::odb::DEFAULT_LEVEL,
            dictionary: None,
            threads: std::thread::available_parallelism().map_or(2, usize::from),
        }
    }
}

/// What [`PackWriter::finish`] put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackInfo {
    pub name: Digest,
    pub objects: u32,
    pub blocks: u32,
    /// The objects' bytes, uncompressed.
    pub raw_bytes: u64,
    /// The size of the .pack file.
    pub pack_bytes: u64,
    /// The size of the .idx file.
    pub index_bytes: u64,
}

pub fn pack_path(dir: &Path, name: &Digest) -> PathBuf {
    dir.join(format!("{name}.pack"))
}

pub fn index_path(dir: &Path, name: &Digest) -> PathBuf {
    dir.join(format!("{name}.idx"))
}

/// The objects the index at `path` (of the pack `pack`) names, read from the index alone, checked
/// as every open checks it: what a pack holds, known without reading the pack.
pub fn indexed_objects(path: &Path, pack: &Digest) -> Result<Vec<Digest>> {
    let index = index::Index::open(path, pack)?;
    Ok((0..index.header().objects)
        .map(|position| Digest::from_bytes(index.object(position).digest))
        .collect())
}

/// The packs in `dir` that readers may use (those whose index is in place), sorted by name. A
/// missing folder holds no packs.
pub fn list(dir: &Path) -> Result<Vec<Digest>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_path("list", dir),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.with_path("list", dir)?;
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str().and_then(|n| n.strip_suffix(".idx")) else {
            continue;
        };
        if let Some(digest) = Digest::parse(name) {
            names.push(digest);
        }
    }
    names.sort();
    Ok(names)
}

// Every error this module builds comes from one of these, so that a typed error kind can replace
// them in one place.

/// A pack or index file whose bytes are wrong.
fn corrupt(file: &Path, why: impl Display) -> Error {
    Error::corrupt(format!("{}: {why}", file.display()))
}

/// A block whose bytes or index entry are wrong.
fn corrupt_block(pack: &Path, block: u32, why: impl Display) -> Error {
    Error::corrupt(format!("{}: block {block}: {why}", pack.display()))
}

/// An object whose bytes or index entry are wrong.
fn corrupt_object(pack: &Path, digest: &Digest, why: impl Display) -> Error {
    Error::object_corrupt(*digest, format!("{}: {why}", pack.display()))
}

/// A pack writer that cannot go on.
fn writer_error(why: impl Display) -> Error {
    Error::system("write a pack", std::io::Error::other(why.to_string()))
}
