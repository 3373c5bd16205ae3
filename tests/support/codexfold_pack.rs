//! A small writer of the reference implementation's pack generations (pack-v3 tables, and the
//! legacy pack-v2 and pack-v1 `index.json`), written from `shared/spec/codexfold-pack.md` §2–§7, so
//! that readers can be tested against a store laid out as codexfold's `pack build` lays it out
//! (then `retire-loose`: no loose objects are written at all), and against damaged copies of it.
//!
//! For tests only, unit and integration alike (it uses no ctxfold code): ctxfold never writes
//! this format.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
    V3,
}

/// How blocks are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// As codexfold chooses (`preferRawBlock`): raw unless zstd at least halves a small block.
    Auto,
    Zstd,
    Raw,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub version: Version,
    pub block_bytes: usize,
    /// A new pack file starts when the next payload would take the current one past this.
    pub pack_bytes: u64,
    pub encoding: Encoding,
    /// Whether zstd frames record their content size (some of codexfold's do not).
    pub content_size: bool,
    /// The generation is `gen-<number>`.
    pub number: u32,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            version: Version::V3,
            block_bytes: 262_144,
            pack_bytes: 512 << 20,
            encoding: Encoding::Auto,
            content_size: true,
            number: 3_081_596_241,
        }
    }
}

/// One stored block, as the index records it.
#[derive(Clone, Debug)]
pub struct Block {
    pub pack: u32,
    pub pack_offset: u64,
    pub stored_bytes: u64,
    pub raw_offset: u64,
    pub raw_bytes: u64,
    pub sha256: [u8; 32],
    pub raw: bool,
}

/// What was written.
#[derive(Clone, Debug)]
pub struct Written {
    pub generation: String,
    /// `<store>/packs/<generation>`.
    pub dir: PathBuf,
    /// Objects sorted by digest: lowercase hex sha256, raw size, blocks.
    pub objects: Vec<(String, u64, Vec<Block>)>,
    pub packs: Vec<String>,
}

impl Written {
    pub fn block_count(&self) -> usize {
        self.objects.iter().map(|(_, _, blocks)| blocks.len()).sum()
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes).into())
}

fn hex(bytes: &[u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Write `objects` into `<store>/packs/gen-<n>/` as a generation of `options.version`, and name it
/// in `packs/CURRENT`.
pub fn write(store: &Path, objects: &[Vec<u8>], options: &Options) -> Written {
    let mut sorted: Vec<(String, &[u8])> = objects
        .iter()
        .map(|o| (sha256_hex(o), o.as_slice()))
        .collect();
    sorted.sort();
    sorted.dedup_by(|a, b| a.0 == b.0);
    let packs_dir = store.join("packs");
    let building = packs_dir.join(format!(".generation-{}", options.number));
    fs::create_dir_all(building.join("leases")).unwrap();
    let generation = format!("gen-{}", options.number);

    let mut packs = Packs::new(&building, options.pack_bytes);
    let mut written = Vec::new();
    for (sha, raw) in &sorted {
        let mut blocks = Vec::new();
        for (i, piece) in raw.chunks(options.block_bytes).enumerate() {
            let (payload, is_raw) = encode(piece, options);
            let (pack, pack_offset) = packs.append(&payload);
            blocks.push(Block {
                pack,
                pack_offset,
                stored_bytes: payload.len() as u64,
                raw_offset: (i * options.block_bytes) as u64,
                raw_bytes: piece.len() as u64,
                sha256: Sha256::digest(piece).into(),
                raw: is_raw,
            });
        }
        written.push((sha.clone(), raw.len() as u64, blocks));
    }
    let written = Written {
        generation: generation.clone(),
        dir: packs_dir.join(&generation),
        objects: written,
        packs: packs.names,
    };
    match options.version {
        Version::V3 => write_v3(&building, &written, options),
        Version::V2 | Version::V1 => write_json(&building, &written, options),
    }
    fs::rename(&building, &written.dir).unwrap();
    fs::write(packs_dir.join("CURRENT"), format!("{generation}\n")).unwrap();
    written
}

fn encode(piece: &[u8], options: &Options) -> (Vec<u8>, bool) {
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.include_checksum(true).unwrap();
    if options.content_size {
        encoder
            .set_pledged_src_size(Some(piece.len() as u64))
            .unwrap();
        encoder.include_contentsize(true).unwrap();
    } else {
        encoder.include_contentsize(false).unwrap();
    }
    encoder.write_all(piece).unwrap();
    let zstd = encoder.finish().unwrap();
    let raw = match (options.version, options.encoding) {
        (Version::V1, _) | (_, Encoding::Zstd) => false,
        (_, Encoding::Raw) => true,
        (_, Encoding::Auto) => {
            zstd.len() >= piece.len() || (piece.len() <= 16384 && 2 * zstd.len() >= piece.len())
        }
    };
    match raw {
        true => (piece.to_vec(), true),
        false => (zstd, false),
    }
}

/// Pack files `pack-NNNNNN.pack`, rotated before a payload that would take one past its limit.
struct Packs<'a> {
    dir: &'a Path,
    limit: u64,
    names: Vec<String>,
    current: Option<(fs::File, u64)>,
}

impl<'a> Packs<'a> {
    fn new(dir: &'a Path, limit: u64) -> Self {
        Self {
            dir,
            limit,
            names: Vec::new(),
            current: None,
        }
    }

    fn append(&mut self, payload: &[u8]) -> (u32, u64) {
        let rotate = match &self.current {
            None => true,
            Some((_, offset)) => *offset > 0 && offset + payload.len() as u64 > self.limit,
        };
        if rotate {
            let name = format!("pack-{:06}.pack", self.names.len() + 1);
            self.current = Some((fs::File::create(self.dir.join(&name)).unwrap(), 0));
            self.names.push(name);
        }
        let (file, offset) = self.current.as_mut().unwrap();
        file.write_all(payload).unwrap();
        let at = *offset;
        *offset += payload.len() as u64;
        ((self.names.len() - 1) as u32, at)
    }
}

fn write_v3(dir: &Path, written: &Written, options: &Options) {
    let mut objects = Vec::new();
    let mut blocks = Vec::new();
    let mut first_block = 0u64;
    for (sha, raw_bytes, object_blocks) in &written.objects {
        objects.extend_from_slice(&decode_hex(sha));
        objects.extend_from_slice(&raw_bytes.to_be_bytes());
        objects.extend_from_slice(&first_block.to_be_bytes());
        objects.extend_from_slice(&(object_blocks.len() as u32).to_be_bytes());
        first_block += object_blocks.len() as u64;
        for block in object_blocks {
            blocks.extend_from_slice(&v3_block_record(block));
        }
    }
    fs::write(dir.join("objects.idx"), objects).unwrap();
    fs::write(dir.join("blocks.idx"), blocks).unwrap();
    let packs: Vec<String> = written.packs.iter().map(|p| format!("{p:?}")).collect();
    let meta = format!(
        "{{\"version\":3,\"kind\":\"pack-v3\",\"generation\":\"{}\",\"created_at\":\"2026-11-30T18:16:56.945755635Z\",\"block_bytes\":{},\"object_count\":{},\"block_count\":{},\"packs\":[{}]}}\n",
        written.generation,
        options.block_bytes,
        written.objects.len(),
        written.block_count(),
        packs.join(",")
    );
    fs::write(dir.join("index.meta.json"), meta).unwrap();
}

/// A 69-byte `blocks.idx` record.
pub fn v3_block_record(block: &Block) -> Vec<u8> {
    let mut record = Vec::with_capacity(69);
    record.extend_from_slice(&block.pack.to_be_bytes());
    record.extend_from_slice(&block.pack_offset.to_be_bytes());
    record.extend_from_slice(&block.stored_bytes.to_be_bytes());
    record.extend_from_slice(&block.raw_offset.to_be_bytes());
    record.extend_from_slice(&block.raw_bytes.to_be_bytes());
    record.extend_from_slice(&block.sha256);
    record.push(u8::from(block.raw));
    record
}

fn write_json(dir: &Path, written: &Written, options: &Options) {
    let (version, kind) = match options.version {
        Version::V1 => (1, "pack-v1"),
        _ => (2, "pack-v2"),
    };
    let objects: Vec<String> = written
        .objects
        .iter()
        .map(|(sha, raw_bytes, blocks)| {
            let blocks = match blocks.is_empty() {
                true => "null".to_string(),
                false => {
                    let blocks: Vec<String> = blocks
                        .iter()
                        .map(|b| {
                            let encoding = match (options.version, b.raw) {
                                (Version::V1, _) => String::new(),
                                (_, true) => ",\"encoding\":\"raw\"".into(),
                                (_, false) => ",\"encoding\":\"zstd\"".into(),
                            };
                            format!(
                                "{{\"pack\":\"{}\",\"pack_offset\":{},\"stored_bytes\":{},\"raw_offset\":{},\"raw_bytes\":{},\"sha256\":\"{}\"{encoding}}}",
                                written.packs[b.pack as usize],
                                b.pack_offset,
                                b.stored_bytes,
                                b.raw_offset,
                                b.raw_bytes,
                                hex(&b.sha256)
                            )
                        })
                        .collect();
                    format!("[{}]", blocks.join(","))
                }
            };
            format!("{{\"sha256\":\"{sha}\",\"raw_bytes\":{raw_bytes},\"blocks\":{blocks}}}")
        })
        .collect();
    let index = format!(
        "{{\"version\":{version},\"kind\":\"{kind}\",\"generation\":\"{}\",\"created_at\":\"2026-07-24T10:00:00.5Z\",\"block_bytes\":{},\"objects\":[{}]}}\n",
        written.generation,
        options.block_bytes,
        objects.join(",")
    );
    fs::write(dir.join("index.json"), index).unwrap();
}

pub fn decode_hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}
