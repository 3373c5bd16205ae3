//! SHA-256 digests as object names: parsing and printing lowercase hex, hashing bytes and streams;
//! fingerprints, the cheap check that a second read of a file found the bytes of the first; and
//! midstates, what lets a later read of a file grown by an append hash only what was appended.

use std::fmt;
use std::io::{self, BufRead, Read, Write};
use std::str::FromStr;

use sha2::digest::common::hazmat::{SerializableState, SerializedState};
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
        let mut out = [0u8; 32];
        unhex(text.as_bytes(), &mut out)?;
        Some(Self(out))
    }
}

/// Lowercase hex digits of `bytes` into `out`, twice as long.
fn hex(bytes: &[u8], out: &mut [u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (b, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = HEX[(b >> 4) as usize];
        pair[1] = HEX[(b & 15) as usize];
    }
}

/// The bytes `text` (exactly twice as long as `out`, lowercase hex) spells, into `out`.
fn unhex(text: &[u8], out: &mut [u8]) -> Option<()> {
    // A table, not a match: every manifest names its parts in hex, and loading one parses them all.
    const NIBBLE: [u8; 256] = {
        let mut table = [u8::MAX; 256];
        let mut c = 0;
        while c < 10 {
            table[b'0' as usize + c] = c as u8;
            c += 1;
        }
        while c < 16 {
            table[b'a' as usize + c - 10] = c as u8;
            c += 1;
        }
        table
    };
    if text.len() != 2 * out.len() {
        return None;
    }
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        let (high, low) = (NIBBLE[pair[0] as usize], NIBBLE[pair[1] as usize]);
        if (high | low) > 15 {
            return None;
        }
        *byte = (high << 4) | low;
    }
    Some(())
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = [0u8; 64];
        hex(&self.0, &mut text);
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    pub bytes: u64,
    /// Kept as 32 hex digits: a JSON number past 2^64 does not survive every reader.
    #[serde(with = "hex_u128")]
    pub xxh3: u128,
}

mod hex_u128 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(value: &u128, s: S) -> Result<S::Ok, S::Error> {
        let mut text = [0u8; 32];
        super::hex(&value.to_be_bytes(), &mut text);
        s.serialize_str(std::str::from_utf8(&text).expect("hex is ascii"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        let mut bytes = [0u8; 16];
        super::unhex(text.as_bytes(), &mut bytes)
            .ok_or_else(|| D::Error::custom("not 32 lowercase hex digits"))?;
        Ok(u128::from_be_bytes(bytes))
    }
}

impl Fingerprint {
    pub fn of(bytes: &[u8]) -> Self {
        Self {
            bytes: bytes.len() as u64,
            xxh3: xxhash_rust::xxh3::xxh3_128(bytes),
        }
    }
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

/// The sha256 and [`Fingerprint`] of bytes as they stream by.
#[derive(Clone, Default)]
pub struct Hasher {
    sha256: Sha256,
    fingerprinter: Fingerprinter,
}

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        self.sha256.update(bytes);
        self.fingerprinter.update(bytes);
    }

    pub fn bytes(&self) -> u64 {
        self.fingerprinter.bytes()
    }

    /// The sha256 of the bytes so far.
    pub fn sha256(&self) -> Digest {
        Digest(self.sha256.clone().finalize().into())
    }

    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprinter.fingerprint()
    }

    /// Its fingerprinter alone, to go on fingerprinting the bytes after these.
    pub fn fingerprinter(&self) -> Fingerprinter {
        self.fingerprinter.clone()
    }

    /// What a later read of the same bytes needs to go on hashing after them ([`Self::resume`]).
    pub fn midstate(&self) -> Midstate {
        let state = self.sha256.serialize();
        let mut text = vec![0u8; 2 * state.len()];
        hex(&state, &mut text);
        Midstate {
            seen: self.fingerprint(),
            sha256: String::from_utf8(text).expect("hex is ascii"),
        }
    }

    /// A hasher that goes on from `midstate`, taken after some bytes, as if it had hashed them: it
    /// has to be given `fingerprinter`, which saw bytes just as cheaply, to tell they were the same
    /// ones. `None` when they were not (or the midstate does not read).
    pub fn resume(fingerprinter: Fingerprinter, midstate: &Midstate) -> Option<Self> {
        if fingerprinter.fingerprint() != midstate.seen {
            return None;
        }
        let mut state = SerializedState::<Sha256>::default();
        unhex(midstate.sha256.as_bytes(), &mut state)?;
        Some(Self {
            sha256: Sha256::deserialize(&state).ok()?,
            fingerprinter,
        })
    }
}

/// sha256's state after a file's first bytes, with their count and xxh3: kept with a folded
/// session, it lets the next fold of the session grown by an append check those bytes with their
/// xxh3 (some 20× cheaper) and hash with sha256 only what comes after them. Only ever a shortcut
/// to a sha256 that is then checked against the manifest's own.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Midstate {
    #[serde(flatten)]
    seen: Fingerprint,
    sha256: String,
}

impl Midstate {
    /// How many bytes it was taken after.
    pub fn bytes(&self) -> u64 {
        self.seen.bytes
    }
}

/// A buffered reader that shows what is consumed through it to `S`.
pub struct Seeing<R, S> {
    inner: R,
    seen: S,
}

/// What a [`Seeing`] reader shows the bytes consumed through it to.
pub trait Sees {
    fn see(&mut self, bytes: &[u8]);
}

/// A buffered reader that hashes and counts what is consumed through it, and notes on the way the
/// sha256 of its first `mark` bytes (a file's folded prefix, say).
pub type HashingReader<R> = Seeing<R, SoFar>;

/// A buffered reader that only fingerprints what is consumed through it: the bytes' sha256 is
/// taken by whoever consumes them, and the two fingerprints tell whether it saw the same bytes.
pub type FingerprintingReader<R> = Seeing<R, Fingerprinter>;

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

/// Bytes hashed and fingerprinted as they are given, noting on the way the sha256 of the first
/// `mark` of them: what a [`HashingReader`] saw of a file's first bytes, or what a writer of the
/// file's parts wrote.
#[derive(Clone)]
pub struct SoFar {
    hasher: Hasher,
    mark: Option<u64>,
    at_mark: Option<Digest>,
}

impl SoFar {
    /// What `hasher` hashed, going on to note the sha256 of the first `mark` bytes (at least as
    /// many as were hashed).
    pub fn of(hasher: Hasher, mark: Option<u64>) -> Self {
        let mut so_far = Self {
            hasher,
            mark,
            at_mark: None,
        };
        so_far.note_mark();
        so_far
    }

    pub fn add(&mut self, mut bytes: &[u8]) {
        if let Some(mark) = self.mark.filter(|&m| m > self.hasher.bytes()) {
            let before = (mark - self.hasher.bytes()).min(bytes.len() as u64) as usize;
            self.hasher.update(&bytes[..before]);
            bytes = &bytes[before..];
            self.note_mark();
        }
        self.hasher.update(bytes);
    }

    fn note_mark(&mut self) {
        if self.mark == Some(self.hasher.bytes()) {
            self.at_mark = Some(self.hasher.sha256());
        }
    }

    pub fn hasher(&self) -> &Hasher {
        &self.hasher
    }

    /// The sha256 of the first `mark` bytes, when there were that many.
    pub fn at_mark(&self) -> Option<Digest> {
        self.at_mark
    }
}

impl Sees for SoFar {
    fn see(&mut self, bytes: &[u8]) {
        self.add(bytes);
    }
}

impl Sees for Fingerprinter {
    fn see(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl<R: BufRead> HashingReader<R> {
    pub fn new(inner: R, mark: Option<u64>) -> Self {
        Self::going_on(inner, SoFar::of(Hasher::default(), mark))
    }

    pub fn bytes(&self) -> u64 {
        self.seen.hasher.bytes()
    }

    /// The size and sha256 of what was consumed so far.
    pub fn hashed(&self) -> (u64, Digest) {
        (self.bytes(), self.seen.hasher.sha256())
    }

    /// What was hashed so far, for a reader of the bytes after them to go on from
    /// ([`going_on`](Self::going_on)).
    pub fn so_far(&self) -> SoFar {
        self.seen.clone()
    }

    pub fn finish(self) -> Hashed {
        let hasher = &self.seen.hasher;
        Hashed {
            sha256: hasher.sha256(),
            bytes: hasher.bytes(),
            at_mark: self.seen.at_mark,
            fingerprint: hasher.fingerprint(),
        }
    }
}

impl<R: BufRead> FingerprintingReader<R> {
    pub fn fingerprint(&self) -> Fingerprint {
        self.seen.fingerprint()
    }
}

impl<R, S> Seeing<R, S> {
    /// A reader showing what is consumed through it to `seen`, which may have seen the bytes
    /// before them: a reader of the bytes after them goes on hashing as if it had read them too.
    pub fn going_on(inner: R, seen: S) -> Self {
        Self { inner, seen }
    }

    /// The reader, where this one stopped, and what saw the bytes consumed.
    pub fn into_parts(self) -> (R, S) {
        (self.inner, self.seen)
    }
}

impl<R: BufRead, S: Sees> Read for Seeing<R, S> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, out)
    }
}

impl<R: BufRead, S: Sees> BufRead for Seeing<R, S> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        let seen = &mut self.seen;
        consume_seen(&mut self.inner, n, |bytes| seen.see(bytes));
    }
}

/// `Read` for a reader whose `consume` sees the bytes: copy out of its buffer.
pub fn read_buffered(reader: &mut impl BufRead, out: &mut [u8]) -> io::Result<usize> {
    let buf = reader.fill_buf()?;
    let n = buf.len().min(out.len());
    out[..n].copy_from_slice(&buf[..n]);
    reader.consume(n);
    Ok(n)
}

/// Consume `n` bytes of `inner`, showing them to `seen` first.
pub fn consume_seen(inner: &mut impl BufRead, n: usize, seen: impl FnOnce(&[u8])) {
    // A BufRead hands out the same buffered bytes again, without reading, until consumed.
    if let Ok(buf) = inner.fill_buf() {
        seen(&buf[..n.min(buf.len())]);
    }
    inner.consume(n);
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
    fn a_fingerprint_reads_back_from_json_whole_and_nothing_else_does() {
        let fingerprint = Fingerprint::of(b"a record");
        assert_eq!(fingerprint.bytes, 8);
        assert!(
            fingerprint.xxh3 > u128::from(u64::MAX),
            "a test of the high bits"
        );
        let json = serde_json::to_string(&fingerprint).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"bytes":8,"xxh3":"{:032x}"}}"#, fingerprint.xxh3)
        );
        // As a JSON value too, which holds no number past 2^64.
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            serde_json::from_value::<Fingerprint>(value).unwrap(),
            fingerprint
        );
        let plus = format!("+{}", "0".repeat(31));
        let capitals = format!("{:032X}", fingerprint.xxh3);
        for bad in [
            "1",
            "-1",
            "0x1",
            &"g".repeat(32),
            &"0".repeat(33),
            &plus,
            &capitals,
        ] {
            let json = format!(r#"{{"bytes":8,"xxh3":"{bad}"}}"#);
            assert!(serde_json::from_str::<Fingerprint>(&json).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_midstate_reads_back_and_resumes_only_after_the_same_bytes() {
        let (head, tail) = (b"the first bytes, ".repeat(9), b"and the rest");
        let mut hasher = Hasher::default();
        hasher.update(&head);
        let json = serde_json::to_string(&hasher.midstate()).unwrap();
        let xxh3 = format!("{:032x}", Fingerprint::of(&head).xxh3);
        assert!(
            json.starts_with(&format!(r#"{{"bytes":153,"xxh3":"{xxh3}","sha256":""#)),
            "{json}"
        );
        let midstate: Midstate = serde_json::from_str(&json).unwrap();
        let seen = |bytes: &[u8]| {
            let mut fingerprinter = Fingerprinter::default();
            fingerprinter.update(bytes);
            fingerprinter
        };
        let mut resumed = Hasher::resume(seen(&head), &midstate).expect("the same bytes");
        resumed.update(tail);
        assert_eq!(resumed.sha256(), Digest::of(&[&head[..], tail].concat()));
        let mut other = head.clone();
        other[0] ^= 1;
        assert!(Hasher::resume(seen(&other), &midstate).is_none());
        let capitals = json.replace(&xxh3, &xxh3.to_uppercase());
        assert!(serde_json::from_str::<Midstate>(&capitals).is_err());
    }

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
    fn what_writes_the_bytes_read_on_hashes_them_and_the_reader_fingerprints_them() {
        let data = b"0123456789".repeat(100);
        let mut reader = HashingReader::new(&data[..], Some(500));
        io::copy(&mut (&mut reader).take(300), &mut io::sink()).unwrap();
        let (rest, so_far) = reader.into_parts();
        let mut input = FingerprintingReader::going_on(rest, so_far.hasher().fingerprinter());
        let mut written = so_far.clone();
        let mut out = Vec::new();
        input.read_to_end(&mut out).unwrap();
        for chunk in out.chunks(7) {
            written.add(chunk);
        }
        assert_eq!(input.fingerprint(), written.hasher().fingerprint());
        assert_eq!(written.hasher().sha256(), Digest::of(&data));
        assert_eq!(written.at_mark(), Some(Digest::of(&data[..500])));

        let mut other = so_far;
        other.add(&out[..out.len() - 1]);
        other.add(b"x");
        assert_eq!(other.hasher().bytes(), 1000);
        assert_ne!(input.fingerprint(), other.hasher().fingerprint());
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
        for other in ['g', '/', ':', '`', '{', 'A', 'F'] {
            assert_eq!(Digest::parse(&format!("{}{other}", &hex[..63])), None);
        }
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
