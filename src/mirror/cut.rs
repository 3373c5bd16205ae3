//! Files larger than a git host takes (GitHub refuses a file over 100 MB and warns over 50; an
//! aggressive gc makes one pack of the whole store), cut into parts: in the mirror such a file is a
//! tree of its own name holding blobs `part-000000`, `part-000001`, … of at most the cap each, and
//! reading it joins them. No store file is named `part-` and six digits, so a tree holding only
//! such blobs, numbered from zero without a gap, is a cut file and never a folder.
//!
//! The cap is the mirror's git config `ctxfold.maxFileSize` (bytes, or with a k, m or g suffix as
//! git's sizes), 50 MiB by default.

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::{GitContext, Mirror};
use crate::error::{Error, Result};

/// The cap when the mirror's configuration names none.
pub const DEFAULT_CAP: u64 = 50 << 20;

/// The configuration key of the cap.
pub const CAP_KEY: &str = "ctxfold.maxFileSize";

const PART: &str = "part-";

fn part_name(n: usize) -> String {
    format!("{PART}{n:06}")
}

/// Which part of a cut file the blob `name` is (`None`: not a part's name).
pub(crate) fn part_number(name: &str) -> Option<usize> {
    let digits = name.strip_prefix(PART)?;
    match digits.len() == 6 && digits.bytes().all(|b| b.is_ascii_digit()) {
        true => digits.parse().ok(),
        false => None,
    }
}

/// Where a file's blobs and trees go: the mirror's loose objects, or a pack being written.
pub(crate) trait Objects {
    fn blob(&mut self, bytes: &[u8]) -> Result<ObjectId>;
    /// A tree of unsorted entries.
    fn tree(&mut self, entries: Vec<Entry>) -> Result<ObjectId>;
}

/// The mirror's loose objects.
struct Loose<'a>(&'a Mirror);

impl Objects for Loose<'_> {
    fn blob(&mut self, bytes: &[u8]) -> Result<ObjectId> {
        Ok(self
            .0
            .repo()
            .write_blob(bytes)
            .git(|| "write a blob into git".into())?
            .detach())
    }

    fn tree(&mut self, entries: Vec<Entry>) -> Result<ObjectId> {
        self.0.write_tree(entries)
    }
}

/// Write a file's bytes into `objects`: one blob, or a tree of parts when they are over `cap`.
pub(crate) fn write_file(
    objects: &mut impl Objects,
    bytes: &[u8],
    cap: u64,
) -> Result<(EntryKind, ObjectId)> {
    if bytes.len() as u64 <= cap {
        return Ok((EntryKind::Blob, objects.blob(bytes)?));
    }
    let mut entries = Vec::new();
    for (n, part) in bytes.chunks(cap as usize).enumerate() {
        entries.push(Entry {
            mode: EntryKind::Blob.into(),
            filename: part_name(n).into(),
            oid: objects.blob(part)?,
        });
    }
    Ok((EntryKind::Tree, objects.tree(entries)?))
}

impl Mirror {
    /// The largest file the mirror holds in one blob.
    pub fn file_cap(&self) -> Result<u64> {
        let configured = self
            .repo()
            .config_snapshot()
            .try_integer(CAP_KEY)
            .map_err(|e| Error::usage(format!("{CAP_KEY} in {}: {e}", self.git_dir().display())))?;
        match configured {
            None => Ok(DEFAULT_CAP),
            Some(cap) if cap > 0 => Ok(cap as u64),
            Some(cap) => Err(Error::usage(format!(
                "{CAP_KEY} in {} is {cap}: it must be above 0",
                self.git_dir().display()
            ))),
        }
    }

    /// Write a file's bytes as loose objects: one blob, or a tree of parts when they are over `cap`.
    pub(crate) fn write_file(&self, bytes: &[u8], cap: u64) -> Result<(EntryKind, ObjectId)> {
        write_file(&mut Loose(self), bytes, cap)
    }

    /// Whether a tree entry is a file: a blob, or a tree that is a cut file.
    pub(crate) fn is_file(&self, entry: &Entry) -> Result<bool> {
        Ok(entry.mode.is_blob() || (entry.mode.is_tree() && self.parts(entry.oid)?.is_some()))
    }

    /// A file's bytes: a blob's, or a cut file's parts joined (`None`: a tree that is a folder).
    pub(crate) fn read_file(&self, id: ObjectId) -> Result<Option<Vec<u8>>> {
        let (kind, data) = self.object(id)?;
        if kind == gix::object::Kind::Blob {
            return Ok(Some(data));
        }
        let Some(parts) = self.parts(id)? else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        for part in parts {
            bytes.extend_from_slice(&self.object(part)?.1);
        }
        Ok(Some(bytes))
    }

    /// An object's kind and bytes. In a partial mirror a missing one is a blob it dropped (trees
    /// are always here), read through git; and gix is told not to look for new packs on a miss:
    /// every git fetch of a dropped blob adds one, and gix would load each into an index slot of
    /// its own until it had none left.
    fn object(&self, id: ObjectId) -> Result<(gix::object::Kind, Vec<u8>)> {
        let partial = (self.repo().config_snapshot())
            .string(super::partial::PARTIAL)
            .is_some();
        let mut objects = self.repo().objects.clone();
        if partial {
            objects.refresh_never();
        }
        let mut buffer = Vec::new();
        let found = gix::objs::Find::try_find(&objects, &id, &mut buffer)
            .git(|| format!("read object {id}"))?
            .map(|data| (data.kind, data.data.to_vec()));
        match (found, partial) {
            (Some(found), _) => Ok(found),
            (None, true) => Ok((
                gix::object::Kind::Blob,
                super::git::cat_blob(self.git_dir(), id)?,
            )),
            (None, false) => Err(Error::corrupt(format!(
                "object {id} is missing from the git mirror {}",
                self.git_dir().display()
            ))),
        }
    }

    /// The parts of a cut file, in order; `None` when the tree is not one.
    fn parts(&self, tree: ObjectId) -> Result<Option<Vec<ObjectId>>> {
        let mut entries: Vec<Entry> = self.entries(Some(tree))?.into_values().collect();
        entries.sort_by(|a, b| a.filename.cmp(&b.filename));
        let cut = !entries.is_empty()
            && entries
                .iter()
                .enumerate()
                .all(|(n, e)| e.mode.is_blob() && e.filename.as_slice() == part_name(n).as_bytes());
        Ok(cut.then(|| entries.into_iter().map(|e| e.oid).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_cap_is_cut_and_joined_back_and_a_folder_is_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mirror = Mirror::open_or_init(&dir.path().join("m.git")).unwrap();
        let bytes: Vec<u8> = (0..2500u32).map(|n| (n * 7 % 251) as u8).collect();
        let (kind, whole) = mirror.write_file(&bytes, 2500).unwrap();
        assert_eq!(kind, EntryKind::Blob);
        let (kind, cut) = mirror.write_file(&bytes, 1000).unwrap();
        assert_eq!(kind, EntryKind::Tree);
        let names: Vec<_> = mirror.entries(Some(cut)).unwrap().into_keys().collect();
        assert_eq!(names.len(), 3, "{names:?}");
        assert_eq!(mirror.read_file(cut).unwrap().unwrap(), bytes);
        assert_eq!(mirror.read_file(whole).unwrap().unwrap(), bytes);
        let folder = mirror
            .write_tree(vec![Entry {
                mode: EntryKind::Blob.into(),
                filename: "part-000001".into(),
                oid: whole,
            }])
            .unwrap();
        assert_eq!(mirror.read_file(folder).unwrap(), None);
        assert_eq!(mirror.file_cap().unwrap(), DEFAULT_CAP);
    }
}
