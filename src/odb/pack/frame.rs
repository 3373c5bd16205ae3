//! A block's zstd frame: compressing one, decoding one whole, or streaming a range of one.
//!
//! Frames carry a checksum and their content size, and the id of the dictionary they were written
//! with, so a reader needs nothing but the index's lengths to decode and check them. Not for
//! deciding which bytes form a block (the writer) or where a frame sits in a file (the reader).

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use zstd::zstd_safe;

use super::corrupt_block;
use super::format::BlockRecord;
use crate::error::{Error, IoContext, Result};
use crate::odb::codec::compressor;
use crate::odb::dictionary::{Dictionaries, Prepared};
use crate::odb::extent::Extent;

/// What compresses blocks on one thread: a zstd context for blocks up to the writer's size, and
/// one for larger blocks (each an object too large for a block) that matches over a window
/// covering all of it, at [`large_level`]. zstd's window at the levels folds use is 2 MiB, and the
/// largest objects are a long session's seed batches, whose records each re-list every span of the
/// one before: measured on one (9 MB of two records), long-distance matching over the whole block
/// at level 1 makes a frame less than half the size level 3 made without it, 2.7 times as fast.
pub struct Compressor {
    block_bytes: usize,
    usual: zstd::bulk::Compressor<'static>,
    large: zstd::bulk::Compressor<'static>,
}

impl Compressor {
    /// Compressors at `level`, with `dictionary` if any, for blocks of `block_bytes`.
    pub fn new(level: i32, dictionary: Option<&[u8]>, block_bytes: usize) -> Result<Self> {
        let mut large = compressor(level, dictionary)?;
        let wide = |large: &mut zstd::bulk::Compressor<'static>| -> io::Result<()> {
            large.set_parameter(zstd_safe::CParameter::CompressionLevel(large_level(level)))?;
            large.long_distance_matching(true)?;
            // zstd narrows the window to a smaller block's size.
            large.window_log(LARGE_WINDOW_LOG)
        };
        wide(&mut large).context(|| "configure zstd".into())?;
        Ok(Self {
            block_bytes,
            usual: compressor(level, dictionary)?,
            large,
        })
    }

    /// One frame holding `raw`.
    pub fn compress(&mut self, raw: &[u8]) -> Result<Vec<u8>> {
        let compressor = match raw.len() > self.block_bytes {
            true => &mut self.large,
            false => &mut self.usual,
        };
        let mut frame = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        compressor
            .compress_to_buffer(raw, &mut frame)
            .context(|| "zstd compression".into())?;
        Ok(frame)
    }
}

/// The level of a block larger than a writer's blocks, compressed with long-distance matching:
/// zstd's fastest at the levels folds use (what makes such a block small is repetition at a
/// distance, which level 1 finds as well as level 3: on 9 MB of a session, a frame 3% larger at 1.3
/// times the speed; on a seed batch, 7% smaller at 1.8 times), the level asked for above them.
fn large_level(level: i32) -> i32 {
    match level <= crate::odb::DEFAULT_LEVEL {
        true => level.min(1),
        false => level,
    }
}

/// The window of a block larger than a writer's blocks: 32 MiB, about a long session's seed batch
/// (see `seeds::index::BATCH_BYTES`), and what a reader streaming the block holds of it (it was 2
/// MiB: a wider window for a single object of hundreds of megabytes would have made its restore
/// hold as much). zstd sizes its long-distance match table by the window: bench/long's 1 GB
/// rollout's 32 MiB batches took 38 MiB with it, 54 with a 16 MiB window, though each record lies
/// within 8 MB of the one it repeats.
const LARGE_WINDOW_LOG: u32 = 25;

/// The most bytes a frame of `raw_bytes` can take: anything longer in an index is a lie that
/// would make a reader allocate or read for nothing.
pub fn max_stored_bytes(raw_bytes: u64) -> u64 {
    let raw = usize::try_from(raw_bytes).unwrap_or(usize::MAX);
    // compress_bound covers the frame header; the checksum and a dictionary id add a few bytes.
    (zstd_safe::compress_bound(raw) as u64).saturating_add(32)
}

thread_local! {
    /// One decoding context per thread: building one per block costs more than a small block.
    static DCTX: RefCell<zstd_safe::DCtx<'static>> = RefCell::new(zstd_safe::DCtx::create());
    /// One streaming context per thread, for frames without a dictionary, whose window buffer
    /// (that of a large block: see [`LARGE_WINDOW_LOG`]) is kept for the next block: one allocated
    /// for each block, once larger than glibc's malloc takes from its arenas (32 MiB), was mapped
    /// afresh and faulted in (perf, recall over bench/long's 1 GB rollout with 32 MiB windows:
    /// a fifth of its samples, 1.6-1.7 s against 1.3 with this context).
    static STREAM_DCTX: RefCell<zstd_safe::DCtx<'static>> = RefCell::new(zstd_safe::DCtx::create());
}

/// Decode a whole block (its stored bytes are `stored`), checking it is exactly one frame of
/// exactly `block.raw_bytes` whose checksum holds.
pub fn decode_block(
    pack: &Path,
    index: u32,
    block: &BlockRecord,
    stored: &[u8],
    dictionaries: &dyn Dictionaries,
) -> Result<Vec<u8>> {
    let bad = |why: String| corrupt_block(pack, index, why);
    match zstd_safe::find_frame_compressed_size(stored) {
        Ok(n) if n == stored.len() => {}
        Ok(n) => {
            return Err(bad(format!(
                "its frame takes {n} of its {} stored bytes",
                stored.len()
            )));
        }
        Err(code) => return Err(bad(zstd_error(code))),
    }
    let dictionary = dictionary_of(stored, dictionaries).map_err(|e| bad(e.to_string()))?;
    let capacity = usize::try_from(block.raw_bytes).map_err(|_| bad("too large".into()))?;
    let mut raw = Vec::with_capacity(capacity);
    let decoded = DCTX.with(|context| {
        let mut context = context.borrow_mut();
        match &dictionary {
            Some(dictionary) => {
                context.decompress_using_ddict(&mut raw, stored, dictionary.as_ddict())
            }
            None => context.decompress(&mut raw, stored),
        }
    });
    match decoded {
        Ok(n) if n as u64 == block.raw_bytes => Ok(raw),
        Ok(n) => Err(bad(format!(
            "it decodes to {n} bytes, the index records {}",
            block.raw_bytes
        ))),
        Err(code) => Err(bad(zstd_error(code))),
    }
}

/// Decode a block as a stream, without holding it in memory (for blocks too large to cache, and
/// for verifying): `read` takes the raw bytes from a [`BlockStream`] in order.
pub fn stream_block<T>(
    file: &File,
    pack: &Path,
    index: u32,
    block: &BlockRecord,
    dictionaries: &dyn Dictionaries,
    read: impl FnOnce(&mut BlockStream<'_, '_>) -> Result<T>,
) -> Result<T> {
    let bad = |why: String| corrupt_block(pack, index, why);
    let mut head = vec![0u8; block.stored_bytes.min(18) as usize];
    file.read_exact_at(&mut head, block.pack_offset)
        .with_path("read", pack)?;
    let dictionary = dictionary_of(&head, dictionaries).map_err(|e| bad(e.to_string()))?;
    let input = BufReader::new(Extent::new(file, block.pack_offset, block.stored_bytes));
    let stream = |decoder: Decoder<'_, '_>| {
        read(&mut BlockStream::new(decoder, pack, index, block.raw_bytes))
    };
    let created = || "create zstd decoder".into();
    match &dictionary {
        Some(dictionary) => {
            stream(Decoder::with_prepared_dictionary(input, dictionary).context(created)?)
        }
        None => STREAM_DCTX.with(|context| match context.try_borrow_mut() {
            Ok(mut context) => stream(Decoder::with_context(input, &mut context)),
            // A block streamed while another is, on the same thread.
            Err(_) => stream(Decoder::with_buffer(input).context(created)?),
        }),
    }
}

/// What decodes a block's stream.
type Decoder<'a, 'd> = zstd::stream::read::Decoder<'d, BufReader<Extent<'a>>>;

/// A block's raw bytes as they are decoded.
pub struct BlockStream<'a, 'd> {
    decoder: Decoder<'a, 'd>,
    pack: &'a Path,
    index: u32,
    raw_bytes: u64,
    decoded: u64,
}

impl<'a, 'd> BlockStream<'a, 'd> {
    fn new(decoder: Decoder<'a, 'd>, pack: &'a Path, index: u32, raw_bytes: u64) -> Self {
        Self {
            decoder: decoder.single_frame(),
            pack,
            index,
            raw_bytes,
            decoded: 0,
        }
    }

    /// The next `len` bytes into `out`: exactly that many, or an error naming the block.
    pub fn copy(&mut self, len: u64, out: &mut dyn Write) -> Result<()> {
        let copied = self.copy_up_to(len, out)?;
        if copied < len {
            return Err(self.bad(format!(
                "it decodes to {} bytes, the index records {}",
                self.decoded, self.raw_bytes
            )));
        }
        Ok(())
    }

    /// Check that the frame ends here, where the index says the block ends, that its checksum
    /// holds, and that it took all of the block's stored bytes.
    pub fn finish(&mut self) -> Result<()> {
        if self.copy_up_to(1, &mut io::sink())? > 0 || self.decoded != self.raw_bytes {
            return Err(self.bad(format!(
                "it inflates past the {} bytes the index records",
                self.raw_bytes
            )));
        }
        let input = self.decoder.get_ref();
        let left = input.buffer().len() as u64 + input.get_ref().left();
        if left > 0 {
            return Err(self.bad(format!("{left} stored bytes follow the end of its frame")));
        }
        Ok(())
    }

    fn copy_up_to(&mut self, limit: u64, out: &mut dyn Write) -> Result<u64> {
        let mut buf = [0u8; 64 << 10];
        let mut done = 0u64;
        while done < limit {
            let want = (limit - done).min(buf.len() as u64) as usize;
            let n = match self.decoder.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.bad(format!("zstd: {e}"))),
            };
            out.write_all(&buf[..n])
                .map_err(crate::error::sink_failed)?;
            done += n as u64;
            self.decoded += n as u64;
        }
        Ok(done)
    }

    fn bad(&self, why: String) -> Error {
        corrupt_block(self.pack, self.index, why)
    }
}

/// The prepared dictionary a frame header names, if it names one.
fn dictionary_of(frame: &[u8], dictionaries: &dyn Dictionaries) -> Result<Option<Prepared>> {
    zstd_safe::get_dict_id_from_frame(frame)
        .map(|id| dictionaries.prepared(id))
        .transpose()
}

fn zstd_error(code: usize) -> String {
    format!("zstd: {}", zstd_safe::get_error_name(code))
}
