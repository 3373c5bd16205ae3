//! A source compared with its manifest: up to date, grown by an append since it was folded, or
//! changed some other way. Reads the source (decompressed) once, never the store.

use std::io::{self, Read};
use std::path::Path;

use serde::Serialize;

use super::stamp::Stamp;
use crate::digest::HashingWriter;
use crate::error::{IoContext, Result};
use crate::store::manifest::Source;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// No manifest for the session.
    New,
    /// The source's sha256 and size are the manifest's.
    UpToDate,
    /// The folded bytes are a prefix of the source: it was appended to since.
    Grown,
    /// Anything else: a rewrite (Pi migrates old files in place), a truncation.
    Changed,
}

/// Compare `path` with what a manifest recorded. `stamp` is the source's, taken before the call:
/// a plain file whose size is already different needs no read to tell.
pub fn compare(path: &Path, stamp: &Stamp, folded: &Source) -> Result<State> {
    let plain = !crate::input::is_zstd(path);
    if plain && stamp.size < folded.bytes {
        return Ok(State::Changed);
    }
    let mut input = crate::input::open(path)?;
    let mut prefix = HashingWriter::new(io::sink());
    let copied =
        io::copy(&mut (&mut input).take(folded.bytes), &mut prefix).with_path("read", path)?;
    let (_, digest, _) = prefix.finish();
    if copied != folded.bytes || digest != folded.sha256 {
        return Ok(State::Changed);
    }
    let more = if plain {
        stamp.size > folded.bytes
    } else {
        io::copy(&mut input.take(1), &mut io::sink()).with_path("read", path)? > 0
    };
    Ok(if more { State::Grown } else { State::UpToDate })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Digest;

    #[test]
    fn states_follow_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let folded = Source {
            bytes: 6,
            sha256: Digest::of(b"{}\n{}\n"),
        };
        let state = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            compare(&path, &Stamp::of(&path).unwrap(), &folded).unwrap()
        };
        assert_eq!(state(b"{}\n{}\n"), State::UpToDate);
        assert_eq!(state(b"{}\n{}\n{}\n"), State::Grown);
        assert_eq!(state(b"{}\n"), State::Changed);
        assert_eq!(state(b"{}\n[]\n{}\n"), State::Changed);
    }
}
