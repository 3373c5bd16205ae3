//! The FUSE side of a mount: the kernel's requests answered from the [`Tree`] (lookups, `stat`,
//! listings) and from [`Opened`] sessions (reads). Read-only: a write, or an open for one, is
//! `EROFS`. A session read whole once is passed through to its decoded copy after ([`Modes`]).
//! A read that meets a damaged object or a session whose whole does not hash to its
//! manifest's sha256 is `EIO`, never wrong bytes, and is logged with the session it hit and why
//! (the store's error names the pack and block).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenAccMode, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, Request,
};

use super::copies::Copies;
use super::modes::{Backing, FoldedOpen, Modes, Reading};
use super::session::{Cache, Opened, open_errno};
use super::tree::{Ino, Kind, Tree};
use crate::store::Store;

/// How long the kernel may keep what it was told: the tree does not change while mounted.
const TTL: Duration = Duration::from_secs(60);

pub struct SessionsFs {
    store: Store,
    tree: Tree,
    cache: Arc<Cache>,
    copies: Arc<Copies>,
    modes: Modes,
    open: Mutex<HashMap<u64, Arc<Open>>>,
    next_handle: AtomicU64,
    uid: u32,
    gid: u32,
}

/// An open file.
enum Open {
    Read(Box<Reading>),
    /// Passed through to a copy: the daemon sees none of its reads.
    Passed {
        _backing: Arc<Backing>,
    },
}

impl SessionsFs {
    pub fn new(store: Store, tree: Tree, cache: Arc<Cache>, copies: Arc<Copies>) -> Self {
        Self {
            store,
            tree,
            cache,
            copies,
            modes: Modes::default(),
            open: Mutex::default(),
            next_handle: AtomicU64::new(1),
            uid: rustix::process::geteuid().as_raw(),
            gid: rustix::process::getegid().as_raw(),
        }
    }

    fn attr(&self, ino: Ino) -> Option<FileAttr> {
        let node = self.tree.node(ino)?;
        let (kind, size, mtime, perm, nlink) = match &node.kind {
            Kind::Dir(_) => (FileType::Directory, 0, self.tree.built, 0o555, 2),
            Kind::File(file) => (FileType::RegularFile, file.size, file.mtime, 0o444, 1),
        };
        Some(shown_attr(
            ino,
            kind,
            size,
            perm,
            nlink,
            mtime,
            (self.uid, self.gid),
        ))
    }

    /// Where its [`fuser::Notifier`] goes once mounted.
    pub fn notifier_slot(&self) -> Arc<std::sync::OnceLock<fuser::Notifier>> {
        self.modes.notifier_slot()
    }

    fn handle(&self, fh: FileHandle) -> Option<Arc<Open>> {
        self.lock().get(&fh.0).cloned()
    }

    fn keep(&self, open: Open) -> FileHandle {
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(fh, Arc::new(open));
        FileHandle(fh)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Open>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The attributes of a file or folder a mount shows that is no file on disk (a folded session,
/// a folder on the way to some): its times all the one given, owned by `owner`.
pub fn shown_attr(
    ino: u64,
    kind: FileType,
    size: u64,
    perm: u16,
    nlink: u32,
    mtime: SystemTime,
    owner: (u32, u32),
) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size,
        blocks: size.div_ceil(512),
        atime: mtime,
        mtime,
        ctime: mtime,
        crtime: mtime,
        kind,
        perm,
        nlink,
        uid: owner.0,
        gid: owner.1,
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

/// What the daemon says of a read it refused: on its stderr, where `ctxfold mount` runs.
fn log(what: impl std::fmt::Display) {
    eprintln!("ctxfold mount: error: {what}");
}

impl Filesystem for SessionsFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        self.modes.init(config, true);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self
            .tree
            .child(parent.0, name)
            .and_then(|ino| self.attr(ino))
        {
            Some(attr) => reply.entry(&TTL, &attr, Generation(0)),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.attr(ino.0) {
            Some(attr) => reply.attr(&TTL, &attr),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        if flags.acc_mode() != OpenAccMode::O_RDONLY {
            return reply.error(Errno::EROFS);
        }
        let Some(Kind::File(file)) = self.tree.node(ino.0).map(|n| &n.kind) else {
            return reply.error(Errno::EISDIR);
        };
        let opening = self.modes.open_folded(
            &self.copies,
            ino.0,
            file.sha256,
            |copy| reply.open_backing(copy),
            || Opened::open(&self.store, &file.manifest),
        );
        match opening {
            Ok(FoldedOpen::Passed(backing)) => {
                let fh = self.keep(Open::Passed {
                    _backing: backing.clone(),
                });
                reply.opened_passthrough(fh, FopenFlags::empty(), backing.id());
            }
            Ok(FoldedOpen::Read(reading, flags)) => {
                reply.opened(self.keep(Open::Read(reading)), flags);
            }
            Err(e) => {
                log(format_args!("open {}: {e}", file.manifest.display()));
                reply.error(open_errno(&e));
            }
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let Some(open) = self.handle(fh) else {
            return reply.error(Errno::EBADF);
        };
        let Open::Read(reading) = &*open else {
            return reply.error(Errno::EBADF);
        };
        match reading.read_at(&self.store, &self.cache, &self.copies, offset, size) {
            Ok(bytes) => reply.data(&bytes),
            Err(e) => {
                log(format_args!(
                    "session {}: read of {size} bytes at {offset}: {e}",
                    reading.id()
                ));
                reply.error(Errno::EIO);
            }
        }
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Some(open) = self.lock().remove(&fh.0)
            && let Open::Read(reading) = &*open
        {
            self.modes.release(ino.0, reading, &self.copies);
        }
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let Some(node) = self.tree.node(ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let Kind::Dir(children) = &node.kind else {
            return reply.error(Errno::ENOTDIR);
        };
        let dots = [
            (ino.0, FileType::Directory, OsStr::new(".")),
            (node.parent, FileType::Directory, OsStr::new("..")),
        ];
        let entries = dots
            .into_iter()
            .chain(children.iter().map(|(name, &child)| {
                let kind = match self.tree.node(child).map(|n| &n.kind) {
                    Some(Kind::Dir(_)) => FileType::Directory,
                    _ => FileType::RegularFile,
                };
                (child, kind, name.as_os_str())
            }));
        for (at, (child, kind, name)) in entries.enumerate().skip(offset as usize) {
            // The offset the kernel gives back to go on after this entry.
            if reply.add(INodeNo(child), at as u64 + 1, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
