//! `ctxfold mount`: the store's sessions as a read-only filesystem (FUSE), as `restic mount` shows
//! snapshots: every folded session at `by-id/`, and under `codex/`, `pi/` and `claude/` at the
//! place its agent keeps it, as an agent's picker looks for them.
//!
//! [`tree`] is what is shown, built once from the manifests; [`session`] reads a session by
//! offset from its objects, checked; [`fs`] answers the kernel. A session read whole is kept
//! decoded ([`copies`]) and later opens of it are passed through to that copy, as [`modes`]
//! allows. Not for writing: nothing through a mount changes the store.
//!
//! `mount --agents` ([`mount_agents`]) mounts over each agent's own session folder instead:
//! [`overlay`] passes the real files through and shows the folded sessions whose files are missing
//! ([`folded`]), numbered by [`nodes`]; a write to one makes it a real file first ([`copy_up`]).
//!
//! A mount is named `ctxfold:<store>` in the system's mount table (`/proc/self/mountinfo`), which
//! is how [`mounts_of`] finds the mounts of a store, and `unmount` a mount of ctxfold's.

pub mod copies;
pub mod copy_up;
pub mod folded;
pub mod fs;
pub mod modes;
pub mod nodes;
pub mod overlay;
pub mod session;
pub mod tree;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fuser::{Config, MountOption, SessionACL};

use crate::agents::{Agent, Homes};
use crate::error::{Error, IoContext, Result};
use crate::store::Store;

/// The filesystem types the kernel records for a mount of ours: `fuse.<subtype>` where the subtype
/// reaches it (through fusermount3), plain `fuse` where the mount call was made directly.
const FS_TYPES: [&str; 2] = ["fuse.ctxfold", "fuse"];

/// Decoded parts kept for reads: a few packs' blocks' worth, shared by every mount of a daemon.
const CACHE_BYTES: usize = 16 << 20;

/// Decoded copies of sessions read whole kept at most, on the store's disk, unless told.
pub const COPIES_BYTES: u64 = 1 << 30;

/// Mounts about to be served: the kernel's side made, nothing answered yet.
pub struct Mounting {
    mounts: Vec<(PathBuf, Box<dyn Served>)>,
    /// Manifests that could not be read, left out.
    pub problems: Vec<String>,
    pub sessions: usize,
}

/// A mount of any of ours, served until it goes.
trait Served: Send {
    fn run(self: Box<Self>) -> std::io::Result<()>;
}

impl<FS: fuser::Filesystem> Served for fuser::Session<FS> {
    fn run(self: Box<Self>) -> std::io::Result<()> {
        (*self).run()
    }
}

/// Mount `store` at `dir` (an existing folder; a dead mount of ours left there by a killed
/// daemon is cleared first).
pub fn mount(store: &Store, dir: &Path, copies: u64) -> Result<Mounting> {
    clear_dead_mount(dir)?;
    let meta = std::fs::metadata(dir).with_path("stat", dir)?;
    if !meta.is_dir() {
        return Err(Error::usage(format!("{} is not a folder", dir.display())));
    }
    let tree = tree::Tree::of(store)?;
    let problems = tree.problems.clone();
    let mut config = config(store)?;
    config.mount_options.push(MountOption::RO);
    config.mount_options.push(MountOption::NoExec);
    let fs = fs::SessionsFs::new(
        store.clone(),
        tree,
        part_cache(store),
        copies_of(store, copies),
    );
    let notifier = fs.notifier_slot();
    let session = session_at(fs, dir, &config)?;
    let _ = notifier.set(session.notifier());
    Ok(Mounting {
        mounts: vec![(absolute(dir)?, Box::new(session))],
        problems,
        sessions: count_sessions(store),
    })
}

/// Where an agents mount goes for `agent`: the folder that holds all its session folders (Codex's
/// home, which holds `sessions/` and `archived_sessions/`: an archive is a rename between them,
/// which fails across two mounts), and that folder's path under the home.
pub fn agent_root(homes: &Homes, agent: Agent) -> (PathBuf, PathBuf) {
    let home = homes.of(agent);
    match agent.format().trees() {
        [one] => (home.join(one.dir), PathBuf::from(one.dir)),
        _ => (home.to_path_buf(), PathBuf::new()),
    }
}

/// One agent mounted over, or why not.
pub enum AgentMount {
    Mounted {
        agent: Agent,
        dir: PathBuf,
    },
    /// The agent's home is not on this machine.
    NoHome {
        agent: Agent,
        home: PathBuf,
    },
}

/// Mount over each agent's session folder (see [`agent_root`]) the overlay of its real files and
/// its folded sessions; an agent whose home is missing is left alone. `passthrough`: let the
/// kernel read and write the real files where it can (and the copies of folded sessions read
/// whole, up to `copies` bytes of them).
pub fn mount_agents(
    store: &Store,
    homes: &Homes,
    passthrough: bool,
    copies: u64,
) -> Result<(Mounting, Vec<AgentMount>)> {
    // Files an agent makes through the mount take the mode it asks for less its own umask (the
    // kernel hands both over), not less this process's.
    rustix::process::umask(rustix::fs::Mode::empty());
    let (folded, problems) = folded::Folded::of(store)?;
    let shared = overlay::Shared {
        store: store.clone(),
        folded: Arc::new(folded),
        cache: part_cache(store),
        copies,
        passthrough,
    };
    let store_root = absolute(store.root())?;
    let mut config = config(store)?;
    config.mount_options.push(MountOption::RW);
    config.mount_options.push(MountOption::DefaultPermissions);
    let mut mounts: Vec<(PathBuf, Box<dyn Served>)> = Vec::new();
    let mut said = Vec::new();
    for agent in Agent::ALL {
        let home = homes.of(agent);
        let (dir, prefix) = agent_root(homes, agent);
        // Before anything looks at the home: a dead mount answers nothing there.
        clear_dead_mount(&dir)?;
        if !home.is_dir() {
            said.push(AgentMount::NoHome {
                agent,
                home: home.to_path_buf(),
            });
            continue;
        }
        let dir = absolute(&dir)?;
        if mounts_of(store).iter().any(|m| m.dir == dir) {
            return Err(Error::refused(format!(
                "{} is mounted already ('ctxfold unmount {}' first)",
                dir.display(),
                dir.display()
            )));
        }
        if store_root.starts_with(&dir) {
            return Err(Error::usage(format!(
                "the store {} is inside {}, which the mount would cover",
                store_root.display(),
                dir.display()
            )));
        }
        crate::files::create_private_dir(&dir)?;
        let below = open_below(&dir)?;
        let fs = overlay::AgentFs::new(shared.clone(), agent, prefix, below, dir.clone())
            .with_path("open", &dir)?;
        let notifier = fs.notifier_slot();
        let session = session_at(fs, &dir, &config)?;
        let _ = notifier.set(session.notifier());
        mounts.push((dir.clone(), Box::new(session)));
        said.push(AgentMount::Mounted { agent, dir });
    }
    let mounting = Mounting {
        mounts,
        problems,
        sessions: count_sessions(store),
    };
    Ok((mounting, said))
}

/// The folder at `dir` as it is now, to be reached once a mount covers it.
fn open_below(dir: &Path) -> Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io("open", dir, e.into()))
}

/// What every mount of ours is mounted with.
fn config(store: &Store) -> Result<Config> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::NoSuid,
        MountOption::NoDev,
        MountOption::FSName(format!("ctxfold:{}", absolute(store.root())?.display())),
        MountOption::Subtype("ctxfold".into()),
    ];
    config.acl = SessionACL::Owner;
    config.n_threads = Some(2);
    Ok(config)
}

fn session_at<FS: fuser::Filesystem>(
    fs: FS,
    dir: &Path,
    config: &Config,
) -> Result<fuser::Session<FS>> {
    let session = fuser::Session::new(fs, dir, config).map_err(|e| {
        let hint = match Path::new("/dev/fuse").exists() {
            true => "",
            false => " (this machine has no /dev/fuse: load the fuse module, or run where FUSE is)",
        };
        Error::io(format!("mount ctxfold at{hint}"), dir, e)
    })?;
    Ok(session)
}

/// The cache of decoded parts a daemon's mounts share. Decoded parts are kept there: the packs' own
/// cache of decoded blocks need only hold the few a part is read from.
fn part_cache(store: &Store) -> Arc<session::Cache> {
    bound_memory();
    store
        .odb()
        .set_block_cache(crate::odb::pack::FEW_BLOCKS_BYTES);
    Arc::new(session::Cache::new(CACHE_BYTES))
}

/// Where a daemon keeps copies of the sessions read whole (see [`copies`]): unnamed files beside the
/// store, on its disk.
fn copies_of(store: &Store, budget: u64) -> Arc<copies::Copies> {
    Arc::new(copies::Copies::new(store.root(), budget))
}

/// Keep a daemon's peak memory from depending on which thread decoded what: glibc serves a large
/// allocation from fresh pages, returned when freed, only up to a threshold it raises to the largest
/// block freed so far; past that, decoded blocks of megabytes stay in the heap of whichever of the
/// serving threads freed them (peaks measured between 84 and 125 MiB for the same reads). A fixed
/// threshold stops the raising.
fn bound_memory() {
    // SAFETY: mallopt only sets a tunable of the allocator; called before any thread serves.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

fn count_sessions(store: &Store) -> usize {
    store.session_ids().map_or(0, |ids| ids.len())
}

impl Mounting {
    /// The folders mounted.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.mounts.iter().map(|(dir, _)| dir.clone()).collect()
    }

    /// Serve until every mount goes (`unmount`, `umount`, or `stop`'s doing): `stop` is handed
    /// what unmounts them all, to call from another thread (a signal's). The unmount is lazy, as
    /// `umount -l`: the folders are free at once, and files open through them are served until
    /// they are closed.
    pub fn serve(self, stop: impl FnOnce(Box<dyn FnOnce() + Send>)) -> Result<()> {
        let dirs = self.dirs();
        stop(Box::new(move || {
            for dir in dirs {
                let _ = rustix::mount::unmount(&dir, rustix::mount::UnmountFlags::DETACH);
            }
        }));
        std::thread::scope(|scope| {
            let served: Vec<_> = self
                .mounts
                .into_iter()
                .map(|(_, mount)| scope.spawn(move || mount.run()))
                .collect();
            for one in served {
                one.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    .map_err(|e| Error::system("serve the mount", e))?;
            }
            Ok(())
        })
    }
}

/// Unmount the mount of ours at `dir`; a dead one (its daemon killed) too.
pub fn unmount(dir: &Path) -> Result<()> {
    let dir = absolute(dir)?;
    if !mounts().iter().any(|m| m.dir == dir) {
        return Err(Error::refused(format!(
            "{} is not a ctxfold mount",
            dir.display()
        )));
    }
    rustix::mount::unmount(&dir, rustix::mount::UnmountFlags::DETACH)
        .map_err(|e| Error::io("unmount", &dir, e.into()))
}

/// A mount of ctxfold's, from the mount table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mounted {
    pub dir: PathBuf,
    /// The store it shows.
    pub store: PathBuf,
}

/// Every mount of ctxfold's on this machine (as this process sees the mount table).
pub fn mounts() -> Vec<Mounted> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    table.lines().filter_map(parse_mountinfo).collect()
}

/// The mounts of `store`.
pub fn mounts_of(store: &Store) -> Vec<Mounted> {
    let root = absolute(store.root()).unwrap_or_else(|_| store.root().to_path_buf());
    mounts().into_iter().filter(|m| m.store == root).collect()
}

/// Whether `dir` lies in a mount of ours, whose files may be shown from a store.
pub fn within_mount(dir: &Path) -> bool {
    let dir = absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    mounts().iter().any(|m| dir.starts_with(&m.dir))
}

/// Whether `path`, seen through an agents mount, is a folded session shown from the store (no
/// real file is there): what fold and ls skip, as they would the missing file.
pub fn shown_from_store(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file() && m.mode() & overlay::SHOWN_FROM_STORE != 0)
}

/// One line of `/proc/self/mountinfo`: `ID PARENT MAJ:MIN ROOT DIR OPTS [TAGS…] - TYPE SOURCE
/// SUPEROPTS`, paths with space, tab, newline and backslash escaped as octal.
fn parse_mountinfo(line: &str) -> Option<Mounted> {
    let fields: Vec<&str> = line.split(' ').collect();
    let dash = fields.iter().position(|f| *f == "-")?;
    let (kind, source) = (fields.get(dash + 1)?, fields.get(dash + 2)?);
    if !FS_TYPES.contains(kind) {
        return None;
    }
    let store = unescape(source.strip_prefix("ctxfold:")?);
    Some(Mounted {
        dir: PathBuf::from(unescape(fields.get(4)?)),
        store: PathBuf::from(store),
    })
}

fn unescape(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let octal = bytes
            .get(at + 1..at + 4)
            .filter(|d| bytes[at] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                at += 4;
            }
            None => {
                out.push(bytes[at]);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_path("resolve", path)
}

/// A folder whose daemon was killed answers every call with `ENOTCONN`: unmount it.
fn clear_dead_mount(dir: &Path) -> Result<()> {
    match std::fs::metadata(dir) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => unmount(dir),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mount_table_names_our_mounts_and_their_stores() {
        let line = "36 35 0:40 / /home/a/my\\040sessions ro,nosuid - fuse.ctxfold ctxfold:/home/a/.local/share/ctxfold ro,user_id=0";
        assert_eq!(
            parse_mountinfo(line),
            Some(Mounted {
                dir: PathBuf::from("/home/a/my sessions"),
                store: PathBuf::from("/home/a/.local/share/ctxfold"),
            })
        );
        let other = "22 1 8:1 / / rw - ext4 /dev/sda1 rw";
        assert_eq!(parse_mountinfo(other), None);
        let direct = "45 27 0:40 / /tmp/m ro,nosuid - fuse ctxfold:/tmp/s ro,user_id=0";
        assert_eq!(
            parse_mountinfo(direct).unwrap().store,
            PathBuf::from("/tmp/s")
        );
        let sshfs = "45 27 0:40 / /tmp/m rw - fuse.sshfs host:/x rw";
        assert_eq!(parse_mountinfo(sshfs), None);
        let tagged = "40 22 0:41 / /m rw shared:1 - fuse.ctxfold ctxfold:/s rw";
        assert_eq!(parse_mountinfo(tagged).unwrap().dir, PathBuf::from("/m"));
    }
}
