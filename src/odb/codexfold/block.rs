//! One block of a reference pack: where it is, how it is stored (`raw` or `zstd`), and reading it
//! into a writer while checking its length and the sha256 of its raw bytes.
//!
//! Not for finding an object's blocks (the index forms do that) or for the whole object's check.

use std::io::{self, BufReader, Read, Write};

use super::{GenerationFiles, bad_block};
use crate::digest::{Digest, HashingWriter};
use crate::error::{Result, sink_failed};
use crate::odb::extent::Extent;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Zstd,
    Raw,
}

/// A block as an index records it, already checked to lie inside its pack file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRef {
    /// Index into the generation's pack files.
    pub pack: usize,
    pub pack_offset: u64,
    pub stored_bytes: u64,
    pub raw_bytes: u64,
    /// The sha256 of the raw bytes; `None` when the index spells it in a way that no decoded
    /// block can match (codexfold compares lowercase hex text).
    pub digest: Option<Digest>,
    pub encoding: Encoding,
}

/// Decode block `number` of `object` into `out`, then check its length and sha256. As in the
/// reference, bytes reach `out` before the check; the caller checks the whole object too.
pub fn read(
    files: &GenerationFiles,
    object: &Digest,
    number: usize,
    block: &BlockRef,
    out: &mut dyn Write,
) -> Result<()> {
    let file = &files.packs[block.pack].file;
    let stored = Extent::new(file, block.pack_offset, block.stored_bytes);
    let mut sink = HashingWriter::new(out);
    // One byte past the recorded size is enough to tell that a block inflates past it.
    let limit = block.raw_bytes.saturating_add(1);
    let copied = match block.encoding {
        Encoding::Raw => copy(stored.take(limit), &mut sink),
        Encoding::Zstd => {
            // Frames may lack a content size, and a payload may hold several frames: stream them.
            let decoder = zstd::stream::read::Decoder::with_buffer(BufReader::new(stored))
                .map_err(|e| bad_block(files, object, number, block, format!("decode: {e}")))?;
            copy(decoder.take(limit), &mut sink)
        }
    };
    let copied = match copied {
        Ok(n) => n,
        Err(Failure::Out(e)) => return Err(sink_failed(e)),
        Err(Failure::In(e)) => {
            return Err(bad_block(
                files,
                object,
                number,
                block,
                format!("decode: {e}"),
            ));
        }
    };
    let (_, actual, _) = sink.finish();
    if copied != block.raw_bytes {
        let why = format!("raw size {copied}, want {}", block.raw_bytes);
        return Err(bad_block(files, object, number, block, why));
    }
    if block.digest != Some(actual) {
        return Err(bad_block(
            files,
            object,
            number,
            block,
            "SHA-256 mismatch".into(),
        ));
    }
    Ok(())
}

enum Failure {
    In(io::Error),
    Out(io::Error),
}

fn copy(mut from: impl Read, to: &mut impl Write) -> Result<u64, Failure> {
    let mut buf = [0u8; 64 << 10];
    let mut done = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(done),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Failure::In(e)),
        };
        to.write_all(&buf[..n]).map_err(Failure::Out)?;
        done += n as u64;
    }
}
