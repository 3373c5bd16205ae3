//! A folded session's lines, told without reading what was read before: each line is named by the
//! pieces of stored objects it is made of (an object, a range of it), and a line made of the same
//! pieces as one searched already, in this session or another (forks and resumes repeat most of
//! their lines, and fold stores them as the same objects), is not read again: its answer is
//! remembered. A field (one JSON string, stored as an object of its own: a tool's output, a
//! system prompt every session repeats) is searched once, alone: one without a match is never read
//! again, its lines read it as the empty string. A residual object is read once to find where its
//! lines end, and again only for a line not yet searched. A line is searched whole, reassembled
//! from its pieces, so a match that straddles two parts is found as any other.
//!
//! Memory is bounded: what is remembered stops growing at a fixed number of lines and objects
//! (past it, lines are read as any unseen line), and the objects kept for the next line are a few
//! megabytes per thread.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use foldhash::fast::RandomState;

use super::matches::count;
use super::pattern::Pattern;
use super::strings::{Texts, opaque_at};
use super::{Found, Limits};
use crate::digest::Digest;
use crate::error::Result;
use crate::odb::Check;
use crate::store::Store;
use crate::store::manifest::{Manifest, ObjectRef, PartKind};

/// Lines remembered at most (24 bytes each, and the table's slack: under 48 MiB).
const MAX_LINES: usize = 1 << 20;
/// Residual objects whose line ends are remembered at most.
const MAX_OBJECTS: usize = 1 << 18;
/// Decoded objects kept per thread for the lines that follow, in bytes.
const KEPT_BYTES: usize = 8 << 20;

/// What the threads of one search share: the lines searched, where objects' lines end, and which
/// fields hold a match.
#[derive(Default)]
pub struct Memo {
    lines: Mutex<HashMap<[u64; 2], u32, RandomState>>,
    ends: Mutex<HashMap<Digest, Arc<[u32]>, RandomState>>,
    fields: Mutex<HashMap<Digest, bool, RandomState>>,
}

/// The objects one thread read last.
#[derive(Default)]
pub struct Kept {
    objects: HashMap<Digest, Arc<Vec<u8>>, RandomState>,
    /// Oldest first.
    order: VecDeque<Digest>,
    bytes: usize,
}

impl Kept {
    fn get(&mut self, store: &Store, object: &ObjectRef) -> Result<Arc<Vec<u8>>> {
        if let Some(bytes) = self.objects.get(&object.sha256) {
            return Ok(bytes.clone());
        }
        let mut bytes = Vec::with_capacity(object.raw_bytes as usize);
        // Checked against its block's frame checksum as it is decoded (a loose object against
        // its name): what is searched is what was stored, without hashing every byte.
        store.odb().read_checked(
            &object.sha256,
            Some(object.raw_bytes),
            &mut bytes,
            Check::Frame,
        )?;
        let bytes = Arc::new(bytes);
        if bytes.len() <= KEPT_BYTES {
            self.bytes += bytes.len();
            self.objects.insert(object.sha256, bytes.clone());
            self.order.push_back(object.sha256);
            while self.bytes > KEPT_BYTES {
                let oldest = self.order.pop_front().expect("bytes are kept");
                let old = self.objects.remove(&oldest).expect("kept in order");
                self.bytes -= old.len();
            }
        }
        Ok(bytes)
    }
}

/// A range of one object, part of a line.
struct Piece {
    object: ObjectRef,
    start: u32,
    end: u32,
    /// A field that holds no match (opaque data, under `encrypted_content` or a base64 image, is
    /// never searched): not read, the line reads it as the empty string.
    blank: bool,
}

/// One folded session searched.
pub struct Walk<'a> {
    pub store: &'a Store,
    pub manifest: &'a Manifest,
    pub pattern: &'a Pattern,
    pub limits: Limits,
    pub memo: &'a Memo,
}

impl Walk<'_> {
    pub fn run(&self, kept: &mut Kept) -> Result<Found> {
        self.store.odb().check_dictionary(&self.manifest.settings)?;
        let mut state = State {
            found: Found::default(),
            pieces: Vec::new(),
            line: Vec::new(),
            texts: Texts::default(),
            number: 0,
        };
        for part in &self.manifest.parts {
            let object = part.object;
            let Ok(len) = u32::try_from(object.raw_bytes) else {
                // Larger than any part fold writes: searched as a line of its own making.
                return Err(crate::error::Error::corrupt(format!(
                    "session {}: a part of {} bytes",
                    self.manifest.session.id, object.raw_bytes
                )));
            };
            if len == 0 {
                continue;
            }
            // A field is one JSON string as written: it holds no line end.
            let ends = match part.kind {
                PartKind::Field => None,
                PartKind::Residual => Some(self.ends(&object, kept)?),
            };
            let blank = part.kind == PartKind::Field
                && (part.json_path.as_deref().is_some_and(opaque_at)
                    || !self.field_matches(&object, kept, &mut state.texts)?);
            let mut from = 0;
            for &end in ends.iter().flat_map(|e| e.iter()) {
                state.pieces.push(Piece {
                    object,
                    start: from,
                    end: end + 1,
                    blank,
                });
                from = end + 1;
                if self.line_done(&mut state, kept)? {
                    return Ok(state.found);
                }
            }
            if from < len {
                state.pieces.push(Piece {
                    object,
                    start: from,
                    end: len,
                    blank,
                });
            }
        }
        if !state.pieces.is_empty() {
            self.line_done(&mut state, kept)?;
        }
        Ok(state.found)
    }

    /// Where `object`'s lines end (its `\n`s).
    fn ends(&self, object: &ObjectRef, kept: &mut Kept) -> Result<Arc<[u32]>> {
        if let Some(ends) = self.memo.ends.lock().expect("memo").get(&object.sha256) {
            return Ok(ends.clone());
        }
        let bytes = kept.get(self.store, object)?;
        let ends: Arc<[u32]> = memchr::memchr_iter(b'\n', &bytes)
            .map(|i| i as u32)
            .collect();
        let mut memo = self.memo.ends.lock().expect("memo");
        if memo.len() < MAX_OBJECTS {
            memo.insert(object.sha256, ends.clone());
        }
        Ok(ends)
    }

    /// Whether the field `object` (a JSON string as written) holds a match.
    fn field_matches(
        &self,
        object: &ObjectRef,
        kept: &mut Kept,
        texts: &mut Texts,
    ) -> Result<bool> {
        if let Some(&known) = self.memo.fields.lock().expect("memo").get(&object.sha256) {
            return Ok(known);
        }
        let token = kept.get(self.store, object)?;
        let mut line = Vec::with_capacity(token.len() + 2);
        line.push(b'[');
        line.extend_from_slice(&token);
        line.push(b']');
        let found = count(self.pattern, texts, &line) > 0;
        let mut memo = self.memo.fields.lock().expect("memo");
        if memo.len() < MAX_OBJECTS {
            memo.insert(object.sha256, found);
        }
        Ok(found)
    }

    /// Search the line `state.pieces` make (or remember its answer); true when the session needs
    /// no more searching.
    fn line_done(&self, state: &mut State, kept: &mut Kept) -> Result<bool> {
        state.number += 1;
        let key = key(&state.pieces);
        let known = self.memo.lines.lock().expect("memo").get(&key).copied();
        let matching = match known {
            Some(n) => u64::from(n),
            None => {
                state.line.clear();
                for piece in &state.pieces {
                    if piece.blank {
                        state.line.extend_from_slice(b"\"\"");
                        continue;
                    }
                    let bytes = kept.get(self.store, &piece.object)?;
                    state
                        .line
                        .extend_from_slice(&bytes[piece.start as usize..piece.end as usize]);
                }
                let text = trim_end(&state.line);
                let n = count(self.pattern, &mut state.texts, text);
                let mut memo = self.memo.lines.lock().expect("memo");
                if memo.len() < MAX_LINES {
                    memo.insert(key, n.try_into().unwrap_or(u32::MAX));
                }
                n
            }
        };
        state.pieces.clear();
        Ok(state.found.add(state.number, matching, self.limits))
    }
}

struct State {
    found: Found,
    pieces: Vec<Piece>,
    line: Vec<u8>,
    texts: Texts,
    number: u64,
}

/// A line's name: the objects and ranges it is made of (the same pieces are the same bytes).
fn key(pieces: &[Piece]) -> [u64; 2] {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for piece in pieces {
        hasher.update(piece.object.sha256.as_bytes());
        hasher.update(&piece.start.to_le_bytes());
        hasher.update(&piece.end.to_le_bytes());
    }
    let hash = hasher.digest128();
    // Two halves: a table of u128 keys pads each entry to 32 bytes.
    [hash as u64, (hash >> 64) as u64]
}

/// A line without its `\n` (and `\r`).
pub fn trim_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}
