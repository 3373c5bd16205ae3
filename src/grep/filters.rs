//! Each folded session's n-gram filter ([`ngrams`]), kept by the sha256 of its bytes in
//! `<store>/cache/grep-filters`, so that a search reads only the sessions that may hold a match.
//! The same bytes always hold the same text: an entry is never stale, only unused once no session
//! has those bytes. A search builds the filters its sessions lack (reading each such session
//! whole once) and writes the file again with them.
//!
//! A cache, never a record: not mirrored, not needed by any other command. The file is
//! `ctxfold grep filters v2\n` then one zstd frame with its checksum, of records `<sha256: 32
//! bytes> <log2 of the map's bits: 1 byte> <the map>`; its version changes with what a filter
//! holds (the n-grams, their bits, what a search reads as text: see `strings`). A file that is
//! missing, damaged or truncated anywhere (the frame's checksum is checked before any of its
//! answers is used) only means the filters are built again. It is replaced whole (a temp file
//! with no name until it is renamed into place, so that a search killed while it builds leaves
//! nothing behind), so two searches at once each leave a whole file (the last one's).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::Mutex;

use rayon::prelude::*;

use super::folded::trim_end;
use super::ngrams::{Builder, Filter, Query};
use super::strings::Texts;
use crate::digest::Digest;
use crate::files::atomic::Pending;
use crate::ledger::{Source, StoreSource};
use crate::store::Store;
use crate::store::by_block::{self, Buffer};
use crate::store::manifest::Manifest;

const FILE: &str = "grep-filters";
const MAGIC: &[u8] = b"ctxfold grep filters v2\n";
const LEVEL: i32 = 3;

/// The bytes of sessions written into memory at once to build their filters.
const BATCH_BYTES: u64 = 32 << 20;

/// A session a search reads from the store: its id, the sha256 of its bytes, and their number.
pub struct Folded<'a> {
    pub id: &'a str,
    pub sha256: Digest,
    pub bytes: u64,
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
        .and_then(|()| Pending::unnamed_in(&store.tmp_dir(), ".grep-filters-"))
        .ok();
    let (answers, written) = {
        let writer = Mutex::new(pending.as_mut().and_then(|p| start(p.file()).ok()));
        let keep = |sha256: Digest, filter: Filter| {
            let mut writer = writer.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(out) = writer.as_mut()
                && write_record(out, &sha256, &filter).is_err()
            {
                *writer = None;
            }
            (sha256, filter.may_hold(query))
        };
        let mut answers = HashMap::new();
        // A batch decodes each block it needs once: a cache of blocks only adds to the peak
        // (16 MiB of them took it to 131 MiB on bench/run's store, for 0.1 s).
        store
            .odb()
            .set_block_cache(crate::odb::pack::AGGRESSIVE_BLOCK_BYTES);
        let most = crate::test_sizes::size("CTXFOLD_TEST_GREP_BATCH_BYTES", BATCH_BYTES);
        for batch in batches(missing, most) {
            answers.extend(build_batch(store, batch, most, &keep));
        }
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

/// `missing` in runs of sessions that add up to `most` bytes at most, in order; a larger session
/// alone.
fn batches<'a, 'b>(missing: &'a [&'b Folded<'b>], most: u64) -> Vec<&'a [&'b Folded<'b>]> {
    let mut out = Vec::new();
    let (mut from, mut bytes) = (0, 0);
    for (i, session) in missing.iter().enumerate() {
        if i > from && bytes + session.bytes > most {
            out.push(&missing[from..i]);
            (from, bytes) = (i, 0);
        }
        bytes += session.bytes;
    }
    if from < missing.len() {
        out.push(&missing[from..]);
    }
    out
}

/// The filters of one batch, each handed to `keep` (whose answers are returned). A batch's
/// sessions are written into memory together, each pack block they need decoded once for all
/// of them (forks share most of theirs), and read back line by line; a session larger than a
/// batch is streamed alone. A session that cannot be read (or whose bytes are no longer those
/// the search was given: its manifest is read again here) gets no filter.
fn build_batch(
    store: &Store,
    batch: &[&Folded<'_>],
    most: u64,
    keep: &(dyn Fn(Digest, Filter) -> (Digest, bool) + Sync),
) -> Vec<(Digest, bool)> {
    let manifests: Vec<Option<Manifest>> = batch
        .par_iter()
        .map(|session| {
            let manifest = store.load_manifest(session.id).ok()?;
            let source = &manifest.source;
            (source.sha256 == session.sha256 && source.bytes == session.bytes).then_some(manifest)
        })
        .collect();
    let held: Vec<&Manifest> = manifests.iter().flatten().collect();
    if let [manifest] = held[..]
        && manifest.source.bytes > most
    {
        let source = StoreSource { store, manifest };
        let mut builder = Builder::default();
        let filter = source
            .open()
            .ok()
            .and_then(|reader| add_lines(reader, &mut builder, &mut Texts::default()));
        return filter
            .map(|()| keep(manifest.source.sha256, builder.finish()))
            .into_iter()
            .collect();
    }
    let buffers: Vec<Buffer> = (held.iter())
        .map(|m| Buffer::new(m.source.bytes as usize))
        .collect();
    let target = std::path::Path::new("");
    let sessions: Vec<by_block::Session<'_>> = (held.iter().zip(&buffers))
        .map(|(manifest, file)| by_block::Session {
            manifest,
            file,
            target,
        })
        .collect();
    let written = by_block::write_sessions(store, &sessions);
    drop(sessions);
    (held.into_par_iter().zip(buffers).zip(written))
        .filter_map(|((manifest, buffer), written)| written.ok().map(|()| (manifest, buffer)))
        .map_init(
            || (Builder::default(), Texts::default()),
            |(builder, texts), (manifest, buffer)| {
                let bytes = buffer.into_inner();
                for line in bytes.split_inclusive(|&b| b == b'\n') {
                    add_line(line, builder, texts);
                }
                keep(manifest.source.sha256, builder.finish())
            },
        )
        .collect()
}

/// Add the text of each line `reader` holds (see [`Texts`]); `None` when it cannot be read.
fn add_lines(mut reader: impl BufRead, builder: &mut Builder, texts: &mut Texts) -> Option<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return Some(());
        }
        add_line(&line, builder, texts);
    }
}

fn add_line(line: &[u8], builder: &mut Builder, texts: &mut Texts) {
    texts.decode(trim_end(line));
    for value in &texts.values {
        builder.add(&texts.text[value.text.clone()]);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_the_order_and_their_size_and_hold_a_larger_session_alone() {
        let folded: Vec<Folded<'_>> = [10, 20, 5, 50, 1, 1, 30]
            .iter()
            .map(|&bytes| Folded {
                id: "",
                sha256: Digest::of(&[bytes as u8]),
                bytes,
            })
            .collect();
        let refs: Vec<&Folded<'_>> = folded.iter().collect();
        let sizes: Vec<Vec<u64>> = batches(&refs, 35)
            .iter()
            .map(|b| b.iter().map(|f| f.bytes).collect())
            .collect();
        assert_eq!(sizes, [vec![10, 20, 5], vec![50], vec![1, 1, 30]]);
        assert!(batches(&[], 35).is_empty());
    }
}
