//! The mirror repository is as private as the store it mirrors (transcripts hold secrets),
//! whatever the umask. ctxfold itself runs with umask 077 (see `cli::run_process`), so what it and
//! the git it runs write is owner-only; a repository made before that, or by someone else, has
//! its modes fixed once; and `core.sharedRepository = 0600`, git's own setting for a repository's
//! modes, keeps what a git the user runs in it later writes (a `git gc`, say) owner-only too.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::GitContext;
use crate::error::{IoContext, Result};

/// The value of `core.sharedRepository`: files 0600 (0400 read-only), folders 0700.
pub const SHARED_REPOSITORY: &str = "0600";

/// Whether `repo` is set up private already.
pub fn is_private(repo: &gix::Repository) -> bool {
    repo.config_snapshot()
        .string("core.sharedRepository")
        .is_some_and(|v| **v == *SHARED_REPOSITORY.as_bytes())
}

/// Set `core.sharedRepository` in the repository at `git_dir` and take every group and other
/// permission off what it holds.
pub fn make_private(repo: &gix::Repository) -> Result<()> {
    let git_dir = repo.git_dir();
    let config = git_dir.join("config");
    let mut file = repo
        .config_file_mut(&config)
        .git(|| format!("open {}", config.display()))?;
    file.set_raw_value("core.sharedRepository", SHARED_REPOSITORY)
        .git(|| format!("set core.sharedRepository in {}", config.display()))?;
    file.commit()
        .git(|| format!("write {}", config.display()))?;
    owner_only(git_dir)
}

/// Keep only the owner's permission bits on `path` and everything under it (symbolic links are
/// not followed).
fn owner_only(path: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(path).with_path("stat", path)?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o700))
            .with_path("make private", path)?;
    }
    if meta.is_dir() {
        for entry in fs::read_dir(path).with_path("list", path)? {
            owner_only(&entry.with_path("list", path)?.path())?;
        }
    }
    Ok(())
}
