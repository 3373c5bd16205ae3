//! The byte layout of a ctxfold pack (`.pack`) and its index (`.idx`): constants, and encoding and
//! decoding of the fixed-size header and records. Pure functions over bytes; no I/O, no policy.
//!
//! ```text
//! .pack   0   8  magic "CTXFPACK"
//!         8   4  format version (1)
//!        12   …  blocks: one zstd frame each (checksum, content size, maybe a dictionary id),
//!                back to back, each the concatenated raw bytes of whole objects in the order added
//!
//! .idx    0   8  magic "CTXFPIDX"
//!         8   4  format version (1)
//!        12   4  object count N
//!        16   4  block count B
//!        20   8  length of the .pack file
//!        28  32  sha256 of the .pack file (its name)
//!        60  1024  fanout: 256 counts, entry b = objects whose digest's first byte is <= b
//!      1084  N × 52  objects sorted by digest: digest 32, raw size 8, block 4, offset in block 8
//!         …  B × 28  blocks in pack order: pack offset 8, stored length 8, raw length 8,
//!                    first object 4 (its position in pack order)
//!         …  N × 4   pack order: the sorted position of each object, in the order it was added
//!         …  32      sha256 of every byte above
//! ```
//!
//! Integers are big-endian. A block's objects are the pack-order positions from its first object
//! to the next block's; they tile its raw bytes in that order.

use crate::digest::Digest;

pub const PACK_MAGIC: [u8; 8] = *b"CTXFPACK";
pub const INDEX_MAGIC: [u8; 8] = *b"CTXFPIDX";
pub const VERSION: u32 = 1;

pub const PACK_HEADER_LEN: u64 = 12;
pub const INDEX_HEADER_LEN: usize = 60;
pub const FANOUT_LEN: usize = 256 * 4;
pub const OBJECT_RECORD_LEN: usize = 52;
pub const BLOCK_RECORD_LEN: usize = 28;
pub const ORDER_RECORD_LEN: usize = 4;
pub const TRAILER_LEN: usize = 32;

pub fn pack_header() -> [u8; PACK_HEADER_LEN as usize] {
    let mut header = [0u8; PACK_HEADER_LEN as usize];
    header[..8].copy_from_slice(&PACK_MAGIC);
    header[8..].copy_from_slice(&VERSION.to_be_bytes());
    header
}

/// Why `bytes` (the first bytes of a .pack file) are not a pack header this reader knows.
pub fn check_pack_header(bytes: &[u8]) -> Result<(), String> {
    if bytes.len() < PACK_HEADER_LEN as usize || bytes[..8] != PACK_MAGIC {
        return Err("not a ctxfold pack (bad magic)".into());
    }
    match be_u32(&bytes[8..12]) {
        VERSION => Ok(()),
        other => Err(format!("unsupported pack format version {other}")),
    }
}

/// The index header: what the index covers and which pack it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexHeader {
    pub objects: u32,
    pub blocks: u32,
    pub pack_bytes: u64,
    pub pack: Digest,
}

impl IndexHeader {
    pub fn encode(&self) -> [u8; INDEX_HEADER_LEN] {
        let mut out = [0u8; INDEX_HEADER_LEN];
        out[..8].copy_from_slice(&INDEX_MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_be_bytes());
        out[12..16].copy_from_slice(&self.objects.to_be_bytes());
        out[16..20].copy_from_slice(&self.blocks.to_be_bytes());
        out[20..28].copy_from_slice(&self.pack_bytes.to_be_bytes());
        out[28..60].copy_from_slice(self.pack.as_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < INDEX_HEADER_LEN || bytes[..8] != INDEX_MAGIC {
            return Err("not a ctxfold pack index (bad magic)".into());
        }
        let version = be_u32(&bytes[8..12]);
        if version != VERSION {
            return Err(format!("unsupported pack index version {version}"));
        }
        Ok(Self {
            objects: be_u32(&bytes[12..16]),
            blocks: be_u32(&bytes[16..20]),
            pack_bytes: be_u64(&bytes[20..28]),
            pack: crate::digest::Digest::from_bytes(bytes[28..60].try_into().expect("32 bytes")),
        })
    }

    pub fn objects_at(&self) -> usize {
        INDEX_HEADER_LEN + FANOUT_LEN
    }

    pub fn blocks_at(&self) -> usize {
        self.objects_at() + self.objects as usize * OBJECT_RECORD_LEN
    }

    pub fn order_at(&self) -> usize {
        self.blocks_at() + self.blocks as usize * BLOCK_RECORD_LEN
    }

    pub fn trailer_at(&self) -> usize {
        self.order_at() + self.objects as usize * ORDER_RECORD_LEN
    }

    /// The exact length of an index with this header (counts are u32, so this cannot overflow).
    pub fn index_len(&self) -> u64 {
        (self.trailer_at() + TRAILER_LEN) as u64
    }
}

/// One object of the sorted table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectRecord {
    pub digest: [u8; 32],
    pub raw_bytes: u64,
    pub block: u32,
    pub offset: u64,
}

impl ObjectRecord {
    pub fn encode(&self) -> [u8; OBJECT_RECORD_LEN] {
        let mut out = [0u8; OBJECT_RECORD_LEN];
        out[..32].copy_from_slice(&self.digest);
        out[32..40].copy_from_slice(&self.raw_bytes.to_be_bytes());
        out[40..44].copy_from_slice(&self.block.to_be_bytes());
        out[44..52].copy_from_slice(&self.offset.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Self {
        Self {
            digest: bytes[..32].try_into().expect("32 bytes"),
            raw_bytes: be_u64(&bytes[32..40]),
            block: be_u32(&bytes[40..44]),
            offset: be_u64(&bytes[44..52]),
        }
    }
}

/// One block of the pack-order table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRecord {
    pub pack_offset: u64,
    pub stored_bytes: u64,
    pub raw_bytes: u64,
    pub first_object: u32,
}

impl BlockRecord {
    pub fn encode(&self) -> [u8; BLOCK_RECORD_LEN] {
        let mut out = [0u8; BLOCK_RECORD_LEN];
        out[..8].copy_from_slice(&self.pack_offset.to_be_bytes());
        out[8..16].copy_from_slice(&self.stored_bytes.to_be_bytes());
        out[16..24].copy_from_slice(&self.raw_bytes.to_be_bytes());
        out[24..28].copy_from_slice(&self.first_object.to_be_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Self {
        Self {
            pack_offset: be_u64(&bytes[..8]),
            stored_bytes: be_u64(&bytes[8..16]),
            raw_bytes: be_u64(&bytes[16..24]),
            first_object: be_u32(&bytes[24..28]),
        }
    }
}

pub fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes(bytes.try_into().expect("4 bytes"))
}

pub fn be_u64(bytes: &[u8]) -> u64 {
    u64::from_be_bytes(bytes.try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_headers_round_trip() {
        let header = IndexHeader {
            objects: 3,
            blocks: 2,
            pack_bytes: 1 << 40,
            pack: Digest::of(b"pack"),
        };
        assert_eq!(IndexHeader::decode(&header.encode()), Ok(header));
        assert_eq!(
            header.index_len(),
            (60 + 1024 + 3 * 52 + 2 * 28 + 3 * 4 + 32) as u64
        );
        let object = ObjectRecord {
            digest: *Digest::of(b"o").as_bytes(),
            raw_bytes: u64::MAX,
            block: 7,
            offset: 1 << 33,
        };
        assert_eq!(ObjectRecord::decode(&object.encode()), object);
        let block = BlockRecord {
            pack_offset: 12,
            stored_bytes: 5,
            raw_bytes: 1 << 35,
            first_object: 9,
        };
        assert_eq!(BlockRecord::decode(&block.encode()), block);
        check_pack_header(&pack_header()).unwrap();
    }

    #[test]
    fn foreign_headers_are_refused() {
        assert!(check_pack_header(b"CTXFPACK").is_err());
        let mut newer = pack_header();
        newer[11] = 2;
        assert_eq!(
            check_pack_header(&newer),
            Err("unsupported pack format version 2".into())
        );
        assert!(IndexHeader::decode(&[0u8; 60]).is_err());
    }
}
