//! pack-v3: `index.meta.json` and two big-endian tables, `objects.idx` (52-byte records sorted by
//! digest) and `blocks.idx` (69-byte records). Lookups binary-search `objects.idx` with `pread`;
//! nothing is loaded. Opening checks every object record and the block records they use (§8
//! step 7), streaming through the tables.
//!
//! Not for reading blocks (`block`) nor for the legacy `index.json` (`legacy`).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::block::{BlockRef, Encoding};
use super::gojson::{self, Struct};
use super::{
    GenerationFiles, Object, check_bounds, check_generation_dir, check_pack_names, invalid,
    safe_name,
};
use crate::digest::Digest;
use crate::error::{IoContext, Result};
use crate::odb::extent::Extent;

pub const META: &str = "index.meta.json";
const OBJECTS: &str = "objects.idx";
const BLOCKS: &str = "blocks.idx";
const OBJECT_RECORD: u64 = 52;
const BLOCK_RECORD: u64 = 69;

#[derive(Debug, Default, PartialEq, Eq)]
struct Meta {
    version: i64,
    kind: String,
    generation: String,
    block_bytes: i64,
    object_count: i64,
    block_count: i64,
    packs: Vec<String>,
}

const META_STRUCT: Struct = Struct {
    name: "indexV3Meta",
    fields: &[
        "version",
        "kind",
        "generation",
        "created_at",
        "block_bytes",
        "object_count",
        "block_count",
        "packs",
    ],
};

fn decode_meta(bytes: &[u8]) -> Result<Meta, String> {
    let s = &META_STRUCT;
    let doc = gojson::parse(bytes)?;
    let mut meta = Meta::default();
    for (field, value) in s.members(&doc)? {
        let int64 = |target: &mut i64| -> Result<(), String> {
            if let Some(n) = s.int(field, value, "int64")? {
                *target = n;
            }
            Ok(())
        };
        match field {
            "version" => {
                if let Some(n) = s.int(field, value, "int")? {
                    meta.version = n;
                }
            }
            "kind" => meta.kind = s.string(field, value)?.unwrap_or(meta.kind),
            "generation" => meta.generation = s.string(field, value)?.unwrap_or(meta.generation),
            "created_at" => {
                s.string(field, value)?;
            }
            "block_bytes" => int64(&mut meta.block_bytes)?,
            "object_count" => int64(&mut meta.object_count)?,
            "block_count" => int64(&mut meta.block_count)?,
            _ /* packs */ => {
                meta.packs = s
                    .array(field, value, "[]string")?
                    .iter()
                    .map(|item| Ok(s.string(field, item)?.unwrap_or_default()))
                    .collect::<Result<_, String>>()?;
            }
        }
    }
    Ok(meta)
}

/// The tables of an open v3 generation.
pub struct Tables {
    objects: File,
    blocks: File,
    objects_path: PathBuf,
    blocks_path: PathBuf,
    object_count: u64,
    block_count: u64,
    packs: Vec<String>,
}

/// An `objects.idx` record.
struct ObjectRecord {
    digest: [u8; 32],
    raw_bytes: i64,
    first_block: i64,
    block_count: u32,
}

impl ObjectRecord {
    fn decode(bytes: &[u8; OBJECT_RECORD as usize]) -> Self {
        Self {
            digest: bytes[..32].try_into().expect("32 bytes"),
            raw_bytes: be_i64(&bytes[32..40]),
            first_block: be_i64(&bytes[40..48]),
            block_count: u32::from_be_bytes(bytes[48..52].try_into().expect("4 bytes")),
        }
    }
}

impl Tables {
    /// §8 step 4: the meta, then the tables' sizes. `name` is the generation folder's name.
    pub fn open(dir: &Path, name: &str) -> Result<Self> {
        let meta_path = dir.join(META);
        let bytes = std::fs::read(&meta_path).with_path("read", &meta_path)?;
        let meta = decode_meta(&bytes)
            .map_err(|why| invalid(&meta_path, format!("decode pack v3 metadata: {why}")))?;
        if meta.version != 3 || meta.kind != "pack-v3" {
            let why = format!(
                "unsupported pack v3 metadata version={} kind={:?}",
                meta.version, meta.kind
            );
            return Err(invalid(&meta_path, why));
        }
        if !safe_name(&meta.generation)
            || meta.block_bytes <= 0
            || meta.object_count < 0
            || meta.block_count < 0
        {
            return Err(invalid(&meta_path, "invalid pack v3 metadata"));
        }
        check_generation_dir(&meta_path, &meta.generation, name)?;
        check_pack_names(&meta_path, meta.packs.iter().map(String::as_str))?;
        let objects_path = dir.join(OBJECTS);
        let blocks_path = dir.join(BLOCKS);
        let objects = File::open(&objects_path).with_path("open", &objects_path)?;
        let blocks = File::open(&blocks_path).with_path("open", &blocks_path)?;
        let sized = |file: &File, path: &Path, count: i64, record: u64, what: &str| -> Result<()> {
            let len = file.metadata().with_path("stat", path)?.len();
            match (count as u64).checked_mul(record) {
                Some(expected) if expected == len => Ok(()),
                _ => Err(invalid(path, format!("pack v3 {what} index size mismatch"))),
            }
        };
        sized(
            &objects,
            &objects_path,
            meta.object_count,
            OBJECT_RECORD,
            "object",
        )?;
        sized(
            &blocks,
            &blocks_path,
            meta.block_count,
            BLOCK_RECORD,
            "block",
        )?;
        Ok(Self {
            objects,
            blocks,
            objects_path,
            blocks_path,
            object_count: meta.object_count as u64,
            block_count: meta.block_count as u64,
            packs: meta.packs,
        })
    }

    pub fn pack_names(&self) -> &[String] {
        &self.packs
    }

    /// §8 step 7: records strictly sorted, each object's blocks well formed and inside their pack.
    pub fn validate(&self, files: &GenerationFiles) -> Result<()> {
        let mut blocks = Records::<{ BLOCK_RECORD as usize }>::new(&self.blocks, self.block_count);
        let mut previous: Option<[u8; 32]> = None;
        let mut objects =
            Records::<{ OBJECT_RECORD as usize }>::new(&self.objects, self.object_count);
        for position in 0..self.object_count {
            let record = ObjectRecord::decode(
                &objects
                    .get(position)
                    .with_path("read", &self.objects_path)?,
            );
            if previous.is_some_and(|p| p >= record.digest) {
                return Err(invalid(
                    &self.objects_path,
                    "pack v3 object index is not strictly sorted",
                ));
            }
            previous = Some(record.digest);
            let sha = Digest::from_bytes(record.digest).to_string();
            let refs = self.expand(&record, &sha, |i| blocks.get(i))?;
            check_bounds(files, &sha, &refs)?;
        }
        Ok(())
    }

    /// Binary search of `objects.idx`, one `pread` per step.
    pub fn find(&self, digest: &Digest, files: &GenerationFiles) -> Result<Option<Object>> {
        let (mut low, mut high) = (0, self.object_count);
        while low < high {
            let middle = low + (high - low) / 2;
            let bytes = read_record::<{ OBJECT_RECORD as usize }>(&self.objects, middle)
                .with_path("read", &self.objects_path)?;
            match bytes[..32].cmp(digest.as_bytes()) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => {
                    let record = ObjectRecord::decode(&bytes);
                    let sha = digest.to_string();
                    let blocks = self.expand(&record, &sha, |i| {
                        read_record::<{ BLOCK_RECORD as usize }>(&self.blocks, i)
                    })?;
                    check_bounds(files, &sha, &blocks)?;
                    return Ok(Some(Object {
                        raw_bytes: record.raw_bytes as u64,
                        blocks,
                    }));
                }
            }
        }
        Ok(None)
    }

    /// Every digest in `objects.idx` order, read sequentially.
    pub fn digests(&self) -> impl Iterator<Item = Result<Digest>> + '_ {
        let mut records =
            Records::<{ OBJECT_RECORD as usize }>::new(&self.objects, self.object_count);
        (0..self.object_count).map(move |position| {
            let bytes = records
                .get(position)
                .with_path("read", &self.objects_path)?;
            Ok(Digest::from_bytes(
                bytes[..32].try_into().expect("32 bytes"),
            ))
        })
    }

    /// An object record's blocks, each checked as the reference checks them (§8 step 7).
    fn expand(
        &self,
        record: &ObjectRecord,
        sha: &str,
        mut block: impl FnMut(u64) -> io::Result<[u8; BLOCK_RECORD as usize]>,
    ) -> Result<Vec<BlockRef>> {
        let in_range = record.raw_bytes >= 0
            && record.first_block >= 0
            && u64::from(record.block_count)
                <= self.block_count.saturating_sub(record.first_block as u64)
            && (record.first_block as u64) <= self.block_count;
        if !in_range {
            return Err(invalid(&self.objects_path, "invalid pack v3 object record"));
        }
        let bad_block = || {
            invalid(
                &self.blocks_path,
                format!("invalid pack v3 block for object {sha}"),
            )
        };
        let mut refs = Vec::with_capacity(record.block_count as usize);
        let mut raw_offset = 0i64;
        for i in 0..u64::from(record.block_count) {
            let bytes =
                block(record.first_block as u64 + i).with_path("read", &self.blocks_path)?;
            let encoding = match bytes[68] {
                0 => Encoding::Zstd,
                1 => Encoding::Raw,
                other => {
                    return Err(invalid(
                        &self.blocks_path,
                        format!("invalid pack v3 block encoding {other}"),
                    ));
                }
            };
            let pack = u32::from_be_bytes(bytes[..4].try_into().expect("4 bytes")) as usize;
            let (pack_offset, stored_bytes) = (be_i64(&bytes[4..12]), be_i64(&bytes[12..20]));
            let (offset, raw_bytes) = (be_i64(&bytes[20..28]), be_i64(&bytes[28..36]));
            if pack >= self.packs.len()
                || pack_offset < 0
                || stored_bytes <= 0
                || raw_bytes <= 0
                || offset != raw_offset
            {
                return Err(bad_block());
            }
            raw_offset = raw_offset.checked_add(raw_bytes).ok_or_else(bad_block)?;
            refs.push(BlockRef {
                pack,
                pack_offset: pack_offset as u64,
                stored_bytes: stored_bytes as u64,
                raw_bytes: raw_bytes as u64,
                digest: Some(Digest::from_bytes(
                    bytes[36..68].try_into().expect("32 bytes"),
                )),
                encoding,
            });
        }
        if raw_offset != record.raw_bytes {
            let why = format!(
                "object {sha} block bytes {raw_offset}, want {}",
                record.raw_bytes
            );
            return Err(invalid(&self.objects_path, why));
        }
        Ok(refs)
    }
}

/// Fixed-size records of a table read in order through a buffer, starting over where a caller
/// jumps (block records usually follow their objects', so that is rare).
struct Records<'a, const N: usize> {
    file: &'a File,
    count: u64,
    next: u64,
    reader: Option<BufReader<Extent<'a>>>,
}

impl<'a, const N: usize> Records<'a, N> {
    fn new(file: &'a File, count: u64) -> Self {
        Self {
            file,
            count,
            next: 0,
            reader: None,
        }
    }

    fn get(&mut self, index: u64) -> io::Result<[u8; N]> {
        if self.next != index || self.reader.is_none() {
            let offset = index * N as u64;
            let len = (self.count - index) * N as u64;
            self.reader = Some(BufReader::with_capacity(
                64 << 10,
                Extent::new(self.file, offset, len),
            ));
        }
        let mut record = [0u8; N];
        self.reader
            .as_mut()
            .expect("set above")
            .read_exact(&mut record)?;
        self.next = index + 1;
        Ok(record)
    }
}

fn read_record<const N: usize>(file: &File, index: u64) -> io::Result<[u8; N]> {
    let mut record = [0u8; N];
    file.read_exact_at(&mut record, index * N as u64)?;
    Ok(record)
}

/// The reference reads uint64 fields as int64 and rejects what comes out negative.
fn be_i64(bytes: &[u8]) -> i64 {
    i64::from_be_bytes(bytes.try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_decodes_as_go_decodes_it() {
        let meta = decode_meta(
            br#"{"VERSION":3,"Kind":"pack-v3","generation":"gen-1","block_bytes":5,"object_count":null,"block_count":2,"packs":["a",null],"extra":{"x":[1]},"block_count":4}"#,
        )
        .unwrap();
        assert_eq!(
            meta,
            Meta {
                version: 3,
                kind: "pack-v3".into(),
                generation: "gen-1".into(),
                block_bytes: 5,
                object_count: 0,
                block_count: 4,
                packs: vec!["a".into(), String::new()],
            }
        );
        assert!(decode_meta(br#"{"version":"3"}"#).is_err());
        assert!(decode_meta(br#"{"created_at":7}"#).is_err());
        assert!(decode_meta(br#"{"block_bytes":1.5}"#).is_err());
        assert!(decode_meta(br#"{"packs":"a"}"#).is_err());
        assert!(decode_meta(br#"{} x"#).is_err());
    }
}
