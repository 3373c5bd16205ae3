//! What each stored object holds for a search, read once: a field (one JSON string as written)
//! searched alone, and a residual object's lines searched where the bytes written may hold a match
//! (a literal every match starts or ends with, or an escape, found by one pass over the object),
//! each such line read as a line alone, with what a line that goes on into the next object needs
//! to be told without reading again: the bytes at its two ends, and how its lines start and end.
//!
//! [`Objects`] decodes each pack block a search needs once, when a session first needs one of its
//! objects, and searches then every object of it that any session needs; an object it does not
//! read so (loose, the reference's, in a block too large to hold or that fails) is read alone.
//!
//! Not for: telling which sessions match (`folded` puts objects' answers together line by line).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use foldhash::fast::RandomState;

use super::matches::{count, value_lines};
use super::pattern::Pattern;
use super::strings::{Texts, opaque_at};
use crate::digest::Digest;
use crate::odb::Member;
use crate::odb::pack::Location;
use crate::store::Store;
use crate::store::manifest::{Manifest, PartKind};

/// Bytes of residual objects' first and last segments kept at most, and the longest segment kept.
const KEPT_BYTES: usize = 8 << 20;
const KEPT_SEGMENT: usize = 4 << 10;

/// Objects whose answers are kept at most (a residual object's take some 100 bytes, with its
/// matching lines: a store past this many objects is read again where a session needs one).
const MAX_OBJECTS: usize = 1 << 20;

/// An object as a search sees it.
#[derive(Clone)]
pub enum Known {
    Residual(Arc<Residual>),
    Field(Arc<Field>),
}

/// A residual object's lines. Its segment `j` is the bytes after its `j`-th `\n` (the first for
/// `j` = 0) up to and with the next `\n` (to its end for the last).
#[derive(Debug, Default)]
pub struct Residual {
    pub len: u32,
    /// Its `\n`s: segments `0..newlines` end a line, segment `newlines` goes on into what follows
    /// (and is empty when the object ends with a `\n`).
    pub newlines: u32,
    /// Where segment 0 ends (past its `\n`; `len` when there is none).
    pub first_end: u32,
    /// Where the last segment starts.
    pub last_start: u32,
    /// The segments that may hold a match, each with how many of its text lines match when it
    /// is read as a line alone, by segment.
    pub flagged: Box<[(u32, u32)]>,
    /// Its first and last bytes, as many as a hit of the pattern's literals spans.
    pub head: Box<[u8]>,
    pub tail: Box<[u8]>,
    /// The last segment's first byte, and segment 0's last byte but blanks: whether a line that
    /// starts or ends here is a JSON object or array.
    pub last_first: Option<u8>,
    pub first_last: Option<u8>,
    /// Segment 0's bytes and the last segment's, when they are short (a line's pieces around its
    /// fields mostly are): a line read whole needs them, and the block they were in is decoded
    /// then no more.
    pub first: Option<Box<[u8]>>,
    pub last: Option<Box<[u8]>>,
}

impl Residual {
    /// Matching text lines of segment `j` read as a line alone.
    pub fn count(&self, j: u32) -> u32 {
        match self.flagged.binary_search_by_key(&j, |&(s, _)| s) {
            Ok(i) => self.flagged[i].1,
            Err(_) => 0,
        }
    }

    pub fn is_flagged(&self, j: u32) -> bool {
        self.flagged.binary_search_by_key(&j, |&(s, _)| s).is_ok()
    }

    /// Segment `j`'s bytes in the object, for `j` 0 or the last.
    /// Segment `j`'s bytes, for `j` 0 or the last, when they were kept.
    pub fn kept(&self, j: u32) -> Option<&[u8]> {
        match j {
            0 => self.first.as_deref(),
            _ => self.last.as_deref(),
        }
    }

    pub fn range(&self, j: u32) -> std::ops::Range<usize> {
        let start = if j == 0 { 0 } else { self.last_start };
        let end = if j == 0 { self.first_end } else { self.len };
        start as usize..end as usize
    }
}

/// A field (one JSON string as written, quotes and all).
#[derive(Debug, Default)]
pub struct Field {
    /// Whether it is one JSON string token, as fold writes them (anything else is read only as
    /// part of its line).
    pub string: bool,
    /// Its values' text lines that hold a match (see [`value_lines`]); empty when none does.
    pub lines: Box<[(u32, u128)]>,
}

/// An object's name and whether it is searched as a field.
pub type Key = (Digest, bool);

/// Objects' answers, and the pack blocks that hold the objects a search needs: when a session
/// needs an object of a block, the block is decoded once and every object of it that any session
/// needs is searched then (sessions that share objects share blocks), and no block is decoded for
/// a session that needs no more (`-l`).
#[derive(Default)]
pub struct Objects {
    known: Mutex<HashMap<Key, Known, RandomState>>,
    /// Bytes of segments kept so far (see [`Residual::first`]).
    kept: AtomicUsize,
    blocks: Vec<Planned>,
    /// Which of `blocks` holds each object.
    block_of: HashMap<Key, usize, RandomState>,
}

/// A block, the objects wanted of it, and whether it was searched.
struct Planned {
    member: Arc<Member>,
    number: u32,
    /// Taken when it is searched.
    wanted: Mutex<Vec<(Key, Location)>>,
    searched: OnceLock<()>,
}

impl Objects {
    /// What the parts of `manifests` need (fields under opaque keys are never read), by block.
    /// An object no pack holds, or whose index says another size, is not planned: it is read
    /// alone when a session needs it (and its error, if any, told then).
    pub fn plan(store: &Store, manifests: &[&Manifest]) -> Self {
        let mut block_of: HashMap<Key, usize, RandomState> = HashMap::default();
        let mut index: HashMap<(Digest, u32), usize, RandomState> = HashMap::default();
        let mut blocks: Vec<Planned> = Vec::new();
        for manifest in manifests {
            for part in &manifest.parts {
                let object = &part.object;
                let opaque = part.kind == PartKind::Field
                    && part.json_path.as_deref().is_some_and(opaque_at);
                if opaque || object.raw_bytes == 0 || object.raw_bytes > u64::from(u32::MAX) {
                    continue;
                }
                let key = (object.sha256, part.kind == PartKind::Field);
                if block_of.contains_key(&key) {
                    continue;
                }
                if let Ok(Some((member, at))) = store.odb().packed(&object.sha256)
                    && at.raw_bytes == object.raw_bytes
                {
                    let i = *index
                        .entry((*member.pack.name(), at.block))
                        .or_insert_with(|| {
                            blocks.push(Planned {
                                member,
                                number: at.block,
                                wanted: Mutex::default(),
                                searched: OnceLock::new(),
                            });
                            blocks.len() - 1
                        });
                    blocks[i]
                        .wanted
                        .get_mut()
                        .expect("not shared yet")
                        .push((key, at));
                    block_of.insert(key, i);
                }
            }
        }
        Self {
            known: Mutex::default(),
            kept: AtomicUsize::new(0),
            blocks,
            block_of,
        }
    }

    /// What the object `key` holds, its block searched now if it was not yet; `None` when it is
    /// not in a planned block, or its block could not be searched.
    pub fn get(
        &self,
        store: &Store,
        key: &Key,
        pattern: &Pattern,
        texts: &mut Texts,
    ) -> Option<Known> {
        if let Some(known) = self.lock().get(key) {
            return Some(known.clone());
        }
        let planned = &self.blocks[*self.block_of.get(key)?];
        planned.searched.get_or_init(|| {
            let found = search_block(store, planned, pattern, texts, &self.kept);
            let mut known = self.lock();
            for (key, answer) in found {
                if known.len() < MAX_OBJECTS {
                    known.insert(key, answer);
                }
            }
        });
        self.lock().get(key).cloned()
    }

    /// Remember what an object read alone holds.
    pub fn insert(&self, key: Key, answer: Known) {
        let mut known = self.lock();
        if known.len() < MAX_OBJECTS {
            known.insert(key, answer);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Known, RandomState>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Objects {
    /// What `bytes` holds, as an object of `kind`.
    pub fn know(
        &self,
        kind: PartKind,
        bytes: &[u8],
        pattern: &Pattern,
        texts: &mut Texts,
    ) -> Known {
        know(kind, bytes, pattern, texts, &self.kept)
    }
}

fn know(
    kind: PartKind,
    bytes: &[u8],
    pattern: &Pattern,
    texts: &mut Texts,
    kept: &AtomicUsize,
) -> Known {
    match kind {
        PartKind::Field => {
            let field = field(bytes, pattern, texts);
            // Most fields hold no match: they share one answer.
            static NONE: OnceLock<Arc<Field>> = OnceLock::new();
            if field.string && field.lines.is_empty() {
                let none = NONE.get_or_init(|| {
                    Arc::new(Field {
                        string: true,
                        lines: Box::default(),
                    })
                });
                return Known::Field(none.clone());
            }
            Known::Field(Arc::new(field))
        }
        PartKind::Residual => {
            let mut residual = residual(bytes, pattern, texts);
            let keep = |range: std::ops::Range<usize>| -> Option<Box<[u8]>> {
                let len = range.len();
                let room = len <= KEPT_SEGMENT
                    && kept.fetch_add(len, Ordering::Relaxed) + len <= KEPT_BYTES;
                room.then(|| bytes[range].into())
            };
            residual.first = keep(residual.range(0));
            if residual.newlines > 0 && residual.last_start < residual.len {
                residual.last = keep(residual.range(residual.newlines));
            }
            Known::Residual(Arc::new(residual))
        }
    }
}

fn field(token: &[u8], pattern: &Pattern, texts: &mut Texts) -> Field {
    let string = token.len() >= 2
        && token[0] == b'"'
        && super::strings::closing_quote(token, 1) == token.len() - 1;
    if (pattern.prefilter.as_ref()).is_some_and(|pre| !pre.may_match(token)) {
        return Field {
            string,
            lines: Box::default(),
        };
    }
    let mut line = Vec::with_capacity(token.len() + 2);
    line.push(b'[');
    line.extend_from_slice(token);
    line.push(b']');
    texts.decode(&line);
    Field {
        string,
        lines: value_lines(&pattern.regex, texts).into(),
    }
}

fn residual(bytes: &[u8], pattern: &Pattern, texts: &mut Texts) -> Residual {
    let ends: Vec<u32> = memchr::memchr_iter(b'\n', bytes)
        .map(|i| i as u32)
        .collect();
    let len = bytes.len() as u32;
    let newlines = ends.len() as u32;
    let segment = |j: usize| -> std::ops::Range<usize> {
        let start = if j == 0 { 0 } else { ends[j - 1] as usize + 1 };
        let end = ends.get(j).map_or(bytes.len(), |&e| e as usize + 1);
        start..end
    };
    let mut flagged = Vec::new();
    let mut count_segment = |j: usize| {
        let range = segment(j);
        let n = count(
            pattern,
            texts,
            super::folded::trim_end(&bytes[range.clone()]),
        );
        flagged.push((j as u32, n.try_into().unwrap_or(u32::MAX)));
        range.end
    };
    let edge = match &pattern.prefilter {
        Some(pre) => {
            let mut at = 0;
            while at < bytes.len()
                && let Some(hit) = pre.next_hit(bytes, at)
            {
                let j = ends.partition_point(|&e| (e as usize) < hit.start);
                at = count_segment(j);
            }
            pre.longest()
        }
        None => {
            for j in 0..=ends.len() {
                if !segment(j).is_empty() {
                    count_segment(j);
                }
            }
            0
        }
    };
    let first = segment(0);
    let last = segment(ends.len());
    let edge = edge.min(bytes.len());
    Residual {
        len,
        newlines,
        first_end: first.end as u32,
        last_start: last.start as u32,
        flagged: flagged.into(),
        head: bytes[..edge].into(),
        tail: bytes[bytes.len() - edge..].into(),
        last_first: bytes.get(last.start).copied(),
        first_last: bytes[first].trim_ascii().last().copied(),
        first: None,
        last: None,
    }
}

/// The objects a block holds that a search wants, the block decoded once; none when it does not
/// decode whole (each is then read alone, and its error told).
fn search_block(
    store: &Store,
    planned: &Planned,
    pattern: &Pattern,
    texts: &mut Texts,
    kept: &AtomicUsize,
) -> Vec<(Key, Known)> {
    let pack = &planned.member.pack;
    let Ok(block) = pack.block(planned.number) else {
        return Vec::new();
    };
    let Ok(Some(raw)) = pack.whole_block(&block, store.odb()) else {
        return Vec::new();
    };
    let mut wanted = std::mem::take(&mut *planned.wanted.lock().unwrap_or_else(|e| e.into_inner()));
    wanted.sort_unstable_by_key(|(_, at)| at.offset);
    wanted
        .into_iter()
        .filter_map(|(key, at)| {
            let range = pack.range_in(&at, &block).ok()?;
            let kind = if key.1 {
                PartKind::Field
            } else {
                PartKind::Residual
            };
            Some((key, know(kind, &raw[range], pattern, texts, kept)))
        })
        .collect()
}
