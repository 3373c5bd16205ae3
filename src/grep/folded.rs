//! A folded session's lines, told from what its objects hold ([`objects`]) without reading them
//! again: a line inside one residual object was searched when the object was read; a line made
//! of several pieces (a field, the end of one residual object and the start of the next) is told
//! from its pieces when none of them may hold a match but its fields, whose matching text lines
//! add up as the line's would (see [`count_values`]), and is read whole, reassembled from its
//! pieces, only when one may: where its residual bytes hold a literal of the pattern or an escape,
//! the bytes across a cut between two residual objects included, so that a match that straddles
//! two parts is found as any other. Fields without a match are read as the empty string there.
//! A line read whole is remembered by the pieces it is made of: forks and resumes repeat lines.
//!
//! Memory is bounded: what is remembered stops growing at a fixed number of lines and objects
//! (past it, lines are read again), and the objects kept for the next line are a few megabytes
//! per thread.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use foldhash::fast::RandomState;

use super::matches::{count_values, value_lines};
use super::objects::{Field, Known, Objects, Residual};
use super::pattern::Pattern;
use super::prefilter::Prefilter;
use super::strings::{Texts, opaque_at};
use super::{Found, Limits};
use crate::digest::Digest;
use crate::error::Result;
use crate::odb::Check;
use crate::store::Store;
use crate::store::manifest::{Manifest, ObjectRef, PartKind};

/// Lines remembered at most (24 bytes each, and the table's slack: under 48 MiB).
const MAX_LINES: usize = 1 << 20;
/// Decoded objects kept per thread for the lines read whole that follow, in bytes.
const KEPT_BYTES: usize = 2 << 20;

/// What the threads of one search share: what each object holds, and the lines read whole.
#[derive(Default)]
pub struct Memo {
    pub objects: Objects,
    lines: Mutex<HashMap<[u64; 2], u32, RandomState>>,
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

/// A piece of a line: a field, or a segment of a residual object.
struct Piece {
    object: ObjectRef,
    what: What,
}

enum What {
    /// A field under an opaque key (encrypted content, a base64 image): never read, the line
    /// reads it as the empty string.
    Blank,
    Field(Arc<Field>),
    /// Segment `.1` of a residual object (see [`Residual`]).
    Segment(Arc<Residual>, u32),
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
            if u32::try_from(object.raw_bytes).is_err() {
                // Larger than any part fold writes.
                return Err(crate::error::Error::corrupt(format!(
                    "session {}: a part of {} bytes",
                    self.manifest.session.id, object.raw_bytes
                )));
            }
            if object.raw_bytes == 0 {
                continue;
            }
            let residual = match part.kind {
                PartKind::Field if part.json_path.as_deref().is_some_and(opaque_at) => {
                    state.pieces.push(Piece {
                        object,
                        what: What::Blank,
                    });
                    continue;
                }
                PartKind::Field => {
                    let Known::Field(field) = self.known(&object, part.kind, kept, &mut state)?
                    else {
                        unreachable!("a field is known as one")
                    };
                    state.pieces.push(Piece {
                        object,
                        what: What::Field(field),
                    });
                    continue;
                }
                PartKind::Residual => match self.known(&object, part.kind, kept, &mut state)? {
                    Known::Residual(residual) => residual,
                    Known::Field(_) => unreachable!("a residual object is known as one"),
                },
            };
            for j in 0..residual.newlines {
                state.pieces.push(Piece {
                    object,
                    what: What::Segment(residual.clone(), j),
                });
                if self.line_done(&mut state, kept)? {
                    return Ok(state.found);
                }
            }
            if residual.last_start < residual.len {
                state.pieces.push(Piece {
                    object,
                    what: What::Segment(residual.clone(), residual.newlines),
                });
            }
        }
        if !state.pieces.is_empty() {
            self.line_done(&mut state, kept)?;
        }
        Ok(state.found)
    }

    /// What `object` holds: from the memo, else read now.
    fn known(
        &self,
        object: &ObjectRef,
        kind: PartKind,
        kept: &mut Kept,
        state: &mut State,
    ) -> Result<Known> {
        let key = (object.sha256, kind == PartKind::Field);
        let objects = &self.memo.objects;
        if let Some(known) = objects.get(self.store, &key, self.pattern, &mut state.texts) {
            return Ok(known);
        }
        let bytes = kept.get(self.store, object)?;
        let known = objects.know(kind, &bytes, self.pattern, &mut state.texts);
        self.memo.objects.insert(key, known.clone());
        Ok(known)
    }

    /// Count the line `state.pieces` make; true when the session needs no more searching.
    fn line_done(&self, state: &mut State, kept: &mut Kept) -> Result<bool> {
        state.number += 1;
        let matching = match state.pieces.as_slice() {
            [
                Piece {
                    what: What::Segment(residual, j),
                    ..
                },
            ] => u64::from(residual.count(*j)),
            pieces if may_match(pieces, self.pattern.prefilter.as_ref()) => {
                self.read_whole(state, kept)?
            }
            pieces => count_values(pieces.iter().filter_map(|p| match &p.what {
                What::Field(field) => Some(&field.lines[..]),
                _ => None,
            })),
        };
        state.pieces.clear();
        Ok(state.found.add(state.number, matching, self.limits))
    }

    /// Search the line `state.pieces` make whole (or remember its answer).
    fn read_whole(&self, state: &mut State, kept: &mut Kept) -> Result<u64> {
        let key = key(&state.pieces);
        if let Some(&n) = self.memo.lines.lock().expect("memo").get(&key) {
            return Ok(u64::from(n));
        }
        // A field that is a string of the line's JSON object is read as the empty string, and
        // its matching lines (searched when it was read) put in its place: a line is read whole
        // without reading its fields again. At the line's ends a field is read as written: it
        // decides whether the line is JSON at all.
        state.line.clear();
        let mut fields: Vec<(usize, &Field)> = Vec::new();
        let last = state.pieces.len() - 1;
        for (i, piece) in state.pieces.iter().enumerate() {
            let range = match &piece.what {
                What::Blank => None,
                What::Field(field) if field.string && i != 0 && i != last => {
                    fields.push((state.line.len() + 1, field));
                    None
                }
                What::Field(_) => Some(0..piece.object.raw_bytes as usize),
                What::Segment(residual, j) => match residual.kept(*j) {
                    Some(bytes) => {
                        state.line.extend_from_slice(bytes);
                        continue;
                    }
                    None => Some(residual.range(*j)),
                },
            };
            match range {
                None => state.line.extend_from_slice(b"\"\""),
                Some(range) => {
                    let bytes = kept.get(self.store, &piece.object)?;
                    state.line.extend_from_slice(&bytes[range]);
                }
            }
        }
        let texts = &mut state.texts;
        texts.decode(trim_end(&state.line));
        let found = value_lines(&self.pattern.regex, texts);
        let mut at = 0;
        let values = texts.values.iter().enumerate().map(|(i, value)| {
            let field = (fields.iter()).find(|(start, _)| value.raw == (*start..*start));
            if let Some((_, field)) = field {
                return &field.lines[..];
            }
            let from = at;
            while found.get(at).is_some_and(|&(v, _)| v as usize == i) {
                at += 1;
            }
            &found[from..at]
        });
        let n = count_values(values);
        let mut memo = self.memo.lines.lock().expect("memo");
        if memo.len() < MAX_LINES {
            memo.insert(key, n.try_into().unwrap_or(u32::MAX));
        }
        Ok(n)
    }
}

/// Whether a line of several pieces may hold a match elsewhere than in its fields, or may not be a
/// JSON object or array whose strings its fields are: then it is read whole.
fn may_match(pieces: &[Piece], prefilter: Option<&Prefilter>) -> bool {
    let Some(prefilter) = prefilter else {
        return true;
    };
    let starts_json = match pieces.first().map(|p| &p.what) {
        // A line's first piece is a residual object's last segment, or the whole object.
        Some(What::Segment(residual, j)) => {
            *j == residual.newlines && matches!(residual.last_first, Some(b'{' | b'['))
        }
        _ => false,
    };
    let ends_json = match pieces.last().map(|p| &p.what) {
        Some(What::Segment(residual, 0)) => matches!(residual.first_last, Some(b'}' | b']')),
        _ => false,
    };
    if !starts_json || !ends_json {
        return true;
    }
    let longest = prefilter.longest();
    // The last bytes of the residual pieces since the last field, for a hit across a cut.
    let mut edge: Vec<u8> = Vec::new();
    let mut after_residual = false;
    for piece in pieces {
        let (residual, j) = match &piece.what {
            What::Segment(residual, j) => (residual, *j),
            What::Field(field) if !field.string => return true,
            What::Field(_) | What::Blank => {
                after_residual = false;
                continue;
            }
        };
        if residual.is_flagged(j) {
            return true;
        }
        let range = residual.range(j);
        if !after_residual {
            edge.clear();
        } else {
            // This piece starts its object: its first bytes follow the edge.
            let mut window = edge.clone();
            window.extend_from_slice(&residual.head[..residual.head.len().min(range.end)]);
            if prefilter.may_match(&window) {
                return true;
            }
        }
        if range.end == residual.len as usize {
            // The piece's last bytes (all of it when it is shorter than the edge).
            let tail_start = residual.len as usize - residual.tail.len();
            edge.extend_from_slice(&residual.tail[range.start.saturating_sub(tail_start)..]);
            if edge.len() > longest {
                edge.drain(..edge.len() - longest);
            }
        }
        after_residual = true;
    }
    false
}

struct State {
    found: Found,
    pieces: Vec<Piece>,
    line: Vec<u8>,
    texts: Texts,
    number: u64,
}

/// A line's name: the objects and segments it is made of (the same pieces are the same bytes).
fn key(pieces: &[Piece]) -> [u64; 2] {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for piece in pieces {
        hasher.update(piece.object.sha256.as_bytes());
        let segment = match &piece.what {
            What::Segment(_, j) => *j,
            What::Field(_) | What::Blank => u32::MAX,
        };
        hasher.update(&segment.to_le_bytes());
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
