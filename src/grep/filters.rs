//! Each folded session's trigram filter ([`trigrams`]), kept by the sha256 of its bytes in
//! `<store>/cache/grep-filters`, so that a search reads only the sessions that may hold a match.
//! The same bytes always hold the same text: an entry is never stale, only unused once no session
//! has those bytes. A search builds the filters its sessions lack (reading each such session
//! whole once) and writes the file again with them.
//!
//! A cache, never a record: not mirrored, not needed by any other command. The file is
//! `ctxfold grep filters v1\n` then one zstd frame with its checksum, of records `<sha256: 32
//! bytes> <log2 of the map's bits: 1 byte> <the map>`. A file that is missing, damaged or
//! truncated anywhere (the frame's checksum is checked before any of its answers is used) only
//! means the filters are built again. It is replaced whole (a temp file renamed), so two searches
//! at once each leave a whole file (the last one's).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::sync::Mutex;

use rayon::prelude::*;

use super::folded::trim_end;
use super::strings::Texts;
use super::trigrams::{Builder, Filter, Query};
use crate::digest::Digest;
use crate::files::atomic::Pending;
use crate::ledger::{Source, StoreSource};
use crate::store::Store;

const FILE: &str = "grep-filters";
const MAGIC: &[u8] = b"ctxfold grep filters v1\n";
const LEVEL: i32 = 3;

/// A session a search reads from the store: its id and the sha256 of its bytes.
pub struct Folded<'a> {
    pub id: &'a str,
    pub sha256: Digest,
}

/// The bytes (sha256) of `sessions` that hold no match of `query`, as their filters tell; the
/// filters missing are built now and kept, and those of bytes no session of `live` holds
/// dropped. Whatever cannot be told (a session that cannot be read) may match.
pub fn without_match(
    store: &Store,
    sessions: &[Folded<'_>],
    query: &Query,
    live: &HashSet<Digest>,
) -> HashSet<Digest> {
    let wanted: HashSet<Digest> = sessions.iter().map(|s| s.sha256).collect();
    let mut answers: HashMap<Digest, bool> = HashMap::new();
    let path = store.cache_dir().join(FILE);
    let read = records(&path, |sha256, filter| {
        if wanted.contains(&sha256) {
            answers.insert(sha256, filter.may_hold(query));
        }
    });
    if read.is_err() {
        answers.clear();
    }
    let mut seen = HashSet::new();
    let missing: Vec<&Folded<'_>> = (sessions.iter())
        .filter(|s| !answers.contains_key(&s.sha256) && seen.insert(s.sha256))
        .collect();
    if !missing.is_empty() {
        answers.extend(build(store, &missing, query, live, read.is_ok()));
    }
    (answers.into_iter())
        .filter(|&(_, may)| !may)
        .map(|(sha256, _)| sha256)
        .collect()
}

/// Build the filters of `missing`, answer `query` with them, and write the file again: the new
/// filters, then the old file's of `live` bytes (when it read whole).
fn build(
    store: &Store,
    missing: &[&Folded<'_>],
    query: &Query,
    live: &HashSet<Digest>,
    keep_old: bool,
) -> HashMap<Digest, bool> {
    let path = store.cache_dir().join(FILE);
    let mut pending = (crate::files::create_private_dir(&store.cache_dir()))
        .and_then(|()| crate::files::create_private_dir(&store.tmp_dir()))
        .and_then(|()| Pending::new_in(&store.tmp_dir(), ".grep-filters-"))
        .ok();
    let (answers, written) = {
        let writer = Mutex::new(pending.as_mut().and_then(|p| start(p.file()).ok()));
        let answers: HashMap<Digest, bool> = missing
            .par_iter()
            .map_init(
                || (Builder::default(), Texts::default()),
                |(builder, texts), session| {
                    let filter = filter_of(store, session, builder, texts)?;
                    let mut writer = writer.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(out) = writer.as_mut()
                        && write_record(out, &session.sha256, &filter).is_err()
                    {
                        *writer = None;
                    }
                    Some((session.sha256, filter.may_hold(query)))
                },
            )
            .flatten()
            .collect();
        let written = writer
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .and_then(|mut out| {
                let mut copied = Ok(());
                if keep_old {
                    copied = records(&path, |sha256, filter| {
                        if copied.is_ok()
                            && live.contains(&sha256)
                            && !answers.contains_key(&sha256)
                        {
                            copied = write_record(&mut out, &sha256, &filter);
                        }
                    })
                    .and(copied);
                }
                copied.and_then(|()| out.finish()).ok()
            })
            .is_some();
        (answers, written)
    };
    if let (true, Some(pending)) = (written, pending) {
        // A cache: a search that cannot keep its filters still answers.
        let _ = pending.replace_unsynced(&path);
    }
    answers
}

/// The filter of one session's text, read whole; `None` when it cannot be read, or its bytes
/// are no longer those the search was given.
fn filter_of(
    store: &Store,
    session: &Folded<'_>,
    builder: &mut Builder,
    texts: &mut Texts,
) -> Option<Filter> {
    let manifest = store.load_manifest(session.id).ok()?;
    if manifest.source.sha256 != session.sha256 {
        return None;
    }
    let source = StoreSource {
        store,
        manifest: &manifest,
    };
    let mut reader = source.open().ok()?;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            break;
        }
        texts.decode(trim_end(&line));
        for value in &texts.values {
            builder.add(&texts.text[value.text.clone()]);
        }
    }
    Some(builder.finish())
}

type Writer<'a> = zstd::stream::write::Encoder<'static, &'a mut File>;

fn start(file: &mut File) -> io::Result<Writer<'_>> {
    file.write_all(MAGIC)?;
    let mut encoder = zstd::stream::write::Encoder::new(file, LEVEL)?;
    encoder.include_checksum(true)?;
    Ok(encoder)
}

fn write_record(out: &mut impl Write, sha256: &Digest, filter: &Filter) -> io::Result<()> {
    out.write_all(sha256.as_bytes())?;
    out.write_all(&[filter.log2()])?;
    out.write_all(&filter.to_bytes())
}

/// Each record of the file at `path`, in order; an error when it is missing, not a filters file,
/// or damaged anywhere (records handed out before the damage was found included).
fn records(path: &std::path::Path, mut each: impl FnMut(Digest, Filter)) -> io::Result<()> {
    let mut file = BufReader::new(File::open(path)?);
    let mut magic = [0; MAGIC.len()];
    file.read_exact(&mut magic)?;
    if magic != MAGIC {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a filters file",
        ));
    }
    let mut decoder = zstd::stream::read::Decoder::with_buffer(file)?;
    let mut head = [0; 33];
    let mut map = Vec::new();
    loop {
        match read_full(&mut decoder, &mut head)? {
            0 => return Ok(()),
            33 => {}
            _ => return Err(io::ErrorKind::UnexpectedEof.into()),
        }
        let log2 = head[32];
        let len = Filter::byte_len(log2)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "a map of no size"))?;
        map.resize(len, 0);
        decoder.read_exact(&mut map)?;
        let sha256 = Digest::from_bytes(head[..32].try_into().expect("32 bytes"));
        each(sha256, Filter::from_bytes(log2, &map).expect("sized"));
    }
}

/// Read until `buf` is full or the end: the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut at = 0;
    while at < buf.len() {
        match reader.read(&mut buf[at..]) {
            Ok(0) => break,
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(at)
}
