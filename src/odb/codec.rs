//! zstd for objects: a reusable encoder (with or without a dictionary) and verified, capped,
//! streaming decoding with per-thread contexts.
//!
//! Knows nothing of where objects live; the object database hands it bytes and names.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::{self, Read, Write};
use std::sync::Arc;

use super::dictionaries::Named;
use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, IoContext, Result, sink_failed};

pub const DEFAULT_LEVEL: i32 = 3;

/// A reusable zstd compressor (its context is the expensive part to build), with or without a
/// dictionary.
pub struct Encoder {
    compressor: zstd::bulk::Compressor<'static>,
    buffer: Vec<u8>,
    level: i32,
    dictionary: Option<Arc<[u8]>>,
}

impl Encoder {
    pub fn new(level: i32) -> Result<Self> {
        Self::build(level, None)
    }

    /// An encoder with the given registered dictionary, or none. Frames written with a dictionary
    /// carry its zstd id, which is how readers find it again.
    pub fn for_dictionary(level: i32, dictionary: Option<&Named>) -> Result<Self> {
        Self::build(level, dictionary.map(|(_, bytes)| bytes.clone()))
    }

    /// Another encoder like this one, for another thread.
    pub fn fresh(&self) -> Result<Self> {
        Self::build(self.level, self.dictionary.clone())
    }

    pub fn level(&self) -> i32 {
        self.level
    }

    pub fn dictionary(&self) -> Option<&Arc<[u8]>> {
        self.dictionary.as_ref()
    }

    fn build(level: i32, dictionary: Option<Arc<[u8]>>) -> Result<Self> {
        Ok(Self {
            compressor: compressor(level, dictionary.as_deref())?,
            buffer: Vec::new(),
            level,
            dictionary,
        })
    }

    /// The size `raw` would take as an object, for dry runs.
    pub fn compressed_len(&mut self, raw: &[u8]) -> Result<u64> {
        Ok(self.compress(raw)?.len() as u64)
    }

    /// `raw` as one zstd frame with a checksum, in a buffer reused by the next call.
    pub fn compress(&mut self, raw: &[u8]) -> Result<&[u8]> {
        self.buffer.clear();
        self.buffer
            .reserve(zstd::zstd_safe::compress_bound(raw.len()));
        self.compressor
            .compress_to_buffer(raw, &mut self.buffer)
            .context(|| "zstd compression".into())?;
        Ok(&self.buffer)
    }
}

/// A zstd context at `level` (a usage error if zstd has no such level), with `dictionary` if any,
/// whose frames carry a checksum (content size and dictionary id are zstd's defaults).
pub fn compressor(
    level: i32,
    dictionary: Option<&[u8]>,
) -> Result<zstd::bulk::Compressor<'static>> {
    check_level(level)?;
    let mut compressor = match dictionary {
        None => zstd::bulk::Compressor::new(level),
        Some(dictionary) => zstd::bulk::Compressor::with_dictionary(level, dictionary),
    }
    .context(|| "create zstd compressor".into())?;
    compressor
        .include_checksum(true)
        .context(|| "configure zstd".into())?;
    Ok(compressor)
}

/// A zstd level the library accepts, or a usage error.
pub fn check_level(level: i32) -> Result<()> {
    let range = zstd::compression_level_range();
    if range.contains(&level) {
        Ok(())
    } else {
        Err(Error::usage(format!(
            "zstd level {level} is out of range {}..={}",
            range.start(),
            range.end()
        )))
    }
}

/// The zstd dictionary id a frame's header names (the header is at most 18 bytes).
pub fn frame_dictionary_id(header: &[u8]) -> Option<std::num::NonZeroU32> {
    zstd::zstd_safe::get_dict_id_from_frame(header)
}

thread_local! {
    /// Decoding contexts by the dictionary they hold (loaded once per thread): building one per
    /// object (and faulting in its window) costs more than decoding a small object.
    static DCTX: RefCell<HashMap<Option<Digest>, zstd::zstd_safe::DCtx<'static>>> =
        RefCell::new(HashMap::new());
}

/// Decode the zstd stream `input` (object `digest`) into `out`, never producing more than
/// `expected + 1` bytes, and check the bytes against the digest and `expected`. Returns the raw
/// size. Bytes reach `out` before the checks: callers that must not expose unverified bytes write
/// into a temp file or a buffer and act on the result.
pub fn decode_verified(
    input: impl io::BufRead,
    dictionary: Option<&Named>,
    digest: &Digest,
    expected: Option<u64>,
    out: &mut dyn Write,
) -> Result<u64> {
    let limit = expected.map_or(u64::MAX, |n| n.saturating_add(1));
    let mut sink = HashingWriter::new(out);
    DCTX.with(|contexts| -> Result<()> {
        let mut contexts = contexts.borrow_mut();
        let context = match contexts.entry(dictionary.map(|(name, _)| *name)) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let mut context = zstd::zstd_safe::DCtx::create();
                if let Some((_, bytes)) = dictionary {
                    context.load_dictionary(bytes).map_err(|code| {
                        Error::object_corrupt(
                            *digest,
                            format!("zstd dictionary: {}", zstd::zstd_safe::get_error_name(code)),
                        )
                    })?;
                }
                e.insert(context)
            }
        };
        let decoder = zstd::stream::read::Decoder::with_context(input, context);
        copy(decoder.take(limit), &mut sink, digest)
    })?;
    let (_, actual, bytes) = sink.finish();
    check(digest, expected, actual, bytes)?;
    Ok(bytes)
}

/// The checks every read of an object ends with: its size (when known) and its name.
pub fn check(digest: &Digest, expected: Option<u64>, actual: Digest, bytes: u64) -> Result<()> {
    if let Some(expected) = expected {
        if bytes > expected {
            return Err(Error::object_corrupt(
                *digest,
                format!("it inflates past its recorded size of {expected} bytes"),
            ));
        }
        if bytes != expected {
            return Err(Error::object_corrupt(
                *digest,
                format!("it holds {bytes} bytes, {expected} were recorded"),
            ));
        }
    }
    if actual != *digest {
        return Err(Error::object_corrupt(
            *digest,
            format!("its bytes hash to {actual}"),
        ));
    }
    Ok(())
}

fn copy(mut from: impl Read, to: &mut impl Write, digest: &Digest) -> Result<()> {
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::object_corrupt(*digest, e.to_string())),
        };
        to.write_all(&buf[..n]).map_err(sink_failed)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_levels_are_usage_errors() {
        assert!(Encoder::new(99).is_err());
        assert_eq!(
            check_level(99).unwrap_err().status(),
            crate::error::Status::Usage
        );
    }

    #[test]
    fn decoding_checks_size_and_name() {
        let raw = vec![7u8; 10_000];
        let digest = Digest::of(&raw);
        let frame = Encoder::new(3).unwrap().compress(&raw).unwrap().to_vec();
        let decode = |expected, digest: &Digest| {
            decode_verified(&frame[..], None, digest, expected, &mut io::sink())
        };
        assert_eq!(decode(Some(10_000), &digest).unwrap(), 10_000);
        let err = decode(Some(100), &digest).unwrap_err();
        assert!(err.to_string().contains("inflates past"), "{err}");
        let err = decode(Some(20_000), &digest).unwrap_err();
        assert!(err.to_string().contains("holds 10000 bytes"), "{err}");
        let err = decode(None, &Digest::of(b"other")).unwrap_err();
        assert!(err.to_string().contains("hash to"), "{err}");
    }
}
