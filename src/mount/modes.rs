//! How each open of a mount is read, as the kernel requires the opens of one inode to agree:
//! through the kernel's cache (the daemon answers its reads), passed through to a backing file
//! (the kernel reads and writes it itself, and every such open of the inode shares one backing),
//! or direct (the daemon answers every call, no cache: what may be open beside either).
//!
//! A real file is passed through to itself; a folded session to its decoded copy once it has one
//! ([`super::copies`]), else read through the cache, which makes the copy as it serves the reads.
//!
//! Not for: what a path is (the mount's) or decoding sessions ([`super::session`]).

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use fuser::{BackingId, FopenFlags, INodeNo, InitFlags, KernelConfig, Notifier};

use super::copies::{Copies, Making};
use super::session::{Cache, Opened};
use crate::digest::Digest;
use crate::error::Result;
use crate::store::Store;

#[derive(Default)]
pub struct Modes {
    /// Whether the kernel passes files through (asked for, and granted at init).
    on: AtomicBool,
    /// How the open inodes are read: one lock, so that two opens of an inode at once (the
    /// daemon answers on two threads) cannot choose two ways.
    inodes: Mutex<Inodes>,
    /// How to tell the kernel to drop what it cached of an inode (set once mounted).
    notifier: Arc<OnceLock<Notifier>>,
}

#[derive(Default)]
struct Inodes {
    /// Each passed-through inode's backing, shared by its opens.
    backing: HashMap<u64, Weak<Backing>>,
    /// The folded sessions read through the kernel's cache, by inode: the sha256 of what it
    /// cached, and how many opens of it are open now.
    cached: HashMap<u64, (Option<Digest>, usize)>,
}

/// What an inode is passed through to: a real file, or a session's copy (which becomes the real
/// file when the session is copied up while it is read: see `copy_up`).
pub struct Backing {
    id: BackingId,
    /// Held while passed through: a copy let go stays reachable for a copy-up
    /// ([`Copies::take`]).
    _file: Arc<File>,
    /// The file's device and inode number.
    is: (u64, u64),
}

impl Backing {
    pub fn id(&self) -> &BackingId {
        &self.id
    }
}

/// How an open is read.
pub enum Route {
    Passed(Arc<Backing>),
    /// Through the daemon, with these flags.
    Daemon(FopenFlags),
}

/// How a read open of a folded session is read.
pub enum FoldedOpen {
    Passed(Arc<Backing>),
    /// Through the daemon, with these flags.
    Read(Box<Reading>, FopenFlags),
}

/// A folded session open through the daemon.
pub struct Reading {
    opened: Opened,
    /// The copy its reads are written into, where one is made.
    making: Option<Arc<Making>>,
    /// Whether it is read through the kernel's cache (else direct).
    cached: bool,
}

impl Reading {
    pub fn id(&self) -> &str {
        self.opened.id()
    }

    /// What [`Opened::read_at`] reads, written into the copy being made.
    pub fn read_at(
        &self,
        store: &Store,
        cache: &Cache,
        copies: &Copies,
        offset: u64,
        len: u32,
    ) -> Result<Vec<u8>> {
        let bytes = self.opened.read_at(store, cache, offset, len)?;
        if let Some(making) = &self.making {
            copies.served(making, offset, &bytes);
        }
        Ok(bytes)
    }
}

impl Modes {
    /// Ask the kernel for passthrough at init, where `wants` it.
    pub fn init(&self, config: &mut KernelConfig, wants: bool) {
        let on = wants
            && config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
            && config.set_max_stack_depth(1).is_ok();
        self.on.store(on, Ordering::Relaxed);
    }

    fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// How an open of `ino` is read: passed through to `file` (registered with the kernel by
    /// `open` for the inode's first such open) where it can be, or to what its other opens are
    /// passed through to where no file is given (a folded session whose copy was let go); else
    /// through the daemon: where passthrough is off (or the kernel refused `open`: off for good,
    /// said once) or the inode is open through the cache now (the kernel refuses to mix the two).
    /// An inode passed through to another file (replaced while open) is answered direct, which
    /// the kernel refuses: an error for that open, never another file's bytes.
    pub fn route(
        &self,
        ino: u64,
        file: Option<Arc<File>>,
        open: impl FnOnce(&File) -> io::Result<BackingId>,
    ) -> Route {
        self.decide(&mut lock(&self.inodes), ino, file, open)
    }

    fn decide(
        &self,
        inodes: &mut Inodes,
        ino: u64,
        file: Option<Arc<File>>,
        open: impl FnOnce(&File) -> io::Result<BackingId>,
    ) -> Route {
        let cached_now = inodes.cached.get(&ino).is_some_and(|(_, opens)| *opens > 0);
        if !self.on() || cached_now {
            return Route::Daemon(FopenFlags::empty());
        }
        let is = file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| (m.dev(), m.ino()));
        match (inodes.backing.get(&ino).and_then(Weak::upgrade), file, is) {
            (Some(live), _, None) => Route::Passed(live),
            (Some(live), _, Some(is)) if live.is == is => Route::Passed(live),
            (Some(_), _, Some(_)) => Route::Daemon(FopenFlags::FOPEN_DIRECT_IO),
            (None, Some(file), Some(is)) => match open(&file) {
                Ok(id) => {
                    let live = Arc::new(Backing {
                        id,
                        _file: file,
                        is,
                    });
                    inodes.backing.insert(ino, Arc::downgrade(&live));
                    Route::Passed(live)
                }
                Err(e) => {
                    self.on.store(false, Ordering::Relaxed);
                    eprintln!(
                        "ctxfold mount: no FUSE passthrough here ({e}): files are read and \
                         written through ctxfold"
                    );
                    Route::Daemon(FopenFlags::empty())
                }
            },
            (None, _, _) => Route::Daemon(FopenFlags::empty()),
        }
    }

    /// A read open of the folded session `sha256` (of `size` bytes) at `ino`: passed through to
    /// its copy where one is kept (or its other opens are), else read through the daemon from
    /// the session `open` opens (through the cache, making a copy, unless the inode is passed
    /// through to something else now).
    pub fn open_folded(
        &self,
        copies: &Copies,
        ino: u64,
        sha256: Digest,
        open_backing: impl FnOnce(&File) -> io::Result<BackingId>,
        open: impl FnOnce() -> Result<Opened>,
    ) -> Result<FoldedOpen> {
        let flags = {
            let mut inodes = lock(&self.inodes);
            match self.decide(&mut inodes, ino, copies.get(&sha256), open_backing) {
                Route::Passed(live) => return Ok(FoldedOpen::Passed(live)),
                Route::Daemon(flags) if flags.contains(FopenFlags::FOPEN_DIRECT_IO) => flags,
                // Counted before the lock goes, so that no open passes it through meanwhile.
                Route::Daemon(_) => Self::cached_open(&mut inodes, ino, sha256),
            }
        };
        let cached = !flags.contains(FopenFlags::FOPEN_DIRECT_IO);
        let opened = match open() {
            Ok(opened) => opened,
            Err(e) => {
                if cached {
                    self.uncount(ino);
                }
                return Err(e);
            }
        };
        let making = (cached && self.on())
            .then(|| copies.making(sha256, opened.size()))
            .flatten();
        let reading = Reading {
            opened,
            making,
            cached,
        };
        Ok(FoldedOpen::Read(Box::new(reading), flags))
    }

    /// `reading`, an open of `ino`, closed. Once the last open through the cache of a session
    /// with a copy is closed, the kernel is told to drop what it cached of it: the next opens are
    /// passed through to the copy, and the session's bytes are then in memory once, not twice
    /// (and the next open need not drop them itself, which it would before its first read).
    pub fn release(&self, ino: u64, reading: &Reading, copies: &Copies) {
        if !reading.cached {
            return;
        }
        if self.uncount(ino)
            && copies.has(&reading.opened.sha256())
            && let Some(notifier) = self.notifier.get().cloned()
        {
            // Not from the thread answering the kernel: the kernel may need it to drop them.
            std::thread::spawn(move || notifier.inval_inode(INodeNo(ino), 0, 0));
        }
    }

    /// Where the mount's [`Notifier`] goes once the mount is made.
    pub fn notifier_slot(&self) -> Arc<OnceLock<Notifier>> {
        self.notifier.clone()
    }

    /// Count an open of `ino` through the cache closed; true when it was the last.
    fn uncount(&self, ino: u64) -> bool {
        match lock(&self.inodes).cached.get_mut(&ino) {
            Some((_, opens)) => {
                *opens = opens.saturating_sub(1);
                *opens == 0
            }
            None => false,
        }
    }

    /// Count an open of `ino` through the cache: its flags keep what the kernel cached of the
    /// inode when it is the same session's bytes.
    fn cached_open(inodes: &mut Inodes, ino: u64, sha256: Digest) -> FopenFlags {
        let (was, opens) = inodes.cached.entry(ino).or_insert((None, 0));
        // The first open drops whatever the kernel kept of the inode before.
        let same = *was == Some(sha256);
        *was = Some(sha256);
        *opens += 1;
        match same {
            true => FopenFlags::FOPEN_KEEP_CACHE,
            false => FopenFlags::empty(),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
