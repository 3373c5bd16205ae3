//! The packed manifests' table, `manifests/packed.json`: which object holds each packed manifest,
//! as git's `packed-refs` says which commit each packed ref names.
//!
//! ```text
//! {"format":"ctxfold packed manifests v1","note":"…"}
//! <sha256 of the body> <name>
//! ```
//!
//! Its name is a guard. A reader that knows no packed manifests (an older ctxfold, the reference
//! implementation) sees none of the packed sessions, and its gc would delete their objects; but it
//! takes every `manifests/*.json` for a manifest, finds this one invalid, and so refuses to gc (as
//! the contract's gc does while any manifest is invalid) and names the file, whose first line
//! says what it is. The session id `packed` is reserved for it (see `check_session_id`). The
//! first ctxfold to pack manifests named the table `manifests/packed`, which old readers skip:
//! it is still read, and the next change of the table replaces it by this one.
//!
//! One line per manifest, sorted by name, no name twice. A name is the manifest's path under
//! `manifests/` as it would be loose (`<id>.json`, `generations/<id>/<file>.json`), and the body
//! is that file's bytes, kept whole as an object in the object database (so it is packed and
//! compressed beside its session's objects, and dedupes across stores). A loose file of the same
//! name stands over the table's line, as a loose ref stands over `packed-refs`.
//!
//! The table is only ever replaced whole (a temp file, fsynced, renamed, the folder fsynced), and
//! only under the `manifests` lock: by gc, which packs loose manifests, and by whatever removes a
//! packed one (`rm`, generations dropped). Every body it names is durable before it is written.
//!
//! Not for: reading the bodies or choosing between the loose and packed forms (see `named`).

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Store, check_session_id};
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::write_file;

/// The table's file name in `manifests/`.
pub const FILE: &str = "packed.json";

/// The session id whose manifest's name would be [`FILE`].
pub const RESERVED_ID: &str = "packed";

/// The file name of the table as the first ctxfold to pack manifests wrote it.
const LEGACY_FILE: &str = "packed";

/// The first line of every table: what it is, and its format's version, as JSON, for the person
/// an older reader sends to this file.
const HEADER: &str = concat!(
    r#"{"format":"ctxfold packed manifests v1","note":"#,
    r#""not a manifest: this store keeps its manifests packed, which older ctxfold versions and "#,
    r#"the reference implementation cannot read; run `ctxfold unpack` first"}"#
);

/// The first line of a table in [`LEGACY_FILE`].
const LEGACY_HEADER: &str = "# ctxfold packed manifests v1";

/// Names of packed manifests and the objects that hold their bodies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    entries: BTreeMap<String, Digest>,
}

/// A table as read, and which file it was read from (what a `Store` keeps).
pub type Read = (Stamp, Arc<Table>);

/// Which file a cached table was read from: a table is replaced by a rename, never written in
/// place, so another inode (or size, or mtime) is another table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl Table {
    /// Parse a table; errors name `what` and the line.
    pub fn parse(text: &[u8], what: &str) -> Result<Self> {
        let bad = |line: usize, why: String| Error::corrupt(format!("{what}:{line}: {why}"));
        let text = std::str::from_utf8(text).map_err(|_| bad(1, "not UTF-8".into()))?;
        let mut lines = text.split_terminator('\n');
        if !matches!(lines.next(), Some(HEADER | LEGACY_HEADER)) {
            return Err(bad(
                1,
                format!("not a table of packed manifests ({HEADER:?})"),
            ));
        }
        let mut entries = BTreeMap::new();
        let mut last: Option<&str> = None;
        for (at, line) in lines.enumerate() {
            let number = at + 2;
            let (hex, name) = line
                .split_once(' ')
                .ok_or_else(|| bad(number, "not `<sha256> <name>`".into()))?;
            let digest = Digest::parse(hex)
                .ok_or_else(|| bad(number, format!("{hex:?} is not a sha256")))?;
            check_name(name).map_err(|why| bad(number, format!("{name:?}: {why}")))?;
            if last.is_some_and(|last| last >= name) {
                return Err(bad(number, format!("{name:?} is out of order or twice")));
            }
            last = Some(name);
            entries.insert(name.to_string(), digest);
        }
        Ok(Self { entries })
    }

    /// The table as its file holds it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("{HEADER}\n");
        for (name, digest) in &self.entries {
            out.push_str(&format!("{digest} {name}\n"));
        }
        out.into_bytes()
    }

    /// The body of the manifest named `name`, if packed.
    pub fn get(&self, name: &str) -> Option<Digest> {
        self.entries.get(name).copied()
    }

    /// Every packed manifest, by name, sorted.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Digest)> {
        self.entries.iter().map(|(name, d)| (name.as_str(), *d))
    }

    /// The lines after `name`, in order.
    pub fn after<'a>(&'a self, name: &str) -> impl Iterator<Item = (&'a str, Digest)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.entries
            .range::<str, _>((Excluded(name), Unbounded))
            .map(|(name, d)| (name.as_str(), *d))
    }

    /// The names under `prefix` (`generations/<id>/`), sorted.
    pub fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> {
        self.entries
            .range(prefix.to_string()..)
            .map(|(name, _)| name.as_str())
            .take_while(move |name| name.starts_with(prefix))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Name `body` as the manifest `name` (checked), replacing any line of that name.
    pub fn insert(&mut self, name: &str, body: Digest) -> Result<()> {
        check_name(name).map_err(|why| Error::refused(format!("{name:?}: {why}")))?;
        self.entries.insert(name.to_string(), body);
        Ok(())
    }

    /// Drop the line of `name`; whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        self.entries.remove(name).is_some()
    }
}

/// Why `name` cannot be a packed manifest's name: it must be `<id>.json` or
/// `generations/<id>/<file>.json`, each part a plain name (so that it is also a path that stays
/// inside `manifests/` when it is unpacked).
pub(super) fn check_name(name: &str) -> std::result::Result<(), String> {
    let plain = |part: &str| check_session_id(part).is_ok() && !part.contains(' ');
    let file = |part: &str| part.strip_suffix(".json").is_some_and(plain);
    let ok = match name.split('/').collect::<Vec<_>>().as_slice() {
        [one] => file(one),
        ["generations", id, one] => plain(id) && file(one),
        _ => false,
    };
    match ok {
        true => Ok(()),
        false => Err("not the name of a session's manifest or generation".into()),
    }
}

impl Store {
    /// `manifests/packed.json`.
    pub fn packed_path(&self) -> PathBuf {
        self.manifests_dir().join(FILE)
    }

    /// `manifests/packed`, where the first ctxfold to pack manifests kept the table.
    fn legacy_packed_path(&self) -> PathBuf {
        self.manifests_dir().join(LEGACY_FILE)
    }

    /// The table of packed manifests (empty when there is none), read again only when its file
    /// was replaced since the last read.
    pub fn packed(&self) -> Result<Arc<Table>> {
        let Some((path, meta)) = [self.packed_path(), self.legacy_packed_path()]
            .into_iter()
            .find_map(|path| match fs::metadata(&path) {
                Ok(meta) => Some(Ok((path, meta))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => Some(Err(e).with_path("stat", &path)),
            })
            .transpose()?
        else {
            return Ok(Arc::default());
        };
        let stamp = Stamp {
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        };
        let mut cached = self.packed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, table)) = cached.as_ref()
            && *at == stamp
        {
            return Ok(table.clone());
        }
        let bytes = fs::read(&path).with_path("read", &path)?;
        let table = Arc::new(Table::parse(&bytes, &path.display().to_string())?);
        *cached = Some((stamp, table.clone()));
        Ok(table)
    }

    /// Replace a table still in `manifests/packed` by the same table in `manifests/packed.json`,
    /// which older readers cannot pass over (see the module's note).
    pub fn migrate_legacy_packed(&self) -> Result<()> {
        match self.legacy_packed_path().exists() {
            true => self.change_packed(|_| Ok(())),
            false => Ok(()),
        }
    }

    /// Replace the table with what `change` makes of it, under the `manifests` lock: written
    /// whole into a temp file, fsynced, renamed over the old one and the folder fsynced, so a
    /// reader sees the old table or the new, and a crash leaves one of them. Every body the new
    /// table names must be durable already. Returns what `change` returned.
    pub fn change_packed<T>(&self, change: impl FnOnce(&mut Table) -> Result<T>) -> Result<T> {
        let _lock = self.lock_file(super::commit::MANIFESTS_LOCK)?;
        let mut table = Table::clone(&*self.packed()?);
        let before = table.clone();
        let answer = change(&mut table)?;
        let legacy = self.legacy_packed_path();
        if table != before || legacy.exists() {
            let path = self.packed_path();
            match table.is_empty() {
                true => {
                    crate::files::remove_if_present(&path)?;
                    crate::files::atomic::sync_parent(&path)?;
                }
                false => {
                    // A store the reference implementation wrote has no tmp/.
                    crate::files::create_private_dir(&self.tmp_dir())?;
                    write_file(&self.tmp_dir(), ".packed-", &path, &table.to_bytes(), true)
                        .map(drop)?
                }
            }
            // Only once the table stands where it is read first.
            if legacy.exists() {
                crate::files::remove_if_present(&legacy)?;
                crate::files::atomic::sync_parent(&legacy)?;
            }
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Digest {
        Digest::of(text.as_bytes())
    }

    #[test]
    fn a_table_reads_back_what_it_wrote() {
        let mut table = Table::default();
        table.insert("s2.json", d("b")).unwrap();
        table.insert("s1.json", d("a")).unwrap();
        table
            .insert(
                "generations/s1/20260512T101112.000000005Z-grown-0123456789ab.json",
                d("c"),
            )
            .unwrap();
        let bytes = table.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let head: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(head["format"], "ctxfold packed manifests v1", "{text}");
        assert_eq!(Table::parse(&bytes, "t").unwrap(), table);
        let names: Vec<&str> = table.iter().map(|(n, _)| n).collect();
        assert_eq!(names[1..], ["s1.json", "s2.json"]);
        let under: Vec<&str> = table.under("generations/s1/").collect();
        assert_eq!(under.len(), 1);
        assert_eq!(table.under("generations/s").count(), 1);
        assert_eq!(table.under("generations/s2/").count(), 0);
        assert!(table.remove("s1.json") && !table.remove("s1.json"));
        assert_eq!(
            Table::parse(b"# ctxfold packed manifests v1\n", "t")
                .unwrap()
                .len(),
            0
        );
    }

    #[test]
    fn a_table_that_is_not_one_is_refused_by_line() {
        let sha = d("a").to_hex();
        let refusal = |text: String| Table::parse(text.as_bytes(), "t").unwrap_err().to_string();
        let head = "# ctxfold packed manifests v1\n";
        assert!(refusal(format!("{sha} s.json\n")).contains("t:1: not a table"));
        assert!(refusal(format!("{head}{sha}s.json\n")).contains("t:2: not `<sha256> <name>`"));
        assert!(refusal(format!("{head}{} s.json\n", &sha[..63])).contains("t:2: \""));
        assert!(refusal(format!("{head}{} s.json\n", sha.to_uppercase())).contains("not a sha256"));
        for name in [
            "../x.json",
            "s",
            ".s.json",
            "conflicts/s@1.json",
            "generations/s.json",
            "a b.json",
        ] {
            let err = refusal(format!("{head}{sha} {name}\n"));
            assert!(err.contains("t:2:"), "{name}: {err}");
        }
        let twice = refusal(format!("{head}{sha} b.json\n{sha} a.json\n"));
        assert!(twice.contains("t:3: \"a.json\" is out of order"), "{twice}");
        let dup = refusal(format!("{head}{sha} a.json\n{sha} a.json\n"));
        assert!(dup.contains("t:3:"), "{dup}");
    }
}
