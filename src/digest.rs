//! SHA-256 digests as object names: parsing and printing lowercase hex, hashing bytes and streams;
//! and fingerprints, the cheap check that a second read of a file found the bytes of the first.

use std::fmt;
use std::io::{self, BufRead, Read, Write};
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest whose raw bytes are `bytes` (as binary tables store them).
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// Parse exactly 64 lowercase hex digits, the only spelling the store uses.
    pub fn parse(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        if bytes.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
        }
        Some(Self(out))
    }
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 64];
        for (i, b) in self.0.iter().enumerate() {
            text[2 * i] = HEX[(b >> 4) as usize];
            text[2 * i + 1] = HEX[(b & 15) as usize];
        }
        f.write_str(std::str::from_utf8(&text).expect("hex is ascii"))
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl FromStr for Digest {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| format!("not a sha256 (64 lowercase hex digits): {s:?}"))
    }
}

impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The length and xxh3-128 of some bytes: what a later read of the same file is checked against.
/// xxh3 runs ~20× faster than sha256 and catches a file that changed just as surely; it does not
/// resist a forger, which the manifest's sha256 does (the store never names anything by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub bytes: u64,
    pub xxh3: u128,
}

/// A [`Fingerprint`] taken as bytes stream by.
#[derive(Clone, Default)]
pub struct Fingerprinter {
    hasher: xxhash_rust::xxh3::Xxh3Default,
    bytes: u64,
}

impl Fingerprinter {
    pub fn update(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            bytes: self.bytes,
            xxh3: self.hasher.digest128(),
        }
    }
}

/// A writer that hashes and counts what passes through it on its way to `inner`.
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn finish(self) -> (W, Digest, u64) {
        (
            self.inner,
            Digest(self.hasher.finalize().into()),
            self.bytes,
        )
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A buffered reader that hashes and counts what is consumed through it, and notes on the way the
/// sha256 of its first `mark` bytes (a file's folded prefix, say).
pub struct HashingReader<R> {
    inner: R,
    tally: Tally,
}

/// What a [`HashingReader`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hashed {
    pub sha256: Digest,
    pub bytes: u64,
    /// The sha256 of the first `mark` bytes, when there were that many.
    pub at_mark: Option<Digest>,
    /// The same bytes' [`Fingerprint`], for a later read to be checked against.
    pub fingerprint: Fingerprint,
}

/// What a [`HashingReader`] hashed and fingerprinted of a file's first bytes.
pub struct SoFar(Tally);

#[derive(Clone)]
struct Tally {
    hasher: Sha256,
    fingerprinter: Fingerprinter,
    bytes: u64,
    mark: Option<u64>,
    at_mark: Option<Digest>,
}

impl Tally {
    fn add(&mut self, mut bytes: &[u8]) {
        self.fingerprinter.update(bytes);
        if let Some(mark) = self.mark.filter(|&m| m > self.bytes) {
            let before = (mark - self.bytes).min(bytes.len() as u64) as usize;
            self.hasher.update(&bytes[..before]);
            self.bytes += before as u64;
            bytes = &bytes[before..];
            self.note_mark();
        }
        self.hasher.update(bytes);
        self.bytes += bytes.len() as u64;
    }

    fn note_mark(&mut self) {
        if self.mark == Some(self.bytes) {
            self.at_mark = Some(Digest(self.hasher.clone().finalize().into()));
        }
    }
}

impl<R: BufRead> HashingReader<R> {
    pub fn new(inner: R, mark: Option<u64>) -> Self {
        let mut tally = Tally {
            hasher: Sha256::new(),
            fingerprinter: Fingerprinter::default(),
            bytes: 0,
            mark,
            at_mark: None,
        };
        tally.note_mark();
        Self { inner, tally }
    }

    pub fn bytes(&self) -> u64 {
        self.tally.bytes
    }

    /// The size and sha256 of what was consumed so far.
    pub fn hashed(&self) -> (u64, Digest) {
        (
            self.tally.bytes,
            Digest(self.tally.hasher.clone().finalize().into()),
        )
    }

    /// A writer whose hash goes on from this reader's: what it is given is hashed as if it had
    /// been read next.
    pub fn writer_from_here<W: Write>(&self, inner: W) -> HashingWriter<W> {
        HashingWriter {
            inner,
            hasher: self.tally.hasher.clone(),
            bytes: self.tally.bytes,
        }
    }

    /// What was hashed so far, for a reader of the bytes after them to go on from
    /// ([`going_on`](Self::going_on)).
    pub fn so_far(&self) -> SoFar {
        SoFar(self.tally.clone())
    }

    /// A reader of the bytes after those `so_far` saw, hashing as if it had read them too.
    pub fn going_on(inner: R, so_far: SoFar) -> Self {
        Self {
            inner,
            tally: so_far.0,
        }
    }

    pub fn finish(self) -> Hashed {
        Hashed {
            sha256: Digest(self.tally.hasher.finalize().into()),
            bytes: self.tally.bytes,
            at_mark: self.tally.at_mark,
            fingerprint: self.tally.fingerprinter.fingerprint(),
        }
    }
}

impl<R: BufRead> Read for HashingReader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let buf = self.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for HashingReader<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        // A BufRead hands out the same buffered bytes again, without reading, until consumed.
        if let Ok(buf) = self.inner.fill_buf() {
            self.tally.add(&buf[..n.min(buf.len())]);
        }
        self.inner.consume(n);
    }
}

/// The sha256 and length of everything `reader` yields.
pub fn hash_reader(mut reader: impl Read) -> io::Result<(Digest, u64)> {
    let mut sink = HashingWriter::new(io::sink());
    io::copy(&mut reader, &mut sink)?;
    let (_, digest, bytes) = sink.finish();
    Ok((digest, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hashing_reader_hashes_what_is_consumed_and_notes_its_mark() {
        let data = b"0123456789".repeat(100);
        for mark in [0, 1, 7, 500, 999, 1000] {
            let mut reader =
                HashingReader::new(io::BufReader::with_capacity(7, &data[..]), Some(mark));
            let mut out = Vec::new();
            reader.read_to_end(&mut out).unwrap();
            let hashed = reader.finish();
            assert_eq!(out, data);
            assert_eq!(hashed.sha256, Digest::of(&data));
            assert_eq!(hashed.bytes, 1000);
            assert_eq!(
                hashed.at_mark,
                Some(Digest::of(&data[..mark as usize])),
                "{mark}"
            );
        }
        let mut reader = HashingReader::new(&data[..10], Some(11));
        io::copy(&mut reader, &mut io::sink()).unwrap();
        assert_eq!(reader.finish().at_mark, None);
    }

    #[test]
    fn hex_round_trips_and_rejects_other_spellings() {
        let d = Digest::of(b"abc");
        let hex = d.to_string();
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Digest::parse(&hex), Some(d));
        assert_eq!(Digest::parse(&hex.to_uppercase()), None);
        assert_eq!(Digest::parse(&hex[..63]), None);
        assert_eq!(Digest::parse(&format!("{}g", &hex[..63])), None);
    }

    #[test]
    fn hashing_writer_matches_one_shot_hash() {
        let mut w = HashingWriter::new(Vec::new());
        w.write_all(b"hello ").unwrap();
        w.write_all(b"world").unwrap();
        let (inner, digest, bytes) = w.finish();
        assert_eq!(inner, b"hello world");
        assert_eq!(bytes, 11);
        assert_eq!(digest, Digest::of(b"hello world"));
    }
}
