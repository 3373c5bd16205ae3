//! A folded session made a real file, as the first write to it through an agents mount needs:
//! restored beside its place, verified whole against its manifest, given the mtime fold saw, made
//! durable and renamed into place, exactly as `ctxfold restore` does, so that the write goes on on
//! an ordinary file and nothing is ever written into the store.
//!
//! Where the mount holds a decoded copy of the session ([`super::copies`]), that copy is made the
//! real file instead, once checked whole the same way: nothing is decoded again, and readers the
//! kernel passes through to the copy and the writer then share one file, as the kernel requires.

use std::fs::File as OsFile;
use std::path::Path;
use std::sync::Arc;

use super::tree::File;
use crate::error::{IoContext, Result};
use crate::files::atomic::{link, sync_parent};
use crate::store::Store;
use crate::store::by_block;
use crate::store::manifest::Manifest;
use crate::store::reconstruct::begin_beside;

/// Restore the session `file` shows to `target` (a path in the real tree, whose folders are made
/// as needed), from `copy` where one is given and holds it. A target that holds its bytes already
/// is left as it is; one that holds others is an error, never overwritten.
pub fn copy_up(store: &Store, file: &File, target: &Path, copy: Option<Arc<OsFile>>) -> Result<()> {
    let manifest = super::session::listed_manifest(store, &file.manifest)?;
    if let Some(copy) = copy
        && link_copy(&copy, &manifest, target)?
    {
        return Ok(());
    }
    let Some(beside) = begin_beside(&manifest, target, false)? else {
        return Ok(());
    };
    let session = by_block::Session {
        manifest: &manifest,
        file: beside.file(),
        target,
    };
    if let Some(failed) = by_block::write_sessions(store, &[session]).pop() {
        failed?;
    }
    beside.keep_mtime(&manifest)?;
    beside.commit(&manifest)?;
    Ok(())
}

/// Make the unnamed `copy` the file at `target`, as a restore would leave it: checked whole
/// against the manifest, given the mtime fold saw, durable, then linked (never over a file, and
/// its folder made durable). False where it cannot be: it does not hold the session, it is on
/// another disk, or something is at `target` already (which a restore then looks at).
fn link_copy(copy: &OsFile, manifest: &Manifest, target: &Path) -> Result<bool> {
    use std::os::fd::AsRawFd;
    // Its own open, to read from the start whatever offset the copy's descriptor is at.
    let by = std::path::PathBuf::from(format!("/proc/self/fd/{}", copy.as_raw_fd()));
    let reader = OsFile::open(&by).with_path("open", &by)?;
    let (sha256, bytes) = crate::digest::hash_reader(reader).with_path("read", &by)?;
    if (sha256, bytes) != (manifest.source.sha256, manifest.source.bytes) {
        return Ok(false);
    }
    if let Some(at) = manifest.session.modified() {
        copy.set_modified(at)
            .with_path("set the mtime of", target)?;
    }
    copy.sync_all().with_path("fsync", target)?;
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::files::create_private_dir(dir)?;
    }
    match link(copy, target) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EXDEV | libc::EEXIST | libc::ENOENT)
            ) =>
        {
            return Ok(false);
        }
        Err(e) => return Err(crate::error::Error::io("link", target, e)),
    }
    sync_parent(target)?;
    Ok(true)
}
