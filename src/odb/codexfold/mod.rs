//! The reference implementation's pack generations (`<store>/packs/CURRENT` naming
//! `packs/<generation>/`, pack-v3 tables or a legacy pack-v2/pack-v1 `index.json`), read-only, as
//! `shared/spec/codexfold-pack.md` describes them: so that a store whose objects live only there
//! restores byte for byte, and fsck and gc see those objects as present.
//!
//! Opening validates everything the reference's resolver validates, in its order (§8), with errors
//! naming the file. Unlike the reference, this reader writes nothing (no lease: a read-only store
//! or snapshot opens), rejects `/` as a generation, and checks every object's whole sha256 as well
//! as each block's. Not for writing the format, nor for deciding between loose and packed copies.

mod block;
mod gojson;
mod legacy;
mod v3;

#[cfg(test)]
#[path = "../../../tests/support/codexfold_pack.rs"]
mod reference_writer;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::fmt::{self, Display};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, IoContext, Result};
use block::BlockRef;

/// The folder of a store that holds the reference's generations.
pub const DIR: &str = "packs";

/// The file in [`DIR`] naming the live generation.
pub const CURRENT: &str = "CURRENT";

/// Which index form a generation has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    V1,
    V2,
    V3,
}

/// The live generation of a store, opened and validated.
pub struct Generation {
    name: String,
    files: GenerationFiles,
    index: Index,
}

/// The generation folder and its open pack files, as blocks refer to them.
struct GenerationFiles {
    dir: PathBuf,
    packs: Vec<PackFile>,
}

struct PackFile {
    name: String,
    file: File,
    len: u64,
}

enum Index {
    V3(v3::Tables),
    Legacy(legacy::Objects),
}

/// An object of the generation, found by digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub raw_bytes: u64,
    blocks: Vec<BlockRef>,
}

impl Object {
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }
}

/// Something wrong with one object (or with the listing of objects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub object: Option<Digest>,
    pub what: String,
}

impl Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.what)
    }
}

impl Generation {
    /// The live generation of the store at `store_root`, or `None` when `packs/CURRENT` does not
    /// exist.
    pub fn open(store_root: &Path) -> Result<Option<Self>> {
        let packs = store_root.join(DIR);
        let current = packs.join(CURRENT);
        let text = match fs::read(&current) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_path("read pack CURRENT", &current),
        };
        // Go's TrimSpace; a name that is not UTF-8 could not be trimmed as Go does, so it is unsafe.
        let name = String::from_utf8(text)
            .map(|text| text.trim().to_string())
            .unwrap_or_default();
        if !safe_name(&name) {
            return Err(invalid(
                &current,
                format!("unsafe pack generation {name:?}"),
            ));
        }
        let dir = packs.join(&name);
        // The reference fails here on taking its lease in a folder that does not exist.
        let meta = fs::metadata(&dir).with_path("open pack generation", &dir)?;
        if !meta.is_dir() {
            return Err(invalid(&dir, "not a directory"));
        }
        let meta_path = dir.join(v3::META);
        let (index, pack_names) = match fs::metadata(&meta_path) {
            Ok(_) => {
                let tables = v3::Tables::open(&dir, &name)?;
                let names = tables.pack_names().to_vec();
                (Index::V3(tables), names)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let objects = legacy::Objects::open(&dir, &name)?;
                let names = objects.pack_names().to_vec();
                (Index::Legacy(objects), names)
            }
            Err(e) => return Err(e).with_path("stat", &meta_path),
        };
        let mut files = GenerationFiles {
            dir,
            packs: Vec::new(),
        };
        for pack in pack_names {
            let path = files.dir.join(&pack);
            let file = File::open(&path).with_path("open pack", &path)?;
            let len = file.metadata().with_path("stat", &path)?.len();
            files.packs.push(PackFile {
                name: pack,
                file,
                len,
            });
        }
        if let Index::V3(tables) = &index {
            tables.validate(&files)?;
        }
        if let Index::Legacy(objects) = &index {
            objects.check_bounds(&files)?;
        }
        Ok(Some(Self { name, files, index }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `<store>/packs/<generation>`.
    pub fn dir(&self) -> &Path {
        &self.files.dir
    }

    pub fn format(&self) -> Format {
        match &self.index {
            Index::V3(_) => Format::V3,
            Index::Legacy(objects) => objects.format(),
        }
    }

    pub fn find(&self, digest: &Digest) -> Result<Option<Object>> {
        match &self.index {
            Index::V3(tables) => tables.find(digest, &self.files),
            Index::Legacy(objects) => Ok(objects.find(digest)),
        }
    }

    /// Stream the object `digest` into `out`, block by block, checking each block's length and
    /// sha256 and then the whole object's size (against `expected` too, before decoding) and
    /// sha256. Returns the raw size. Bytes reach `out` before the checks: callers that must not
    /// expose unverified bytes write into a temp file or buffer and act on the result.
    pub fn read(&self, digest: &Digest, expected: Option<u64>, out: &mut dyn Write) -> Result<u64> {
        let object = self
            .find(digest)?
            .ok_or_else(|| invalid(&self.files.dir, format!("object {digest} is not packed")))?;
        if let Some(expected) = expected.filter(|&e| e != object.raw_bytes) {
            let why = format!(
                "object {digest} raw size {}, want {expected}",
                object.raw_bytes
            );
            return Err(invalid(&self.files.dir, why));
        }
        let mut sink = HashingWriter::new(out);
        for (number, block) in object.blocks.iter().enumerate() {
            block::read(&self.files, digest, number, block, &mut sink)?;
        }
        let (_, actual, bytes) = sink.finish();
        if actual != *digest {
            let why = format!("object {digest}: its blocks hash to {actual}");
            return Err(invalid(&self.files.dir, why));
        }
        Ok(bytes)
    }

    /// Every object's digest, in index order. An object the index names in a way no lookup can
    /// reach (not lowercase hex) is an `Err` naming it.
    pub fn objects(&self) -> Box<dyn Iterator<Item = Result<Digest>> + '_> {
        match &self.index {
            Index::V3(tables) => Box::new(tables.digests()),
            Index::Legacy(objects) => Box::new(objects.digests(&self.files.dir)),
        }
    }

    /// Read back every object (so every block an object uses), collecting what fails.
    pub fn verify(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for digest in self.objects() {
            let problem = match digest {
                Ok(digest) => match self.read(&digest, None, &mut io::sink()) {
                    Ok(_) => continue,
                    Err(e) => Problem {
                        object: Some(digest),
                        what: e.to_string(),
                    },
                },
                Err(e) => Problem {
                    object: None,
                    what: e.to_string(),
                },
            };
            problems.push(problem);
        }
        problems
    }
}

/// The reference's `safeGeneration`, also its rule for pack file names: not empty, `.` or `..`,
/// and no `/` (so `/` itself, which the reference lets through, is refused too).
fn safe_name(name: &str) -> bool {
    !matches!(name, "" | "." | "..") && !name.contains('/')
}

/// Check that pack names are safe and distinct.
fn check_pack_names<'a>(file: &Path, names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen = HashSet::new();
    for name in names {
        if !safe_name(name) {
            return Err(invalid(file, format!("unsafe pack filename {name:?}")));
        }
        if !seen.insert(name) {
            return Err(invalid(file, format!("duplicate pack filename {name:?}")));
        }
    }
    Ok(())
}

/// The directory-name rule: a generation's index names its folder, unless the folder is still
/// (or was renamed back to) a build folder.
fn check_generation_dir(file: &Path, generation: &str, dir_name: &str) -> Result<()> {
    if generation == dir_name || dir_name.starts_with(".generation-") {
        return Ok(());
    }
    Err(invalid(
        file,
        format!("pack index generation {generation:?} does not match directory {dir_name:?}"),
    ))
}

/// Every block of an object lies inside its pack file.
fn check_bounds(files: &GenerationFiles, object: &str, blocks: &[BlockRef]) -> Result<()> {
    for (number, block) in blocks.iter().enumerate() {
        let pack = &files.packs[block.pack];
        if block.pack_offset > pack.len || block.stored_bytes > pack.len - block.pack_offset {
            let why = format!("packed block {object}:{number} exceeds {} size", pack.name);
            return Err(invalid(&files.dir, why));
        }
    }
    Ok(())
}

// Every error this module builds comes from one of these, so that a typed error kind can replace
// them in one place.

/// A generation file (or folder) that is not what the reference writes.
fn invalid(file: &Path, why: impl Display) -> Error {
    Error::corrupt(format!("{}: {why}", file.display()))
}

/// A block whose bytes are not what its index records, named by its object and number.
fn bad_block(
    files: &GenerationFiles,
    object: &Digest,
    number: usize,
    block: &BlockRef,
    why: String,
) -> Error {
    let pack = files.dir.join(&files.packs[block.pack].name);
    // The reference's own wording (`packed block <sha>:<i> …`), so its users recognise it.
    Error::corrupt(format!(
        "{}: packed block {object}:{number}: {why}",
        pack.display()
    ))
}
