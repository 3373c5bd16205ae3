//! Files and folders as every layer of ctxfold writes them: folders created private, files
//! written atomically (a temp file renamed into place, made durable), removals that count "already
//! gone" as done, listings. Below the store and the object database, which both use it.

pub mod atomic;
pub mod writeback;
pub mod writers;

use std::borrow::Cow;
use std::fs::{self, DirBuilder};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::error::{Error, IoContext, Result};

/// Directories are created 0700 and files 0600: transcripts hold pasted secrets.
pub const DIR_MODE: u32 = 0o700;

/// Create `dir` (and parents) with mode 0700 where it does not exist yet.
pub fn create_private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory => {
                not_a_directory(dir)
            }
            _ => Error::io("create directory", dir, e),
        })
}

/// A path that must be a folder and is something else (a file where a store should be).
pub fn not_a_directory(path: &Path) -> Error {
    Error::refused(format!("{}: exists and is not a directory", path.display()))
}

/// The names of the entries of `dir` that are UTF-8, unsorted; a folder that does not exist has
/// none.
pub fn entry_names(dir: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_path("list", dir),
    };
    let mut names = Vec::new();
    for entry in entries {
        if let Ok(name) = entry.with_path("list", dir)?.file_name().into_string() {
            names.push(name);
        }
    }
    Ok(names)
}

/// Remove a file, treating "already gone" as done.
pub fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).with_path("remove", path),
        _ => Ok(()),
    }
}

/// `path` made absolute from the current folder (links not resolved), for paths kept or handed
/// on beyond the moment they were given; as given when the current folder cannot be read.
pub fn absolute(path: &Path) -> Cow<'_, Path> {
    match path.is_absolute() {
        true => Cow::Borrowed(path),
        false => std::path::absolute(path).map_or(Cow::Borrowed(path), Cow::Owned),
    }
}

/// The folder that holds `path`: `.` for a bare file name, whose parent is the empty path (which
/// opens as nothing: an fsync of it is an error, or is passed over as a folder gone).
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_of_a_bare_file_name_is_the_current_one() {
        assert_eq!(folder_of(Path::new("s.jsonl")), Path::new("."));
        assert_eq!(folder_of(Path::new("a/s.jsonl")), Path::new("a"));
        assert_eq!(folder_of(Path::new("/s.jsonl")), Path::new("/"));
        assert_eq!(folder_of(Path::new("/")), Path::new("."));
    }
}
