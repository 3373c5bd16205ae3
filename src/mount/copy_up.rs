//! A folded session made a real file, as the first write to it through an agents mount needs:
//! restored beside its place, verified whole against its manifest, given the mtime fold saw, made
//! durable and renamed into place, exactly as `ctxfold restore` does, so that the write goes on on
//! an ordinary file and nothing is ever written into the store.

use std::path::Path;

use super::tree::File;
use crate::error::Result;
use crate::store::Store;
use crate::store::by_block;
use crate::store::reconstruct::begin_beside;

/// Restore the session `file` shows to `target` (a path in the real tree, whose folders are made
/// as needed). A target that holds its bytes already is left as it is; one that holds others is
/// an error, never overwritten.
pub fn copy_up(store: &Store, file: &File, target: &Path) -> Result<()> {
    let manifest = Store::load_manifest_file(&file.manifest)?;
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
