//! A source compared with its manifest: up to date, grown by an append since it was folded, or
//! changed some other way. Reads the source (decompressed) once, never the store.

use std::io::BufRead;
use std::path::Path;

use serde::Serialize;

use super::stamp::Stamp;
use crate::digest::{Fingerprinter, FingerprintingReader, Hasher, HashingReader, Midstate, SoFar};
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
    compare_keeping(path, stamp, folded, None, None).map(|(state, _)| state)
}

/// [`compare`], keeping what was hashed of the source's first `keep` bytes (fewer than the
/// folded ones) when it grew: a fold of it goes on reading from there, not from the start. With
/// the `midstate` a fold kept after those bytes, they are checked by their xxh3 and not hashed
/// again; when they do not match it (or it is damaged), they are read again, hashed.
pub fn compare_keeping(
    path: &Path,
    stamp: &Stamp,
    folded: &Source,
    keep: Option<u64>,
    midstate: Option<&Midstate>,
) -> Result<(State, Option<SoFar>)> {
    if !crate::input::is_zstd(path) && stamp.size < folded.bytes {
        return Ok((State::Changed, None));
    }
    let keep = keep.filter(|&k| k <= folded.bytes);
    if let Some(midstate) = midstate.filter(|m| keep == Some(m.bytes())) {
        let found = compare_from(path, stamp, folded, Start::Midstate(midstate))?;
        if found.0 != State::Changed {
            return Ok(found);
        }
    }
    compare_from(
        path,
        stamp,
        folded,
        keep.map_or(Start::Hashing, Start::Keeping),
    )
}

/// How [`compare_from`] reads the source's first bytes.
enum Start<'m> {
    Hashing,
    /// Hashing, keeping what was hashed of the first bytes.
    Keeping(u64),
    /// Checking the bytes before the midstate by their xxh3, keeping it as what was hashed.
    Midstate(&'m Midstate),
}

fn compare_from(
    path: &Path,
    stamp: &Stamp,
    folded: &Source,
    start: Start<'_>,
) -> Result<(State, Option<SoFar>)> {
    let what = path.display().to_string();
    let input = crate::input::open(path)?;
    let mark = Some(folded.bytes);
    let (mut input, kept) = match start {
        Start::Hashing => (HashingReader::new(input, mark), false),
        Start::Keeping(keep) => {
            let mut input = HashingReader::new(input, mark);
            if !skip(&mut input, keep, &what)? {
                return Ok((State::Changed, None));
            }
            (input, true)
        }
        Start::Midstate(midstate) => {
            let mut seeing = FingerprintingReader::going_on(input, Fingerprinter::default());
            let whole = skip(&mut seeing, midstate.bytes(), &what)?;
            let (input, seen) = seeing.into_parts();
            match Hasher::resume(seen, midstate).filter(|_| whole) {
                Some(hasher) => (
                    HashingReader::going_on(input, SoFar::of(hasher, mark)),
                    true,
                ),
                None => return Ok((State::Changed, None)),
            }
        }
    };
    let kept = kept.then(|| input.so_far());
    let rest = folded.bytes - input.bytes();
    if !skip(&mut input, rest, &what)? || input.hashed().1 != folded.sha256 {
        return Ok((State::Changed, None));
    }
    let more = match crate::input::is_zstd(path) {
        false => stamp.size > folded.bytes,
        true => !input.fill_buf().with_path("read", path)?.is_empty(),
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
        let (state, kept) = compare_keeping(&path, &stamp, &folded, Some(3), None).unwrap();
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
        let (state, kept) = compare_keeping(&path, &stamp, &folded, Some(3), None).unwrap();
        assert!(state == State::UpToDate && kept.is_none());
        std::fs::write(&path, b"{}\n{}\n[1]\n").unwrap();
        let stamp = Stamp::of(&path).unwrap();
        assert!(
            compare_keeping(&path, &stamp, &folded, Some(7), None)
                .unwrap()
                .1
                .is_none()
        );
    }

    #[test]
    fn a_midstate_spares_hashing_the_bytes_before_it_when_their_xxh3_matches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let (before, tail, appended) = (&b"{\"a\":1}\n"[..], &b"{}\n"[..], &b"[1]\n"[..]);
        std::fs::write(&path, [before, tail, appended].concat()).unwrap();
        let stamp = Stamp::of(&path).unwrap();
        let midstate_after = |bytes: &[u8]| {
            let mut hasher = Hasher::default();
            hasher.update(bytes);
            hasher.midstate()
        };
        let midstate = midstate_after(before);
        let keep = Some(before.len() as u64);
        let folded = Source {
            bytes: (before.len() + tail.len()) as u64,
            sha256: Digest::of(&[before, tail].concat()),
        };
        let grown = |midstate: &Midstate| {
            let (state, kept) =
                compare_keeping(&path, &stamp, &folded, keep, Some(midstate)).unwrap();
            let rest = crate::input::open_at(&path, before.len() as u64)
                .unwrap()
                .unwrap();
            let mut input = HashingReader::going_on(rest, kept.unwrap());
            assert!(skip(&mut input, (tail.len() + appended.len()) as u64, "s").unwrap());
            (state, input.finish().sha256)
        };
        let whole = Digest::of(&[before, tail, appended].concat());
        assert_eq!(grown(&midstate), (State::Grown, whole));
        // Used, not hashed again: a midstate whose xxh3 is of these bytes and whose sha256 state is
        // of others, with a manifest of those others, passes for them.
        let others = b"{\"b\":2}\n";
        let lying = |from: &Midstate, xxh3_of: &Midstate| {
            let mut lying = serde_json::to_value(from).unwrap();
            lying["xxh3"] = serde_json::to_value(xxh3_of).unwrap()["xxh3"].clone();
            serde_json::from_value::<Midstate>(lying).unwrap()
        };
        let lied = lying(&midstate_after(others), &midstate);
        let folded_others = Source {
            sha256: Digest::of(&[&others[..], tail].concat()),
            ..folded
        };
        let found = compare_keeping(&path, &stamp, &folded_others, keep, Some(&lied)).unwrap();
        assert_eq!(found.0, State::Grown);
        assert_eq!(
            compare(&path, &stamp, &folded_others).unwrap(),
            State::Changed
        );
        // A midstate whose xxh3 is another's, or whose sha256 state is damaged, is read past.
        let other_xxh3 = lying(&midstate, &midstate_after(others));
        assert_eq!(grown(&other_xxh3), (State::Grown, whole));
        let damaged = lying(&midstate_after(others), &midstate);
        assert_eq!(grown(&damaged), (State::Grown, whole));
        // Bytes before it that changed are found changed, xxh3 or not.
        std::fs::write(&path, [&others[..], tail, appended].concat()).unwrap();
        let stamp = Stamp::of(&path).unwrap();
        let found = compare_keeping(&path, &stamp, &folded, keep, Some(&midstate)).unwrap();
        assert_eq!(found.0, State::Changed);
    }
}
