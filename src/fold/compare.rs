//! A source compared with its manifest: up to date, grown by an append since it was folded, or
//! changed some other way. Reads the source (decompressed) once, never the store.

use std::io::BufRead;
use std::path::Path;

use serde::Serialize;

use super::stamp::Stamp;
use crate::digest::{HashingReader, SoFar};
use crate::error::{IoContext, Result};
use crate::input::skip;
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
    compare_keeping(path, stamp, folded, None).map(|(state, _)| state)
}

/// [`compare`], keeping what was hashed of the source's first `keep` bytes (fewer than the
/// folded ones) when it grew: a fold of it goes on reading from there, not from the start.
pub fn compare_keeping(
    path: &Path,
    stamp: &Stamp,
    folded: &Source,
    keep: Option<u64>,
) -> Result<(State, Option<SoFar>)> {
    let plain = !crate::input::is_zstd(path);
    if plain && stamp.size < folded.bytes {
        return Ok((State::Changed, None));
    }
    let what = path.display().to_string();
    let mut input = HashingReader::new(crate::input::open(path)?, Some(folded.bytes));
    let mut kept = None;
    if let Some(keep) = keep.filter(|&k| k <= folded.bytes) {
        if !skip(&mut input, keep, &what)? {
            return Ok((State::Changed, None));
        }
        kept = Some(input.so_far());
    }
    let rest = folded.bytes - input.bytes();
    if !skip(&mut input, rest, &what)? || input.hashed().1 != folded.sha256 {
        return Ok((State::Changed, None));
    }
    let more = match plain {
        true => stamp.size > folded.bytes,
        false => !input.fill_buf().with_path("read", path)?.is_empty(),
    };
    Ok(match more {
        true => (State::Grown, kept),
        false => (State::UpToDate, None),
    })
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

    #[test]
    fn a_grown_source_is_read_on_from_what_was_kept_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let folded = Source {
            bytes: 6,
            sha256: Digest::of(b"{}\n{}\n"),
        };
        std::fs::write(&path, b"{}\n{}\n[1]\n").unwrap();
        let stamp = Stamp::of(&path).unwrap();
        let (state, kept) = compare_keeping(&path, &stamp, &folded, Some(3)).unwrap();
        assert_eq!(state, State::Grown);
        let rest = crate::input::open_at(&path, 3).unwrap().unwrap();
        let mut input = HashingReader::going_on(rest, kept.unwrap());
        assert!(skip(&mut input, 7, "s").unwrap());
        let whole = input.finish();
        assert_eq!(whole.sha256, Digest::of(b"{}\n{}\n[1]\n"));
        assert_eq!(whole.at_mark, Some(folded.sha256));
        // Nothing is kept of a source that did not grow, nor past its folded bytes.
        std::fs::write(&path, b"{}\n{}\n").unwrap();
        let stamp = Stamp::of(&path).unwrap();
        let (state, kept) = compare_keeping(&path, &stamp, &folded, Some(3)).unwrap();
        assert!(state == State::UpToDate && kept.is_none());
        std::fs::write(&path, b"{}\n{}\n[1]\n").unwrap();
        let stamp = Stamp::of(&path).unwrap();
        assert!(
            compare_keeping(&path, &stamp, &folded, Some(7))
                .unwrap()
                .1
                .is_none()
        );
    }
}
