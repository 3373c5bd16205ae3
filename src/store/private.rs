//! A store is private or it is not used. One whose folders others can write (the group or other
//! write bit on the store's root, `manifests/` or `objects/`) lets anyone who can write there plant
//! a manifest or an object that fold, restore and sync would then trust as the user's own: it is
//! refused, with the command that fixes it.

use std::os::unix::fs::PermissionsExt;

use super::Store;
use crate::error::{Error, Result};

/// Refuse `store` if another user could write into it. Folders that do not exist yet pass.
pub fn check(store: &Store) -> Result<()> {
    for dir in [
        store.root().to_path_buf(),
        store.manifests_dir(),
        store.objects_dir(),
    ] {
        let Ok(meta) = std::fs::metadata(&dir) else {
            continue;
        };
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o022 != 0 {
            return Err(Error::refused(format!(
                "{} is writable by others (mode {mode:04o}), so anyone could plant a session in the store; \
                 make it private: chmod 700 {}",
                dir.display(),
                dir.display()
            )));
        }
    }
    Ok(())
}
