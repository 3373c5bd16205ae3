//! An agents mount: one agent's session folder as it is on disk, every file passed through to the
//! real one (by the kernel itself where it offers FUSE passthrough), plus every folded session
//! whose file is missing, at the place restore would write it to.
//!
//! The real folder is reached through a handle opened before it was mounted over
//! (`/proc/self/fd/N/…` walks the folder below the mount, not the mount). What an agent does goes
//! to real files: a folded session opened for writing (or truncated, renamed, its mode or times
//! set) is first restored into the real folder, verified ([`copy_up`]), and the call goes on on
//! that file. Nothing here writes to the store. Removing a folded-only file hides it from this
//! mount only; removing a real file that is folded shows the folded one again (that is how `fold
//! --remove-source` frees a file and keeps it in sight); moving a file away hides the folded one
//! at its old place (the session moved).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    BackingId, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, OpenAccMode, OpenFlags, RenameFlags, ReplyAttr,
    ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use super::copies::Copies;
use super::copy_up::copy_up;
use super::folded::{Entry, Folded};
use super::fs::shown_attr;
use super::modes::{Backing, FoldedOpen, Modes, Reading, Route};
use super::nodes::Nodes;
use super::session::{Cache, Opened, open_errno};
use super::tree::File as FoldedFile;
use crate::agents::Agent;
use crate::store::Store;

/// How long the kernel may keep what it was told: real files change under it (through this
/// mount, which tells it, but also by a fold, which does not).
const TTL: Duration = Duration::from_secs(1);

/// The mode bit of a file shown from the store (the sticky bit, meaningless on a file: `ls -l`
/// shows `-rw------T`): how `fold` walking an agent's folder through a mount tells the files it
/// need not read. Not an extended attribute: the kernel asks for `security.capability` before
/// every write to a file of a filesystem that answers extended attributes at all.
pub const SHOWN_FROM_STORE: u32 = libc::S_ISVTX;

/// One agent's folder, mounted over.
pub struct AgentFs {
    store: Store,
    agent: Agent,
    /// The mounted folder's path under the agent's home (empty: the home itself).
    prefix: PathBuf,
    /// The real folder, opened before the mount covered it, and its path through that handle.
    _below: OwnedFd,
    real: PathBuf,
    /// Where it is mounted, for messages.
    shown: PathBuf,
    /// Who owns the real folder: the owner of the folded-only files and folders.
    owner: (u32, u32),
    folded: Arc<Folded>,
    cache: Arc<Cache>,
    /// Folded-only files removed through this mount, by their path under the agent's home.
    hidden: Mutex<HashSet<PathBuf>>,
    nodes: Nodes,
    handles: Mutex<HashMap<u64, Arc<Handle>>>,
    next_handle: AtomicU64,
    /// Whether passthrough is asked for, and how each open inode is read.
    wants_passthrough: bool,
    modes: Modes,
    copies: Arc<Copies>,
    /// One copy-up at a time: two opens of one session restore it once.
    copying: Mutex<()>,
}

enum Handle {
    Real {
        file: Arc<std::fs::File>,
        _backing: Option<Arc<Backing>>,
    },
    Folded(Box<Reading>),
    /// A folded session passed through to its copy.
    Passed {
        _backing: Arc<Backing>,
    },
    Dir(Vec<Listed>),
}

/// What an open found.
enum Opening {
    Folded(FoldedOpen),
    Real(std::fs::File),
}

/// One entry of a folder's listing, with what it is when listed ("." and ".." are looked at when
/// the kernel asks): a listing of thousands answers the kernel's readdirplus without a second
/// look at each.
struct Listed {
    ino: u64,
    kind: FileType,
    name: OsString,
    look: Option<Look>,
}

/// What a path is, seen through the mount.
enum Look {
    Real(Metadata),
    Folded(FoldedFile),
    FoldedDir,
}

type Answer<T> = std::result::Result<T, Errno>;

/// What the agents mounts of one daemon share.
#[derive(Clone)]
pub struct Shared {
    pub store: Store,
    pub folded: Arc<Folded>,
    pub cache: Arc<Cache>,
    /// How many bytes of copies of sessions read whole each mount keeps, in its real folder.
    pub copies: u64,
    /// Whether to let the kernel read and write the real files where it can.
    pub passthrough: bool,
}

impl AgentFs {
    /// The mount of `below` (the real folder `shown`, opened before it is mounted over), the
    /// folder at `prefix` under `agent`'s home.
    pub fn new(
        shared: Shared,
        agent: Agent,
        prefix: PathBuf,
        below: OwnedFd,
        shown: PathBuf,
    ) -> io::Result<Self> {
        let Shared {
            store,
            folded,
            cache,
            copies,
            passthrough,
        } = shared;
        let real = PathBuf::from(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&below)
        ));
        let meta = std::fs::metadata(&real)?;
        // In the real folder: a copy can become a real file there.
        let copies = Arc::new(Copies::new(&real, copies));
        Ok(Self {
            store,
            agent,
            prefix,
            _below: below,
            real,
            shown,
            owner: (meta.uid(), meta.gid()),
            folded,
            cache,
            hidden: Mutex::default(),
            nodes: Nodes::default(),
            handles: Mutex::default(),
            next_handle: AtomicU64::new(1),
            wants_passthrough: passthrough,
            modes: Modes::default(),
            copies,
            copying: Mutex::new(()),
        })
    }

    /// Where its [`fuser::Notifier`] goes once mounted.
    pub fn notifier_slot(&self) -> Arc<std::sync::OnceLock<fuser::Notifier>> {
        self.modes.notifier_slot()
    }

    fn real_path(&self, rel: &Path) -> PathBuf {
        self.real.join(rel)
    }

    fn home_rel(&self, rel: &Path) -> PathBuf {
        self.prefix.join(rel)
    }

    fn rel_of(&self, ino: INodeNo) -> Answer<PathBuf> {
        self.nodes.path(ino.0).ok_or(Errno::ENOENT)
    }

    fn child_rel(&self, parent: INodeNo, name: &OsStr) -> Answer<PathBuf> {
        Ok(self.rel_of(parent)?.join(name))
    }

    fn is_hidden(&self, home_rel: &Path) -> bool {
        lock(&self.hidden).contains(home_rel)
    }

    /// Hide the folded session at `rel`, if one is there.
    fn hide(&self, rel: &Path) {
        let home_rel = self.home_rel(rel);
        if let Some(Entry::File(_)) = self.folded.entry(self.agent, &home_rel) {
            lock(&self.hidden).insert(home_rel);
        }
    }

    /// What `rel` is: the real file or folder when there is one, else a folded session or a
    /// folder on the way to some.
    fn look(&self, rel: &Path) -> Answer<Option<Look>> {
        match std::fs::symlink_metadata(self.real_path(rel)) {
            Ok(meta) => return Ok(Some(Look::Real(meta))),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {}
            Err(e) => return Err(e.into()),
        }
        let home_rel = self.home_rel(rel);
        if self.is_hidden(&home_rel) {
            return Ok(None);
        }
        Ok(match self.folded.entry(self.agent, &home_rel) {
            Some(Entry::File(file)) => Some(Look::Folded(file)),
            Some(Entry::Dir) => self
                .folded
                .shows_under(self.agent, &home_rel, |p| self.is_hidden(p))
                .then_some(Look::FoldedDir),
            None => None,
        })
    }

    fn attr(&self, ino: u64, look: &Look) -> FileAttr {
        let folded = |kind, size, perm, nlink, mtime| {
            shown_attr(ino, kind, size, perm, nlink, mtime, self.owner)
        };
        match look {
            Look::Real(meta) => real_attr(ino, meta),
            Look::Folded(file) => folded(
                FileType::RegularFile,
                file.size,
                0o600 | SHOWN_FROM_STORE as u16,
                1,
                file.mtime,
            ),
            Look::FoldedDir => folded(FileType::Directory, 0, 0o700, 2, self.folded.read_at()),
        }
    }

    /// Make folder `rel` real (a folder shown only for the folded sessions in it, and those on
    /// the way to it), for a file to be made in it.
    fn materialize(&self, rel: &Path) -> Answer<()> {
        match self.look(rel)? {
            Some(Look::Real(meta)) if meta.is_dir() => Ok(()),
            Some(Look::FoldedDir) => std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(self.real_path(rel))
                .map_err(Errno::from),
            Some(_) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    /// Make the folded session at `rel` a real file there.
    fn copy_up(&self, rel: &Path, file: &FoldedFile) -> Answer<()> {
        let _one = lock(&self.copying);
        if let Some(parent) = rel.parent() {
            self.materialize(parent)?;
        }
        let copy = self.copies.take(&file.sha256);
        copy_up(&self.store, file, &self.real_path(rel), copy).map_err(|e| {
            log(format_args!(
                "restore {} to write to it: {e}",
                self.shown.join(rel).display()
            ));
            open_errno(&e)
        })
    }

    /// `rel` as a real file, restored first when it is a folded session.
    fn real_file(&self, rel: &Path) -> Answer<()> {
        match self.look(rel)? {
            Some(Look::Real(_)) => Ok(()),
            Some(Look::Folded(file)) => self.copy_up(rel, &file),
            Some(Look::FoldedDir) => self.materialize(rel),
            None => Err(Errno::ENOENT),
        }
    }

    fn open_real(&self, rel: &Path, flags: i32, mode: Option<u32>) -> Answer<std::fs::File> {
        use rustix::fs::{Mode, OFlags};
        let mut oflags = OFlags::from_bits_retain(flags as u32) - OFlags::NOCTTY;
        oflags |= OFlags::CLOEXEC;
        if mode.is_some() {
            oflags |= OFlags::CREATE;
        }
        let mode = Mode::from_raw_mode(mode.unwrap_or(0));
        let fd = rustix::fs::open(self.real_path(rel), oflags, mode)
            .map_err(|e| Errno::from_i32(e.raw_os_error()))?;
        Ok(std::fs::File::from(fd))
    }

    /// Keep `file`, a real file open at `ino`, passed through to itself where [`Modes::route`]
    /// lets it be.
    fn keep_real(
        &self,
        ino: u64,
        file: std::fs::File,
        open_backing: impl FnOnce(&std::fs::File) -> io::Result<BackingId>,
    ) -> (FileHandle, Route) {
        let file = Arc::new(file);
        let route = self.modes.route(ino, Some(file.clone()), open_backing);
        let backing = match &route {
            Route::Passed(id) => Some(id.clone()),
            Route::Daemon(_) => None,
        };
        let fh = self.keep(Handle::Real {
            file,
            _backing: backing,
        });
        (fh, route)
    }

    fn keep(&self, handle: Handle) -> FileHandle {
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).insert(fh, Arc::new(handle));
        FileHandle(fh)
    }

    fn handle(&self, fh: FileHandle) -> Answer<Arc<Handle>> {
        lock(&self.handles).get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// What folder `rel` (number `ino`) lists: its real entries, then the folded ones not there.
    fn listing(&self, ino: u64, rel: &Path) -> Answer<Vec<Listed>> {
        let dot = |name: &str| Listed {
            ino,
            kind: FileType::Directory,
            name: OsString::from(name),
            look: None,
        };
        let mut entries = vec![dot("."), dot("..")];
        let mut real = HashSet::new();
        match std::fs::read_dir(self.real_path(rel)) {
            Ok(dir) => {
                for entry in dir {
                    let entry = entry?;
                    let name = entry.file_name();
                    let meta = entry.metadata()?;
                    entries.push(Listed {
                        ino: self.nodes.of(ino, &name),
                        kind: file_type(meta.file_type()),
                        name: name.clone(),
                        look: Some(Look::Real(meta)),
                    });
                    real.insert(name);
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => return Err(e.into()),
        }
        let home_rel = self.home_rel(rel);
        let folded = self
            .folded
            .children(self.agent, &home_rel, |p| self.is_hidden(p));
        for (name, entry) in folded {
            if real.contains(&name) {
                continue;
            }
            let (kind, look) = match entry {
                Entry::File(file) => (FileType::RegularFile, Look::Folded(file)),
                Entry::Dir => (FileType::Directory, Look::FoldedDir),
            };
            entries.push(Listed {
                ino: self.nodes.of(ino, &name),
                kind,
                name,
                look: Some(look),
            });
        }
        Ok(entries)
    }

    fn set_attr(&self, rel: &Path, fh: Option<FileHandle>, change: &Change) -> Answer<()> {
        let path = self.real_path(rel);
        if let Some(size) = change.size {
            match fh.map(|fh| self.handle(fh)).transpose()?.as_deref() {
                Some(Handle::Real { file, .. }) => file.set_len(size)?,
                _ => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)?
                    .set_len(size)?,
            }
        }
        if let Some(mode) = change.mode {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & 0o7777))?;
        }
        if change.uid.is_some() || change.gid.is_some() {
            std::os::unix::fs::lchown(&path, change.uid, change.gid)?;
        }
        if change.atime.is_some() || change.mtime.is_some() {
            let times = rustix::fs::Timestamps {
                last_access: timespec(change.atime),
                last_modification: timespec(change.mtime),
            };
            rustix::fs::utimensat(
                rustix::fs::CWD,
                &path,
                &times,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            )
            .map_err(|e| Errno::from_i32(e.raw_os_error()))?;
        }
        Ok(())
    }

    fn entry(&self, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let looked = self.child_rel(parent, name).and_then(|rel| self.look(&rel));
        match looked {
            Ok(Some(look)) => {
                let ino = self.nodes.of(parent.0, name);
                reply.entry(&TTL, &self.attr(ino, &look), Generation(0));
            }
            Ok(None) => reply.error(Errno::ENOENT),
            Err(e) => reply.error(e),
        }
    }
}

/// What a `setattr` changes.
struct Change {
    mode: Option<u32>,
    uid: Option<u32>,
    gid: Option<u32>,
    size: Option<u64>,
    atime: Option<TimeOrNow>,
    mtime: Option<TimeOrNow>,
}

impl Change {
    fn any(&self) -> bool {
        self.mode.is_some()
            || self.uid.is_some()
            || self.gid.is_some()
            || self.size.is_some()
            || self.atime.is_some()
            || self.mtime.is_some()
    }
}

fn timespec(time: Option<TimeOrNow>) -> rustix::fs::Timespec {
    let (tv_sec, tv_nsec) = match time {
        None => (0, rustix::fs::UTIME_OMIT),
        Some(TimeOrNow::Now) => (0, rustix::fs::UTIME_NOW),
        Some(TimeOrNow::SpecificTime(at)) => {
            let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
            (since.as_secs() as i64, i64::from(since.subsec_nanos()))
        }
    };
    rustix::fs::Timespec { tv_sec, tv_nsec }
}

fn real_attr(ino: u64, meta: &Metadata) -> FileAttr {
    let time = |secs: i64, nanos: i64| match u64::try_from(secs) {
        Ok(secs) => UNIX_EPOCH + Duration::new(secs, nanos as u32),
        Err(_) => UNIX_EPOCH,
    };
    FileAttr {
        ino: INodeNo(ino),
        size: meta.size(),
        blocks: meta.blocks(),
        atime: time(meta.atime(), meta.atime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        crtime: meta.created().unwrap_or(SystemTime::UNIX_EPOCH),
        kind: file_type(meta.file_type()),
        perm: (meta.mode() & 0o7777) as u16,
        nlink: meta.nlink() as u32,
        uid: meta.uid(),
        gid: meta.gid(),
        rdev: meta.rdev() as u32,
        flags: 0,
        blksize: meta.blksize() as u32,
    }
}

fn file_type(kind: std::fs::FileType) -> FileType {
    if kind.is_dir() {
        FileType::Directory
    } else if kind.is_symlink() {
        FileType::Symlink
    } else if kind.is_fifo() {
        FileType::NamedPipe
    } else if kind.is_socket() {
        FileType::Socket
    } else if kind.is_block_device() {
        FileType::BlockDevice
    } else if kind.is_char_device() {
        FileType::CharDevice
    } else {
        FileType::RegularFile
    }
}

/// Whether an open with `flags` may change the file.
fn writes(flags: i32) -> bool {
    OpenFlags(flags).acc_mode() != OpenAccMode::O_RDONLY || flags & libc::O_TRUNC != 0
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn log(what: impl std::fmt::Display) {
    eprintln!("ctxfold mount: error: {what}");
}

impl Filesystem for AgentFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> io::Result<()> {
        // A listing gives the kernel every entry's attributes too: `ls -l` of a folder of
        // thousands of sessions is then one call, not one lookup per file.
        let _ = config.add_capabilities(InitFlags::FUSE_DO_READDIRPLUS);
        self.modes.init(config, self.wants_passthrough);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.entry(parent, name, reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        if let Some(Ok(handle)) = fh.map(|fh| self.handle(fh))
            && let Handle::Real { file, .. } = &*handle
        {
            return match file.metadata() {
                Ok(meta) => reply.attr(&TTL, &real_attr(ino.0, &meta)),
                Err(e) => reply.error(e.into()),
            };
        }
        match self.rel_of(ino).and_then(|rel| self.look(&rel)) {
            Ok(Some(look)) => reply.attr(&TTL, &self.attr(ino.0, &look)),
            Ok(None) => reply.error(Errno::ENOENT),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let change = Change {
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
        };
        let done = self.rel_of(ino).and_then(|rel| {
            if change.any() {
                self.real_file(&rel)?;
                self.set_attr(&rel, fh, &change)?;
            }
            self.look(&rel)?.ok_or(Errno::ENOENT)
        });
        match done {
            Ok(look) => reply.attr(&TTL, &self.attr(ino.0, &look)),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let target = self
            .rel_of(ino)
            .and_then(|rel| Ok(std::fs::read_link(self.real_path(&rel))?));
        match target {
            Ok(target) => reply.data(std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str())),
            Err(e) => reply.error(e),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let made = self.child_rel(parent, name).and_then(|rel| {
            if self.look(&rel)?.is_some() {
                return Err(Errno::EEXIST);
            }
            self.materialize(rel.parent().unwrap_or(Path::new("")))?;
            std::fs::DirBuilder::new()
                .mode(mode & !umask)
                .create(self.real_path(&rel))?;
            Ok(())
        });
        match made {
            Ok(()) => self.entry(parent, name, reply),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let made = self.child_rel(parent, link_name).and_then(|rel| {
            if self.look(&rel)?.is_some() {
                return Err(Errno::EEXIST);
            }
            self.materialize(rel.parent().unwrap_or(Path::new("")))?;
            std::os::unix::fs::symlink(target, self.real_path(&rel))?;
            Ok(())
        });
        match made {
            Ok(()) => self.entry(parent, link_name, reply),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let removed = self
            .child_rel(parent, name)
            .and_then(|rel| match self.look(&rel)? {
                Some(Look::Real(meta)) if meta.is_dir() => Err(Errno::EISDIR),
                Some(Look::Real(_)) => Ok(std::fs::remove_file(self.real_path(&rel))?),
                Some(Look::Folded(_)) => {
                    self.hide(&rel);
                    Ok(())
                }
                Some(Look::FoldedDir) => Err(Errno::EISDIR),
                None => Err(Errno::ENOENT),
            });
        match removed {
            Ok(()) => {
                self.nodes.remove(parent.0, name);
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let removed = self
            .child_rel(parent, name)
            .and_then(|rel| match self.look(&rel)? {
                Some(Look::Real(meta)) if meta.is_dir() => {
                    let home_rel = self.home_rel(&rel);
                    if self
                        .folded
                        .shows_under(self.agent, &home_rel, |p| self.is_hidden(p))
                    {
                        return Err(Errno::ENOTEMPTY);
                    }
                    Ok(std::fs::remove_dir(self.real_path(&rel))?)
                }
                Some(Look::FoldedDir) => Err(Errno::ENOTEMPTY),
                Some(_) => Err(Errno::ENOTDIR),
                None => Err(Errno::ENOENT),
            });
        match removed {
            Ok(()) => {
                self.nodes.remove(parent.0, name);
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        new_parent: INodeNo,
        new_name: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let moved = (|| {
            let from = self.child_rel(parent, name)?;
            let to = self.child_rel(new_parent, new_name)?;
            let target = self.look(&to)?;
            if flags.contains(RenameFlags::RENAME_NOREPLACE) && target.is_some() {
                return Err(Errno::EEXIST);
            }
            match self.look(&from)? {
                None => return Err(Errno::ENOENT),
                // A folder shown only for its folded sessions: `mv` copies what it holds.
                Some(Look::FoldedDir) => return Err(Errno::EXDEV),
                Some(Look::Folded(file)) => self.copy_up(&from, &file)?,
                Some(Look::Real(_)) => {}
            }
            match target {
                Some(Look::FoldedDir) => return Err(Errno::ENOTEMPTY),
                Some(Look::Folded(file)) if flags.contains(RenameFlags::RENAME_EXCHANGE) => {
                    self.copy_up(&to, &file)?
                }
                _ => {}
            }
            self.materialize(to.parent().unwrap_or(Path::new("")))?;
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                self.real_path(&from),
                rustix::fs::CWD,
                self.real_path(&to),
                rustix::fs::RenameFlags::from_bits_retain(flags.bits()),
            )
            .map_err(|e| Errno::from_i32(e.raw_os_error()))?;
            if !flags.contains(RenameFlags::RENAME_EXCHANGE) {
                self.hide(&from);
            }
            Ok(())
        })();
        match moved {
            Ok(()) => {
                match flags.contains(RenameFlags::RENAME_EXCHANGE) {
                    true => self.nodes.exchange(parent.0, name, new_parent.0, new_name),
                    false => self.nodes.rename(parent.0, name, new_parent.0, new_name),
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let opening = (|| {
            let rel = self.rel_of(ino)?;
            match self.look(&rel)? {
                Some(Look::Folded(file)) if !writes(flags.0) => self
                    .modes
                    .open_folded(
                        &self.copies,
                        ino.0,
                        file.sha256,
                        |copy| reply.open_backing(copy),
                        || Opened::open(&self.store, &file.manifest),
                    )
                    .map(Opening::Folded)
                    .map_err(|e| {
                        log(format_args!(
                            "open {}: {e}",
                            self.shown.join(&rel).display()
                        ));
                        open_errno(&e)
                    }),
                Some(Look::Folded(file)) => {
                    self.copy_up(&rel, &file)?;
                    Ok(Opening::Real(self.open_real(&rel, flags.0, None)?))
                }
                Some(Look::Real(meta)) if !meta.is_dir() => {
                    Ok(Opening::Real(self.open_real(&rel, flags.0, None)?))
                }
                Some(_) => Err(Errno::EISDIR),
                None => Err(Errno::ENOENT),
            }
        })();
        match opening {
            Ok(Opening::Folded(FoldedOpen::Read(reading, flags))) => {
                reply.opened(self.keep(Handle::Folded(reading)), flags);
            }
            Ok(Opening::Folded(FoldedOpen::Passed(backing))) => {
                let fh = self.keep(Handle::Passed {
                    _backing: backing.clone(),
                });
                reply.opened_passthrough(fh, FopenFlags::empty(), backing.id());
            }
            Ok(Opening::Real(file)) => match self.keep_real(ino.0, file, |f| reply.open_backing(f))
            {
                (fh, Route::Passed(backing)) => {
                    reply.opened_passthrough(fh, FopenFlags::empty(), backing.id())
                }
                (fh, Route::Daemon(flags)) => reply.opened(fh, flags),
            },
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let created = self.child_rel(parent, name).and_then(|rel| {
            match self.look(&rel)? {
                Some(_) if flags & libc::O_EXCL != 0 => return Err(Errno::EEXIST),
                Some(Look::Folded(file)) => self.copy_up(&rel, &file)?,
                Some(_) => {}
                None => self.materialize(rel.parent().unwrap_or(Path::new("")))?,
            }
            let file = self.open_real(&rel, flags, Some(mode & !umask))?;
            let meta = file.metadata()?;
            Ok((file, meta))
        });
        let (file, meta) = match created {
            Ok(created) => created,
            Err(e) => return reply.error(e),
        };
        let ino = self.nodes.of(parent.0, name);
        let attr = real_attr(ino, &meta);
        match self.keep_real(ino, file, |f| reply.open_backing(f)) {
            (fh, Route::Passed(backing)) => reply.created_passthrough(
                &TTL,
                &attr,
                Generation(0),
                fh,
                FopenFlags::empty(),
                backing.id(),
            ),
            (fh, Route::Daemon(flags)) => reply.created(&TTL, &attr, Generation(0), fh, flags),
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
        let handle = match self.handle(fh) {
            Ok(handle) => handle,
            Err(e) => return reply.error(e),
        };
        match &*handle {
            Handle::Real { file, .. } => {
                let mut buf = vec![0; size as usize];
                let mut got = 0;
                while got < buf.len() {
                    match file.read_at(&mut buf[got..], offset + got as u64) {
                        Ok(0) => break,
                        Ok(n) => got += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return reply.error(e.into()),
                    }
                }
                reply.data(&buf[..got]);
            }
            Handle::Folded(reading) => {
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
            // The kernel reads a passed-through file itself.
            Handle::Passed { .. } => reply.error(Errno::EBADF),
            Handle::Dir(_) => reply.error(Errno::EISDIR),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.handle(fh).as_deref() {
            // A file opened to append appends whatever the offset (pwrite on Linux).
            Ok(Handle::Real { file, .. }) => match file.write_all_at(data, offset) {
                Ok(()) => reply.written(data.len() as u32),
                Err(e) => reply.error(e.into()),
            },
            Ok(_) => reply.error(Errno::EBADF),
            Err(e) => reply.error(*e),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let synced = match self.handle(fh).as_deref() {
            Ok(Handle::Real { file, .. }) if datasync => file.sync_data().map_err(Errno::from),
            Ok(Handle::Real { file, .. }) => file.sync_all().map_err(Errno::from),
            Ok(_) => Ok(()),
            Err(e) => Err(*e),
        };
        match synced {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
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
        if let Some(handle) = lock(&self.handles).remove(&fh.0)
            && let Handle::Folded(reading) = &*handle
        {
            self.modes.release(ino.0, reading, &self.copies);
        }
        reply.ok();
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let listed = self.rel_of(ino).and_then(|rel| match self.look(&rel)? {
            Some(Look::Real(meta)) if meta.is_dir() => self.listing(ino.0, &rel),
            Some(Look::FoldedDir) => self.listing(ino.0, &rel),
            Some(_) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        });
        match listed {
            Ok(entries) => reply.opened(self.keep(Handle::Dir(entries)), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let handle = match self.handle(fh) {
            Ok(handle) => handle,
            Err(e) => return reply.error(e),
        };
        let Handle::Dir(entries) = &*handle else {
            return reply.error(Errno::ENOTDIR);
        };
        for (at, listed) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(
                INodeNo(listed.ino),
                at as u64 + 1,
                listed.kind,
                &listed.name,
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn readdirplus(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        let handle = match self.handle(fh) {
            Ok(handle) => handle,
            Err(e) => return reply.error(e),
        };
        let Handle::Dir(entries) = &*handle else {
            return reply.error(Errno::ENOTDIR);
        };
        for (at, listed) in entries.iter().enumerate().skip(offset as usize) {
            // "." and "..": the folder's own attributes (the kernel makes no entry of them).
            let looked;
            let look = match &listed.look {
                Some(look) => look,
                None => match self.rel_of(ino).and_then(|rel| self.look(&rel)) {
                    Ok(Some(now)) => {
                        looked = now;
                        &looked
                    }
                    _ => continue,
                },
            };
            if reply.add(
                INodeNo(listed.ino),
                at as u64 + 1,
                &listed.name,
                &TTL,
                &self.attr(listed.ino, look),
                Generation(0),
            ) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        lock(&self.handles).remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let synced = self
            .rel_of(ino)
            .and_then(|rel| Ok(crate::files::atomic::fsync_dir(&self.real_path(&rel))?));
        match synced {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match rustix::fs::statvfs(&self.real) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(Errno::from_i32(e.raw_os_error())),
        }
    }
}
