//! `ctxfold mount`: the store's sessions as a read-only filesystem (FUSE), as `restic mount` shows
//! snapshots: every folded session at `by-id/`, and under `codex/`, `pi/` and `claude/` at the
//! place its agent keeps it, as an agent's picker looks for them.
//!
//! [`tree`] is what is shown, built once from the manifests; [`session`] reads a session by
//! offset from its objects, checked; [`fs`] answers the kernel. Not for writing: nothing through a
//! mount changes the store.
//!
//! A mount is named `ctxfold:<store>` in the system's mount table (`/proc/self/mountinfo`), which
//! is how [`mounts_of`] finds the mounts of a store, and `unmount` a mount of ctxfold's.

pub mod fs;
pub mod session;
pub mod tree;

use std::path::{Path, PathBuf};

use fuser::{Config, MountOption, SessionACL};

use crate::error::{Error, IoContext, Result};
use crate::store::Store;

/// The filesystem types the kernel records for a mount of ours: `fuse.<subtype>` where the subtype
/// reaches it (through fusermount3), plain `fuse` where the mount call was made directly.
const FS_TYPES: [&str; 2] = ["fuse.ctxfold", "fuse"];

/// A mount about to be served: the tree built, the kernel's side made, nothing answered yet.
pub struct Mounting {
    session: fuser::Session<fs::SessionsFs>,
    dir: PathBuf,
    /// Manifests that could not be read, left out of the tree.
    pub problems: Vec<String>,
    pub sessions: usize,
}

/// Mount `store` at `dir` (an existing folder; a dead mount of ours left there by a killed
/// daemon is cleared first).
pub fn mount(store: &Store, dir: &Path) -> Result<Mounting> {
    clear_dead_mount(dir)?;
    let meta = std::fs::metadata(dir).with_path("stat", dir)?;
    if !meta.is_dir() {
        return Err(Error::usage(format!("{} is not a folder", dir.display())));
    }
    let tree = tree::Tree::of(store)?;
    let problems = tree.problems.clone();
    let sessions = std::fs::read_dir(store.manifests_dir())
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0);
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::RO,
        MountOption::NoExec,
        MountOption::NoSuid,
        MountOption::NoDev,
        MountOption::FSName(format!("ctxfold:{}", absolute(store.root())?.display())),
        MountOption::Subtype("ctxfold".into()),
    ];
    config.acl = SessionACL::Owner;
    config.n_threads = Some(2);
    let fs = fs::SessionsFs::new(store.clone(), tree);
    let session = fuser::Session::new(fs, dir, &config).map_err(|e| {
        let hint = match Path::new("/dev/fuse").exists() {
            true => "",
            false => " (this machine has no /dev/fuse: load the fuse module, or run where FUSE is)",
        };
        Error::io(format!("mount ctxfold at{hint}"), dir, e)
    })?;
    Ok(Mounting {
        session,
        dir: absolute(dir)?,
        problems,
        sessions,
    })
}

impl Mounting {
    /// Serve until the mount goes (`unmount`, `umount`, or `stop`'s doing): `stop` is handed what
    /// unmounts it, to call from another thread (a signal's). The unmount is lazy, as `umount -l`:
    /// the folder is free at once, and files open through it are served until they are closed.
    pub fn serve(self, stop: impl FnOnce(Box<dyn FnOnce() + Send>)) -> Result<()> {
        let dir = self.dir.clone();
        stop(Box::new(move || {
            let _ = rustix::mount::unmount(&dir, rustix::mount::UnmountFlags::DETACH);
        }));
        self.session
            .run()
            .map_err(|e| Error::system("serve the mount", e))
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
