//! Where a ledger's bytes come from: a session file (plain or `.zst`) or a folded session streamed
//! out of the store. Every pass over a ledger opens it afresh, so nothing is held between passes.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::digest::{Fingerprint, Fingerprinter};
use crate::error::{IoContext, Result};
use crate::store::Store;
use crate::store::manifest::Manifest;
use crate::store::reconstruct::SessionReader;

pub trait Source: Sync {
    /// A fresh reader over the ledger's (decompressed) bytes.
    fn open(&self) -> Result<Box<dyn BufRead + '_>>;
    /// A fresh reader over the ledger's bytes from `at` or a place before it, and that place: a
    /// pass going on after bytes seen before need not read them all again. From the start unless
    /// the source knows better.
    fn open_from(&self, at: u64) -> Result<(Box<dyn BufRead + '_>, u64)> {
        let _ = at;
        Ok((self.open()?, 0))
    }
    /// How to name the ledger in messages.
    fn describe(&self) -> String;
}

/// A session file on disk, plain or `.jsonl.zst`.
pub struct FileSource(pub PathBuf);

impl Source for FileSource {
    fn open(&self) -> Result<Box<dyn BufRead + '_>> {
        Ok(crate::input::open(&self.0)?)
    }
    fn describe(&self) -> String {
        self.0.display().to_string()
    }
}

/// A session file that must still hold exactly the bytes a fold just read: reading it spares a
/// read-back from the store, and the check at its end keeps that honest (a read that ends on other
/// bytes fails as `SessionChanged`).
pub struct FoldedFile {
    pub path: PathBuf,
    /// The bytes the fold read.
    pub read: Fingerprint,
    /// The fold's fingerprint of the first bytes it read when it read them before (a session grown
    /// since it was folded): a pass going on after them starts there, its fingerprint going on
    /// from this one, and never reads them again.
    pub known: Option<Fingerprinter>,
    /// The bytes the fold read, when it kept them: passes from where they start read them
    /// there, neither from the file nor checked (they are the bytes read).
    pub kept: Option<Kept>,
}

/// The bytes a fold read of a session, from `from` on (its end), kept in memory.
pub struct Kept {
    from: u64,
    bytes: Vec<u8>,
}

impl Kept {
    pub fn new(from: u64, bytes: Vec<u8>) -> Self {
        Self { from, bytes }
    }
}

impl FoldedFile {
    fn reading(&self, reader: Box<dyn BufRead + Send>, seen: Fingerprinter) -> Box<dyn BufRead> {
        Box::new(Fingerprinted {
            reader,
            seen,
            end: End::Expect(self.read, self.describe()),
        })
    }
}

impl Source for FoldedFile {
    fn open(&self) -> Result<Box<dyn BufRead + '_>> {
        match &self.kept {
            Some(kept) if kept.from == 0 => Ok(Box::new(&kept.bytes[..])),
            _ => Ok(self.reading(crate::input::open(&self.path)?, Fingerprinter::default())),
        }
    }
    fn open_from(&self, at: u64) -> Result<(Box<dyn BufRead + '_>, u64)> {
        if let Some(kept) = self.kept.as_ref().filter(|k| k.from <= at) {
            return Ok((Box::new(&kept.bytes[..]), kept.from));
        }
        if let Some(known) = self.known.as_ref().filter(|k| k.bytes() <= at)
            && let Some(reader) = crate::input::open_at(&self.path, known.bytes())?
        {
            return Ok((self.reading(reader, known.clone()), known.bytes()));
        }
        Ok((self.open()?, 0))
    }
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// A session file read while a fold reads it too, before the fold's read is known: each pass that
/// reads it to its end leaves the fingerprint of what it read, for the caller to check against the
/// fold's once both are done ([`AlongsideFile::read_as`]).
pub struct AlongsideFile {
    pub path: PathBuf,
    passes: Mutex<Vec<Fingerprint>>,
}

impl AlongsideFile {
    pub fn new(path: PathBuf) -> Self {
        Self {
            path,
            passes: Mutex::new(Vec::new()),
        }
    }

    /// Whether `passes` passes read it whole, each exactly the bytes `read`.
    pub fn read_as(&self, passes: usize, read: Fingerprint) -> bool {
        let seen = self.passes.lock().expect("never poisoned");
        seen.len() == passes && seen.iter().all(|&f| f == read)
    }
}

impl Source for AlongsideFile {
    fn open(&self) -> Result<Box<dyn BufRead + '_>> {
        Ok(Box::new(Fingerprinted {
            reader: crate::input::open(&self.path)?,
            seen: Fingerprinter::default(),
            end: End::Record(Some(&self.passes)),
        }))
    }
    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// A reader that fingerprints what is read through it and, at its end, does what `end` says.
struct Fingerprinted<'a, R> {
    reader: R,
    seen: Fingerprinter,
    end: End<'a>,
}

enum End<'a> {
    /// Fail unless what was read has this fingerprint (a read past its size fails at once); the
    /// source, for the message.
    Expect(Fingerprint, String),
    /// Leave the fingerprint there, once.
    Record(Option<&'a Mutex<Vec<Fingerprint>>>),
}

impl<R: BufRead> std::io::Read for Fingerprinted<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        crate::digest::read_buffered(self, out)
    }
}

impl<R: BufRead> BufRead for Fingerprinted<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        let at_end = self.reader.fill_buf()?.is_empty();
        match &mut self.end {
            End::Expect(expected, what) => {
                let wrong = match at_end {
                    true => self.seen.fingerprint() != *expected,
                    false => self.seen.bytes() > expected.bytes,
                };
                if wrong {
                    let why = "it no longer holds the folded bytes";
                    return Err(crate::error::Error::session_changed(what, why).into_io());
                }
            }
            End::Record(passes) if at_end => {
                if let Some(passes) = passes.take() {
                    let fingerprint = self.seen.fingerprint();
                    passes.lock().expect("never poisoned").push(fingerprint);
                }
            }
            End::Record(_) => {}
        }
        self.reader.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        let seen = &mut self.seen;
        crate::digest::consume_seen(&mut self.reader, n, |bytes| seen.update(bytes));
    }
}

/// A folded session, read back out of the store and verified as it streams.
pub struct StoreSource<'a> {
    pub store: &'a Store,
    pub manifest: &'a Manifest,
}

impl Source for StoreSource<'_> {
    fn open(&self) -> Result<Box<dyn BufRead + '_>> {
        Ok(Box::new(BufReader::with_capacity(
            1 << 20,
            SessionReader::new(self.store, self.manifest),
        )))
    }
    fn describe(&self) -> String {
        format!("folded session {}", self.manifest.session.id)
    }
}

/// The ledger's lines one at a time: borrowed from the reader's buffer when a line lies whole in
/// it, else gathered into a reused buffer. Memory is the largest line.
pub struct Lines<'a> {
    reader: Box<dyn BufRead + 'a>,
    what: String,
    buf: Vec<u8>,
    /// The bytes of the line last handed out that are still in the reader's buffer.
    pending: usize,
    /// The bytes of the lines handed out (or skipped) so far, each with its `\n`.
    read: u64,
    /// Whether the last line handed out ended at the end of the bytes, without a `\n`.
    unended: bool,
}

impl<'a> Lines<'a> {
    pub fn new(source: &'a dyn Source) -> Result<Self> {
        Ok(Self::starting(source.open()?, 0, source))
    }

    /// The lines after the first `bytes` bytes, made of none of those (they must end a line for
    /// the next line to start there); `None` when there are fewer.
    pub fn after(source: &'a dyn Source, bytes: u64) -> Result<Option<Self>> {
        let (reader, at) = source.open_from(bytes)?;
        let mut lines = Self::starting(reader, at, source);
        if !crate::input::skip(&mut lines.reader, bytes - at, &lines.what)? {
            return Ok(None);
        }
        lines.read = bytes;
        Ok(Some(lines))
    }

    fn starting(reader: Box<dyn BufRead + 'a>, at: u64, source: &dyn Source) -> Self {
        Self {
            reader,
            what: source.describe(),
            buf: Vec::new(),
            pending: 0,
            read: at,
            unended: false,
        }
    }

    /// The bytes of the lines handed out (or skipped) so far.
    pub fn bytes(&self) -> u64 {
        self.read
    }

    /// The bytes of the lines handed out so far, when each ended with a `\n` (a line after them
    /// starts there).
    pub fn whole_lines(&self) -> Option<u64> {
        (!self.unended).then_some(self.read)
    }

    /// The next line without its `\n` (and `\r`), or `None` at the end.
    pub fn next_line(&mut self) -> Result<Option<&[u8]>> {
        self.reader.consume(std::mem::take(&mut self.pending));
        self.buf.clear();
        let what = &self.what;
        let mut whole = None;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context(|| format!("read {what}")),
            };
            if available.is_empty() {
                break;
            }
            match memchr::memchr(b'\n', available) {
                Some(at) if self.buf.is_empty() => {
                    whole = Some(at + 1);
                    break;
                }
                Some(at) => {
                    self.buf.extend_from_slice(&available[..=at]);
                    self.reader.consume(at + 1);
                    break;
                }
                None => {
                    let n = available.len();
                    self.buf.extend_from_slice(available);
                    self.reader.consume(n);
                }
            }
        }
        let mut line = match whole {
            Some(n) => {
                self.pending = n;
                let available = self.reader.fill_buf().context(|| format!("read {what}"))?;
                &available[..n]
            }
            None if self.buf.is_empty() => return Ok(None),
            None => &self.buf[..],
        };
        self.read += line.len() as u64;
        self.unended = !line.ends_with(b"\n");
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest;
        }
        if let Some(rest) = line.strip_suffix(b"\r") {
            line = rest;
        }
        Ok(Some(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes read through a tiny buffer, so that lines span refills.
    struct Bytes(&'static [u8], usize);

    impl Source for Bytes {
        fn open(&self) -> Result<Box<dyn BufRead + '_>> {
            Ok(Box::new(BufReader::with_capacity(self.1, self.0)))
        }
        fn describe(&self) -> String {
            "bytes".into()
        }
    }

    fn lines(source: &dyn Source) -> Vec<String> {
        let mut lines = Lines::new(source).unwrap();
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().unwrap() {
            out.push(String::from_utf8(line.to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn a_folded_session_streams_from_its_packed_objects_and_fails_at_its_end_unless_it_is_its_source()
     {
        use crate::digest::Digest;
        use crate::store::manifest::Source as Folded;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path().join("store")).unwrap();
        let bytes = b"{\"a\":1}\n{\"b\":2}\n";
        let digest = Digest::of(bytes);
        let odb = store.odb();
        let mut pack = odb.pack_writer(odb.pack_options(false).unwrap()).unwrap();
        pack.add(&digest, bytes).unwrap();
        odb.commit_pack(pack).unwrap();
        let other = Folded {
            bytes: bytes.len() as u64,
            sha256: Digest::of(b"other bytes"),
        };
        let mut manifest = crate::store::manifest::of_one_part("s1", bytes);
        let read = |manifest: &Manifest| {
            let mut out = Vec::new();
            let folded = StoreSource {
                store: &store,
                manifest,
            };
            folded.open().unwrap().read_to_end(&mut out).map(|_| out)
        };
        assert_eq!(read(&manifest).unwrap(), bytes);
        // Its objects are read unhashed (by their blocks' checksums): the session's own sha256,
        // at the end, is what says these are not its bytes.
        manifest.source = other;
        let err = read(&manifest).unwrap_err();
        assert!(
            err.to_string().contains("reconstruction gives sha256"),
            "{err}"
        );
    }

    #[test]
    fn a_file_read_alongside_a_fold_counts_only_passes_that_read_the_folds_bytes_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n").unwrap();
        let mut fold = Fingerprinter::default();
        fold.update(b"{\"a\":1}\n{\"b\":2}\n");
        let read = fold.fingerprint();
        let file = AlongsideFile::new(path.clone());
        let pass = |file: &AlongsideFile| {
            let mut lines = Lines::new(file).unwrap();
            while lines.next_line().unwrap().is_some() {}
        };
        pass(&file);
        assert!(!file.read_as(2, read), "one pass of two");
        // A pass that stops before the end leaves nothing.
        Lines::new(&file).unwrap().next_line().unwrap();
        assert!(!file.read_as(2, read));
        pass(&file);
        assert!(file.read_as(2, read));
        // A pass over other bytes (the file grew between them) voids the reading.
        std::fs::write(&path, b"{\"a\":1}\n{\"b\":2}\n{}\n").unwrap();
        pass(&file);
        assert!(!file.read_as(3, read));
    }

    #[test]
    fn lines_after_bytes_a_fold_read_before_start_there_checked_against_the_whole_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let (before, after) = (&b"{\"a\":1}\n"[..], &b"{\"b\":2}\n"[..]);
        let mut known = Fingerprinter::default();
        known.update(before);
        let mut whole = known.clone();
        whole.update(after);
        // The first bytes changed on disk since the fold read them: a pass going on after them
        // never reads them, and its check is of the bytes the fold read.
        std::fs::write(&path, [&b"{\"A\":9}\n"[..], after].concat()).unwrap();
        let file = |known: Option<Fingerprinter>| FoldedFile {
            path: path.clone(),
            read: whole.fingerprint(),
            known,
            kept: None,
        };
        let rest = |file: &FoldedFile, from: u64| -> Result<Vec<Vec<u8>>> {
            let mut lines = Lines::after(file, from)?.expect("long enough");
            let mut out = Vec::new();
            while let Some(line) = lines.next_line()? {
                out.push(line.to_vec());
            }
            assert_eq!(lines.bytes(), 16);
            Ok(out)
        };
        assert_eq!(rest(&file(Some(known.clone())), 8).unwrap(), [b"{\"b\":2}"]);
        // Without the fold's fingerprint of them, they are read, and found changed.
        let changed = rest(&file(None), 8).unwrap_err();
        assert!(
            changed
                .to_string()
                .contains("no longer holds the folded bytes"),
            "{changed}"
        );
        // A file shorter than the bytes to go on after has no lines after them.
        assert!(
            Lines::after(&file(Some(known.clone())), 17)
                .unwrap()
                .is_none()
        );
        // Nor is a fingerprint of more bytes than skipped used.
        assert!(rest(&file(Some(known)), 0).is_err());
    }

    #[test]
    fn bytes_a_fold_kept_are_read_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let (before, after) = (&b"{\"a\":1}\n"[..], &b"{\"b\":2}\n"[..]);
        // The file on disk holds other bytes now: the passes read what the fold read.
        std::fs::write(&path, b"{\"A\":9}\n{\"B\":8}\n").unwrap();
        let mut whole = Fingerprinter::default();
        whole.update(&[before, after].concat());
        let file = |kept: Kept| FoldedFile {
            path: path.clone(),
            read: whole.fingerprint(),
            known: None,
            kept: Some(kept),
        };
        let all = file(Kept::new(0, [before, after].concat()));
        assert_eq!(lines(&all), ["{\"a\":1}", "{\"b\":2}"]);
        let mut lines_after = Lines::after(&all, 8).unwrap().unwrap();
        assert_eq!(lines_after.next_line().unwrap(), Some(&b"{\"b\":2}"[..]));
        // Kept from the 8th byte on (a grown session's appended bytes): a pass from there reads
        // them; one from the start reads the file, and finds it changed.
        let appended = file(Kept::new(8, after.to_vec()));
        let mut lines_after = Lines::after(&appended, 8).unwrap().unwrap();
        assert_eq!(lines_after.next_line().unwrap(), Some(&b"{\"b\":2}"[..]));
        assert_eq!(lines_after.bytes(), 16);
        let mut from_start = Lines::new(&appended).unwrap();
        let changed =
            std::iter::from_fn(|| from_start.next_line().map(|l| l.map(drop)).transpose())
                .collect::<Result<Vec<()>>>()
                .unwrap_err();
        assert!(
            changed
                .to_string()
                .contains("no longer holds the folded bytes"),
            "{changed}"
        );
    }

    #[test]
    fn lines_are_the_same_whether_whole_in_the_buffer_or_spanning_refills() {
        let text = b"{\"a\":1}\r\n\nsecond line, longer than the buffer\nx\r\nlast without newline";
        let expected = [
            "{\"a\":1}",
            "",
            "second line, longer than the buffer",
            "x",
            "last without newline",
        ];
        for capacity in [1, 2, 3, 7, 64, 1 << 20] {
            assert_eq!(
                lines(&Bytes(text, capacity)),
                expected,
                "capacity {capacity}"
            );
        }
        assert!(lines(&Bytes(b"", 4)).is_empty());
        assert_eq!(lines(&Bytes(b"\n", 4)), [""]);
    }
}
