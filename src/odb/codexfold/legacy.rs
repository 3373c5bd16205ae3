//! pack-v2 and pack-v1: one `index.json` listing every object and its blocks. It is loaded whole
//! (a legacy form, written by no current build) and validated as the reference validates it (§8
//! step 5), then looked up by exact string match on the sha256, as the reference does.
//!
//! Not for pack-v3 (`v3`) nor for reading blocks (`block`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::block::{BlockRef, Encoding};
use super::gojson::{self, Struct, Value};
use super::{
    Format, GenerationFiles, Object, check_bounds, check_generation_dir, invalid, safe_name,
};
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};

const INDEX: &str = "index.json";

#[derive(Default)]
struct Index {
    version: i64,
    kind: String,
    generation: String,
    block_bytes: i64,
    objects: Vec<JsonObject>,
}

#[derive(Default)]
struct JsonObject {
    sha256: String,
    raw_bytes: i64,
    blocks: Vec<JsonBlock>,
}

#[derive(Default)]
struct JsonBlock {
    pack: String,
    pack_offset: i64,
    stored_bytes: i64,
    raw_offset: i64,
    raw_bytes: i64,
    sha256: String,
    encoding: String,
}

const INDEX_STRUCT: Struct = Struct {
    name: "packIndex",
    fields: &[
        "version",
        "kind",
        "generation",
        "created_at",
        "block_bytes",
        "objects",
    ],
};
const OBJECT_STRUCT: Struct = Struct {
    name: "packObject",
    fields: &["sha256", "raw_bytes", "blocks"],
};
const BLOCK_STRUCT: Struct = Struct {
    name: "packBlock",
    fields: &[
        "pack",
        "pack_offset",
        "stored_bytes",
        "raw_offset",
        "raw_bytes",
        "sha256",
        "encoding",
    ],
};

fn set_int(
    s: &Struct,
    field: &str,
    value: &Value,
    target: &mut i64,
    type_name: &str,
) -> Result<(), String> {
    if let Some(n) = s.int(field, value, type_name)? {
        *target = n;
    }
    Ok(())
}

fn set_string(s: &Struct, field: &str, value: &Value, target: &mut String) -> Result<(), String> {
    if let Some(text) = s.string(field, value)? {
        *target = text;
    }
    Ok(())
}

fn decode(bytes: &[u8]) -> Result<Index, String> {
    let doc = gojson::parse(bytes)?;
    let s = &INDEX_STRUCT;
    let mut index = Index::default();
    for (field, value) in s.members(&doc)? {
        match field {
            "version" => set_int(s, field, value, &mut index.version, "int")?,
            "kind" => set_string(s, field, value, &mut index.kind)?,
            "generation" => set_string(s, field, value, &mut index.generation)?,
            "created_at" => set_string(s, field, value, &mut String::new())?,
            "block_bytes" => set_int(s, field, value, &mut index.block_bytes, "int64")?,
            _ /* objects */ => {
                index.objects = s
                    .array(field, value, "[]packObject")?
                    .iter()
                    .map(decode_object)
                    .collect::<Result<_, String>>()?;
            }
        }
    }
    Ok(index)
}

fn decode_object(value: &Value) -> Result<JsonObject, String> {
    let s = &OBJECT_STRUCT;
    let mut object = JsonObject::default();
    for (field, value) in s.members(value)? {
        match field {
            "sha256" => set_string(s, field, value, &mut object.sha256)?,
            "raw_bytes" => set_int(s, field, value, &mut object.raw_bytes, "int64")?,
            _ /* blocks */ => {
                object.blocks = s
                    .array(field, value, "[]packBlock")?
                    .iter()
                    .map(decode_block)
                    .collect::<Result<_, String>>()?;
            }
        }
    }
    Ok(object)
}

fn decode_block(value: &Value) -> Result<JsonBlock, String> {
    let s = &BLOCK_STRUCT;
    let mut block = JsonBlock::default();
    for (field, value) in s.members(value)? {
        match field {
            "pack" => set_string(s, field, value, &mut block.pack)?,
            "pack_offset" => set_int(s, field, value, &mut block.pack_offset, "int64")?,
            "stored_bytes" => set_int(s, field, value, &mut block.stored_bytes, "int64")?,
            "raw_offset" => set_int(s, field, value, &mut block.raw_offset, "int64")?,
            "raw_bytes" => set_int(s, field, value, &mut block.raw_bytes, "int64")?,
            "sha256" => set_string(s, field, value, &mut block.sha256)?,
            _ /* encoding */ => set_string(s, field, value, &mut block.encoding)?,
        }
    }
    Ok(block)
}

/// The objects of a v2/v1 generation, by their sha256 exactly as the index spells it.
pub struct Objects {
    path: PathBuf,
    format: Format,
    /// In index order, for listing.
    order: Vec<String>,
    by_sha: HashMap<String, Object>,
    packs: Vec<String>,
}

impl Objects {
    /// §8 step 5. `name` is the generation folder's name.
    pub fn open(dir: &Path, name: &str) -> Result<Self> {
        let path = dir.join(INDEX);
        let bytes = std::fs::read(&path).with_path("read pack index", &path)?;
        let mut index =
            decode(&bytes).map_err(|why| invalid(&path, format!("decode pack index: {why}")))?;
        if index.version == 1 {
            for block in index.objects.iter_mut().flat_map(|o| o.blocks.iter_mut()) {
                if block.encoding.is_empty() {
                    block.encoding = "zstd".into();
                }
            }
        }
        check_generation_dir(&path, &index.generation, name)?;
        let format = match (index.version, index.kind.as_str()) {
            (2, "pack-v2") => Format::V2,
            (1, "pack-v1") => Format::V1,
            (version, kind) => {
                let why = format!("unsupported pack index version={version} kind={kind:?}");
                return Err(invalid(&path, why));
            }
        };
        if !safe_name(&index.generation) || index.block_bytes <= 0 {
            return Err(invalid(&path, "invalid pack index"));
        }
        let mut objects = Self {
            path,
            format,
            order: Vec::new(),
            by_sha: HashMap::new(),
            packs: Vec::new(),
        };
        let mut pack_numbers = HashMap::new();
        for object in index.objects {
            let blocks = objects.check_object(&object, &mut pack_numbers)?;
            objects.order.push(object.sha256.clone());
            let raw_bytes = object.raw_bytes as u64;
            objects
                .by_sha
                .insert(object.sha256, Object { raw_bytes, blocks });
        }
        Ok(objects)
    }

    /// Steps 5.6–5.8 for one object; registers the packs its blocks use.
    fn check_object(
        &mut self,
        object: &JsonObject,
        pack_numbers: &mut HashMap<String, usize>,
    ) -> Result<Vec<BlockRef>> {
        let sha = &object.sha256;
        if sha.len() != 64 || object.raw_bytes < 0 {
            return Err(self.invalid(format!("invalid pack object {sha:?}")));
        }
        if self.by_sha.contains_key(sha) {
            return Err(self.invalid(format!("duplicate pack object {sha}")));
        }
        let mut blocks = Vec::with_capacity(object.blocks.len());
        let mut raw_offset = 0i64;
        for (number, block) in object.blocks.iter().enumerate() {
            let well_formed = safe_name(&block.pack)
                && block.pack_offset >= 0
                && block.stored_bytes > 0
                && block.raw_bytes > 0
                && block.raw_offset == raw_offset
                && block.sha256.len() == 64;
            if !well_formed {
                return Err(self.invalid(format!("invalid block {number} for object {sha}")));
            }
            let encoding = match (block.encoding.as_str(), self.format) {
                ("zstd", _) => Encoding::Zstd,
                ("raw", Format::V2) => Encoding::Raw,
                (other, _) => {
                    return Err(
                        self.invalid(format!("invalid block encoding {other:?} for object {sha}"))
                    );
                }
            };
            raw_offset = raw_offset
                .checked_add(block.raw_bytes)
                .ok_or_else(|| self.invalid(format!("invalid block {number} for object {sha}")))?;
            let next = pack_numbers.len();
            let pack = *pack_numbers.entry(block.pack.clone()).or_insert_with(|| {
                self.packs.push(block.pack.clone());
                next
            });
            blocks.push(BlockRef {
                pack,
                pack_offset: block.pack_offset as u64,
                stored_bytes: block.stored_bytes as u64,
                raw_bytes: block.raw_bytes as u64,
                digest: Digest::parse(&block.sha256),
                encoding,
            });
        }
        if raw_offset != object.raw_bytes {
            return Err(self.invalid(format!(
                "object {sha} block bytes {raw_offset}, want {}",
                object.raw_bytes
            )));
        }
        Ok(blocks)
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// The pack files blocks use, in order of first use.
    pub fn pack_names(&self) -> &[String] {
        &self.packs
    }

    /// §8 step 7: every block inside its pack file.
    pub fn check_bounds(&self, files: &GenerationFiles) -> Result<()> {
        for sha in &self.order {
            check_bounds(files, sha, &self.by_sha[sha].blocks)?;
        }
        Ok(())
    }

    pub fn find(&self, digest: &Digest) -> Option<Object> {
        self.by_sha.get(&digest.to_string()).cloned()
    }

    pub fn digests<'a>(&'a self, dir: &'a Path) -> impl Iterator<Item = Result<Digest>> + 'a {
        self.order.iter().map(move |sha| {
            Digest::parse(sha).ok_or_else(|| {
                invalid(
                    dir,
                    format!(
                        "object {sha:?} is not named by a lowercase sha256: no lookup finds it"
                    ),
                )
            })
        })
    }

    fn invalid(&self, why: String) -> Error {
        invalid(&self.path, why)
    }
}
