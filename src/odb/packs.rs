//! A store's ctxfold packs as one set: listed and opened on first use, searched in turn, refreshed
//! when an object that should be there is not (another process may have packed it since), and
//! touched when a writer reuses one of their objects.
//!
//! A pack that does not open (a damaged index, a truncated file) is left out and remembered, so one
//! bad pack never stops the others from being read; fsck reports it. Not for writing packs or
//! deciding what goes in them: see [`super::pack`] and the object database.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use super::pack::{self, BlockCache, DEFAULT_CACHE_BYTES, Location, Pack};
use crate::digest::Digest;
use crate::error::{IoContext, Result};

/// One open pack, whether this handle has refreshed its mtime yet, and whether this handle
/// wrote it (see [`PackSet::add`]).
pub struct Member {
    pub pack: Pack,
    touched: AtomicBool,
    written: AtomicBool,
}

impl Member {
    /// Refresh the pack's mtime once per handle: gc's grace period for a pack's unreferenced
    /// objects counts from the last time a writer reused one of them.
    pub fn touch(&self) {
        if !self.touched.swap(true, Ordering::Relaxed)
            && let Ok(file) = std::fs::File::options().write(true).open(self.pack.path())
        {
            // Best effort, as for loose objects: a pack we cannot touch is still a valid pack.
            let _ = file.set_modified(SystemTime::now());
        }
    }

    /// The pack file's mtime (see [`Member::touch`]).
    pub fn modified(&self) -> Result<SystemTime> {
        let path = self.pack.path();
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .with_path("stat", path)
    }
}

#[derive(Default)]
struct State {
    loaded: bool,
    members: Vec<Arc<Member>>,
    /// Packs that did not open, with why.
    broken: Vec<(Digest, String)>,
}

pub(super) struct PackSet {
    dir: PathBuf,
    cache: Arc<BlockCache>,
    state: RwLock<State>,
    /// Sees no pack, ever (a view of the loose objects alone).
    blind: bool,
    /// Where [`PackSet::find`] last found an object, to look first.
    last_found: AtomicUsize,
}

impl PackSet {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            cache: Arc::new(BlockCache::new(DEFAULT_CACHE_BYTES)),
            state: RwLock::default(),
            blind: false,
            last_found: AtomicUsize::new(0),
        }
    }

    /// A set that holds no pack and never looks for one.
    pub fn blind(dir: PathBuf) -> Self {
        Self {
            blind: true,
            ..Self::new(dir)
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keep at most `bytes` of decoded blocks (see [`super::Odb::set_block_cache`]).
    pub fn set_block_cache(&self, bytes: usize) {
        self.cache.set_budget(bytes);
    }

    /// Every pack that opened.
    pub fn members(&self) -> Result<Vec<Arc<Member>>> {
        self.load()?;
        Ok(self.read_state().members.clone())
    }

    /// The packs that did not open, with why.
    pub fn broken(&self) -> Result<Vec<(Digest, String)>> {
        self.load()?;
        Ok(self.read_state().broken.clone())
    }

    /// The pack holding `digest`, and where, among the packs open now.
    pub fn find(&self, digest: &Digest) -> Result<Option<(Arc<Member>, Location)>> {
        self.search(digest, false)
    }

    /// [`find`](Self::find) among the packs this handle did not write: what a writer that
    /// remembers every object it packed still has to look for.
    pub fn find_not_written(&self, digest: &Digest) -> Result<Option<(Arc<Member>, Location)>> {
        self.search(digest, true)
    }

    fn search(
        &self,
        digest: &Digest,
        pass_written: bool,
    ) -> Result<Option<(Arc<Member>, Location)>> {
        self.load()?;
        let state = self.read_state();
        let members = &state.members;
        // A session's objects sit together: the pack that held the last one likely holds this.
        let hint = self.last_found.load(Ordering::Relaxed);
        let found = std::iter::once(hint)
            .filter(|&at| at < members.len())
            .chain((0..members.len()).filter(|&at| at != hint))
            .filter(|&at| !(pass_written && members[at].written.load(Ordering::Relaxed)))
            .find_map(|at| members[at].pack.find(digest).map(|location| (at, location)));
        Ok(found.map(|(at, location)| {
            self.last_found.store(at, Ordering::Relaxed);
            (members[at].clone(), location)
        }))
    }

    /// Look at the folder again: open packs that appeared, drop packs that are gone. Returns
    /// whether anything changed.
    pub fn refresh(&self) -> Result<bool> {
        let names = match self.blind {
            true => Vec::new(),
            false => pack::list(&self.dir)?,
        };
        let mut state = self.write_state();
        let before = state.members.len() + state.broken.len();
        state.members.retain(|m| names.contains(m.pack.name()));
        state.broken.retain(|(name, _)| names.contains(name));
        let kept = state.members.len() + state.broken.len();
        for name in &names {
            let known = state.members.iter().any(|m| m.pack.name() == name)
                || state.broken.iter().any(|(n, _)| n == name);
            if !known {
                self.open_into(&mut state, name);
            }
        }
        state.loaded = true;
        Ok(kept != before || state.members.len() + state.broken.len() != kept)
    }

    /// Add a pack this process has just put in place, `written` by this handle or taken from
    /// elsewhere.
    pub fn add(&self, name: &Digest, written: bool) -> Result<()> {
        self.load()?;
        let mut state = self.write_state();
        match state.members.iter().find(|m| m.pack.name() == name) {
            // Listed between its rename and now (the first look at the folder, a refresh).
            Some(member) => {
                member.written.fetch_or(written, Ordering::Relaxed);
            }
            None => {
                let pack = Pack::open(&self.dir, name)?.with_cache(self.cache.clone());
                state.members.push(Arc::new(Member {
                    pack,
                    touched: AtomicBool::new(true),
                    written: AtomicBool::new(written),
                }));
            }
        }
        Ok(())
    }

    /// Forget a pack whose files are about to be removed.
    pub fn forget(&self, name: &Digest) {
        let mut state = self.write_state();
        state.members.retain(|m| m.pack.name() != name);
        state.broken.retain(|(n, _)| n != name);
    }

    fn load(&self) -> Result<()> {
        if self.read_state().loaded {
            return Ok(());
        }
        self.refresh().map(|_| ())
    }

    fn open_into(&self, state: &mut State, name: &Digest) {
        match Pack::open(&self.dir, name) {
            Ok(pack) => state.members.push(Arc::new(Member {
                pack: pack.with_cache(self.cache.clone()),
                touched: AtomicBool::new(false),
                written: AtomicBool::new(false),
            })),
            Err(e) => state.broken.push((*name, e.to_string())),
        }
    }

    fn read_state(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_state(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for PackSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackSet({})", self.dir.display())
    }
}
