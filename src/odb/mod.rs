//! The object database: the one owner of where and how objects live. Nothing else builds an object
//! path.
//!
//! An object is immutable bytes named by their sha256. It lives in one of three places, read in
//! this order: ctxfold's own packs ([`pack`], many objects per file in solid zstd blocks, the set
//! of a store's packs being [`packs`]), a loose file (the Fold V1 layout, [`loose`]), or, read-only,
//! the reference implementation's pack generation (`packs/CURRENT`, [`codexfold`]). Every read is
//! decoded as a stream, capped at the size its reference records, and checked against its name.
//! Writers make new objects durable before anything names them: [`Odb::sync`] for loose objects,
//! [`Odb::commit_pack`] for a pack. Which dictionaries frames may be written with, and how readers
//! find them, is [`dictionaries`]' job; zstd itself is [`codec`]'s.
//!
//! Removal keeps one rule, whoever removes (repack, gc, unpack, a sync's staging): a pack or a loose
//! file goes only through [`Odb::retire_pack`], [`Odb::retire_orphan_pack`] or
//! [`Odb::retire_loose`], which remove it only once every object in it that the operation keeps is
//! found in another file of the store (a pack left without its index, only while it has none). An
//! operation's result is never one of the files it removes, then, even when it comes out byte for
//! byte one of its sources (a pack is named by its content: a repack of a store packed already
//! writes the very pack it read, and removing its sources would remove it).

pub mod codec;
pub mod codexfold;
pub mod dictionaries;
pub mod dictionary;
mod extent;
mod loose;
pub mod pack;
pub mod packs;
pub mod repack;
pub mod unpack;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use crate::digest::Digest;
use crate::error::{Cause, Error, IoContext, Result};

pub use codec::{DEFAULT_LEVEL, Encoder};
use pack::{PackInfo, PackOptions, PackWriter};
pub use packs::Member;

/// What storing an object did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Its size on disk (compressed; for a packed object, its share of its block).
    pub stored_bytes: u64,
    /// True when this call wrote it; false when it was already in the store.
    pub created: bool,
}

/// Where an object lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In the ctxfold pack of this name.
    Pack(Digest),
    Loose,
    /// In the reference implementation's current pack generation.
    Codexfold,
}

/// An object found, with what it costs on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    pub place: Place,
    /// Compressed size (a packed object's share of its block).
    pub stored_bytes: u64,
}

/// Where a lookup looks (see [`Odb::reuse_unwritten`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Everywhere,
    /// Not in the packs this handle wrote, nor among loose files where there are none.
    NotWritten,
}

/// One entry of [`Odb::list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    Object {
        digest: Digest,
        place: Place,
    },
    /// A file among the loose objects that is not named as one (a temp file, or a stray).
    Stray(PathBuf),
    /// A pack, or the reference's generation, that does not open or list: its objects are
    /// unreadable.
    Broken {
        what: PathBuf,
        why: String,
    },
}

/// Whether a read hashes an object's bytes against its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Object,
    /// The caller hashes what it reads as a whole (a session against its manifest's sha256), and
    /// acts on nothing it read before that check.
    Whole,
    /// Packed objects against the checksum of their block's zstd frame, which every block
    /// ctxfold writes carries and a read checks once it decodes the block to its end (a whole
    /// block, or a large one's last object: every seed batch), not hashed: for readers of many
    /// megabytes who search them, what they pull back being checked on its own (a seed index,
    /// whose spans are verified against their sha256) or the whole they belong to hashed before
    /// they act (a session's ledger pass). An index that lies about where an object lies in its
    /// block goes unseen here (fsck --full sees it). Loose objects and the reference's are hashed
    /// still: their frames carry no other check.
    Frame,
}

/// A handle on a store's objects. Cheap to clone; clones share their caches and open packs.
#[derive(Clone)]
pub struct Odb {
    root: PathBuf,
    loose: loose::Loose,
    packs: Arc<packs::PackSet>,
    codexfold: Arc<OnceLock<std::result::Result<Option<codexfold::Generation>, String>>>,
    dictionaries: dictionaries::Cache,
}

impl std::fmt::Debug for Odb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Odb({})", self.root.display())
    }
}

impl Odb {
    /// The objects of the store at `root` (which may not exist yet; nothing is touched).
    pub fn at(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            loose: loose::Loose::new(root.join("objects"), root.join("tmp")),
            packs: Arc::new(packs::PackSet::new(root.join(pack::DIR))),
            codexfold: Arc::default(),
            dictionaries: dictionaries::Cache::default(),
        }
    }

    /// The same objects seen through their loose files alone: what a reader of the plain Fold V1
    /// layout sees (unpack checks every manifest through it before removing any pack).
    pub fn loose_only(&self) -> Odb {
        Self {
            packs: Arc::new(packs::PackSet::blind(self.packs.dir().to_path_buf())),
            codexfold: Arc::new(OnceLock::from(Ok(None))),
            ..self.clone()
        }
    }

    /// The folder loose objects live in (for the store's skeleton and the git mirror).
    pub fn loose_dir(&self) -> &Path {
        self.loose.dir()
    }

    /// The folder ctxfold's packs live in.
    pub fn packs_dir(&self) -> &Path {
        self.packs.dir()
    }

    /// Where `digest` is and what it takes on disk, or `None` when the store lacks it. Packs that
    /// appeared since this handle listed them are not seen (see [`Odb::read`]).
    pub fn locate(&self, digest: &Digest) -> Result<Option<Found>> {
        Ok(self
            .locate_in(digest, Scope::Everywhere)?
            .map(|(found, _)| found))
    }

    /// [`Odb::locate`] within `scope`, with the pack member found in.
    fn locate_in(
        &self,
        digest: &Digest,
        scope: Scope,
    ) -> Result<Option<(Found, Option<Arc<Member>>)>> {
        let packed = match scope {
            Scope::Everywhere => self.packs.find(digest)?,
            Scope::NotWritten => self.packs.find_not_written(digest)?,
        };
        if let Some((member, at)) = packed {
            let block = member.pack.block(at.block)?;
            // A packed object's share of its block, rounded up: what `ls` and `stats` add up.
            let share = (u128::from(block.stored_bytes) * u128::from(at.raw_bytes))
                .div_ceil(u128::from(block.raw_bytes.max(1))) as u64;
            let found = Found {
                place: Place::Pack(*member.pack.name()),
                stored_bytes: share,
            };
            return Ok(Some((found, Some(member))));
        }
        let loose = scope == Scope::Everywhere || self.loose.may_hold_any()?;
        if loose && let Some(stat) = self.loose.stat(digest)? {
            let found = Found {
                place: Place::Loose,
                stored_bytes: stat.stored_bytes,
            };
            return Ok(Some((found, None)));
        }
        if let Some(generation) = self.codexfold()
            && generation.find(digest)?.is_some()
        {
            let found = Found {
                place: Place::Codexfold,
                stored_bytes: 0,
            };
            return Ok(Some((found, None)));
        }
        Ok(None)
    }

    /// The pack holding `digest` and where in it, for reading many objects block by block;
    /// `None` when no pack this handle lists holds it (it may be loose, the reference's, or in a
    /// pack added since: [`Odb::read_checked`] finds those).
    pub fn packed(&self, digest: &Digest) -> Result<Option<(Arc<Member>, pack::Location)>> {
        self.packs.find(digest)
    }

    /// The compressed size of a present object, or `None` when it is missing.
    pub fn stored_bytes(&self, digest: &Digest) -> Result<Option<u64>> {
        Ok(self.locate(digest)?.map(|f| f.stored_bytes))
    }

    pub fn contains(&self, digest: &Digest) -> Result<bool> {
        Ok(self.locate(digest)?.is_some())
    }

    /// A writer about to name `digest` in a manifest without writing it again: where it is, with
    /// its loose file or its pack touched, so that gc's grace period counts from this use.
    pub fn reuse(&self, digest: &Digest) -> Result<Option<Found>> {
        self.reuse_in(digest, Scope::Everywhere)
    }

    /// [`Odb::reuse`] for a writer that remembers every object it packed through this handle (a
    /// fold's claims): the packs this handle wrote are not searched, nor loose files in a store
    /// that has none (see [`loose::Loose::may_hold_any`]). What else those packs hold (seed
    /// batches) is not deduplicated against.
    pub fn reuse_unwritten(&self, digest: &Digest) -> Result<Option<Found>> {
        self.reuse_in(digest, Scope::NotWritten)
    }

    fn reuse_in(&self, digest: &Digest, scope: Scope) -> Result<Option<Found>> {
        let Some((found, member)) = self.locate_in(digest, scope)? else {
            return Ok(None);
        };
        match (member, found.place) {
            (Some(member), _) => member.touch(),
            (None, Place::Loose) => self.loose.touch(digest)?,
            (None, _) => {}
        }
        Ok(Some(found))
    }

    /// When an unreferenced loose object was last written or reused, and its size: what gc
    /// decides by (a packed object goes by its pack's mtime, see [`Member::modified`]).
    pub fn loose_modified(&self, digest: &Digest) -> Result<Option<(SystemTime, u64)>> {
        Ok(self
            .loose
            .stat(digest)?
            .map(|s| (s.modified, s.stored_bytes)))
    }

    /// Store `raw`, already hashed to `digest`, as a loose object. An object that is present
    /// anywhere is not written again; it is touched instead (see [`Odb::reuse`]). Not durable
    /// until [`Odb::sync`].
    pub fn put(&self, digest: &Digest, raw: &[u8], encoder: &mut Encoder) -> Result<Stored> {
        if let Some(found) = self.reuse(digest)? {
            return Ok(Stored {
                stored_bytes: found.stored_bytes,
                created: false,
            });
        }
        self.loose.put(digest, raw, encoder)
    }

    /// Store everything `input` yields as one loose object, streaming: memory stays constant
    /// however large the input. Returns its name, raw size and what storing did.
    pub fn put_streaming(
        &self,
        input: &mut dyn Read,
        what: &str,
        level: i32,
    ) -> Result<(Digest, u64, Stored)> {
        self.loose.put_streaming(input, what, level)
    }

    /// Keep at most `bytes` of decoded pack blocks from now on. The default serves restores,
    /// whose objects come from blocks all over the store; a reader that takes each block's objects
    /// in one go (recall over the seed index) needs a few blocks, and a larger cache only gives
    /// it fresh pages to fault in.
    pub fn set_block_cache(&self, bytes: usize) {
        self.packs.set_block_cache(bytes);
    }

    /// Make every loose object written so far durable (one `syncfs` rather than an fsync per
    /// object).
    pub fn sync(&self) -> Result<()> {
        let dir = File::open(&self.root).with_path("open", &self.root)?;
        rustix::fs::syncfs(&dir)
            .map_err(|e| Error::io("sync the filesystem of", &self.root, e.into()))
    }

    /// How new packs are written: the defaults (or `repack --aggressive`'s), with the store's
    /// current dictionary.
    pub fn pack_options(&self, aggressive: bool) -> Result<PackOptions> {
        let base = if aggressive {
            PackOptions::aggressive()
        } else {
            PackOptions::default()
        };
        Ok(PackOptions {
            dictionary: self.current_dictionary_bytes()?.map(|(_, bytes)| bytes),
            ..base
        })
    }

    /// A writer for a new pack; nothing is visible until [`Odb::commit_pack`].
    pub fn pack_writer(&self, options: PackOptions) -> Result<PackWriter> {
        let tmp = self.root.join("tmp");
        crate::files::create_private_dir(&tmp)?;
        PackWriter::new(&tmp, options)
    }

    /// Put a written pack in place durably (pack, then index, each fsynced, the folder fsynced) and
    /// make its objects readable through this handle. Only then may a manifest name them.
    pub fn commit_pack(&self, writer: PackWriter) -> Result<Option<PackInfo>> {
        let info = writer.finish(self.packs.dir())?;
        if let Some(info) = &info {
            self.packs.add(&info.name, true)?;
        }
        Ok(info)
    }

    /// Whether this store holds the pack `name` (in place, its index too).
    pub fn has_pack(&self, name: &Digest) -> Result<bool> {
        Ok(pack::list(self.packs.dir())?.contains(name))
    }

    /// Open the pack `name`, which must be in place, and add it to the packs this handle reads.
    pub fn open_pack(&self, name: &Digest) -> Result<Arc<Member>> {
        self.packs.add(name, false)?;
        self.packs
            .members()?
            .into_iter()
            .find(|m| m.pack.name() == name)
            .ok_or_else(|| Error::object_missing(*name))
    }

    /// Take pack `name` from `other` (a staging store on this filesystem) by hard links, the pack
    /// before its index, the folder fsynced; returns how many objects it holds.
    pub fn adopt_pack(&self, other: &Odb, name: &Digest) -> Result<u64> {
        let dir = self.packs.dir();
        crate::files::create_private_dir(dir)?;
        for path in [pack::pack_path, pack::index_path] {
            let (from, to) = (path(other.packs.dir(), name), path(dir, name));
            match std::fs::hard_link(&from, &to) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(e).with_path("add pack", &to);
                }
                _ => {}
            }
        }
        crate::files::atomic::sync_dir(dir)?;
        Ok(u64::from(self.open_pack(name)?.pack.object_count()))
    }

    /// Every pack that opened (repack, gc, fsck and stats go through them).
    pub fn packs(&self) -> Result<Vec<Arc<Member>>> {
        self.packs.members()
    }

    /// Remove pack `name` once every object of it that `keeps` is held in another file of the
    /// store (see the module's rule); returns whether it was removed. A pack that does not open
    /// holds nothing readable, and goes as asked. Its index goes first, so that a crash leaves a
    /// pack without an index, which no reader sees and gc removes.
    pub fn retire_pack(&self, name: &Digest, keeps: impl Fn(&Digest) -> bool) -> Result<bool> {
        self.packs.refresh()?;
        if let Some(member) = self.packs.members()?.iter().find(|m| m.pack.name() == name) {
            for at in member.pack.objects() {
                let digest = at?.digest;
                if keeps(&digest) && !self.held_outside(&digest, Some(name))? {
                    return Ok(false);
                }
            }
        }
        self.packs.forget(name);
        let dir = self.packs.dir();
        crate::files::remove_if_present(&pack::index_path(dir, name))?;
        crate::files::remove_if_present(&pack::pack_path(dir, name))?;
        crate::files::atomic::sync_parent(&pack::pack_path(dir, name))?;
        Ok(true)
    }

    /// Remove `path`, a pack file whose index was missing (an interrupted write), unless its index
    /// is there now: a repack since wrote that very pack, which must stay (see the module's rule).
    /// Returns whether it was removed.
    pub fn retire_orphan_pack(&self, path: &Path) -> Result<bool> {
        if path.with_extension("idx").exists() {
            return Ok(false);
        }
        crate::files::remove_if_present(path)?;
        Ok(true)
    }

    /// Remove the loose file of `digest` when the operation drops the object (`keep` false), or
    /// once a pack holds it (see the module's rule); returns whether it was removed.
    pub fn retire_loose(&self, digest: &Digest, keep: bool) -> Result<bool> {
        if keep && !self.held_outside(digest, None)? {
            return Ok(false);
        }
        self.loose.remove(digest)?;
        Ok(true)
    }

    /// Whether a pack other than `not_in` holds `digest`, or, when a pack is being retired, a
    /// loose file or the reference's generation does.
    fn held_outside(&self, digest: &Digest, not_in: Option<&Digest>) -> Result<bool> {
        for member in self.packs.members()? {
            if Some(member.pack.name()) != not_in && member.pack.find(digest).is_some() {
                return Ok(true);
            }
        }
        if not_in.is_none() {
            return Ok(false);
        }
        if self.loose.stat(digest)?.is_some() {
            return Ok(true);
        }
        match self.codexfold() {
            Some(generation) => Ok(generation.find(digest)?.is_some()),
            None => Ok(false),
        }
    }

    /// Everything wrong with one pack, each problem naming the pack, the block and the objects.
    pub fn verify_pack(&self, member: &Member) -> Vec<pack::Problem> {
        pack::verify(&member.pack, self)
    }

    /// Everything wrong with the reference's current generation (nothing when there is none).
    pub fn verify_codexfold(&self) -> Vec<codexfold::Problem> {
        self.codexfold().map(|g| g.verify()).unwrap_or_default()
    }

    /// Stream an object's raw bytes into `out`, checking them against its name and, when given,
    /// against `expected` bytes (decoding stops one byte past it). Returns the raw size.
    ///
    /// Bytes reach `out` before the final check: callers that must not expose unverified bytes
    /// write into a temp file or buffer and act on the result. Write failures name no target:
    /// callers name it with [`Error::on_target`].
    pub fn read(&self, digest: &Digest, expected: Option<u64>, out: &mut dyn Write) -> Result<u64> {
        self.read_checked(digest, expected, out, Check::Object)
    }

    /// [`Odb::read`], with packed objects hashed only when `check` says so (loose objects and the
    /// reference's always are: their frames carry no other check).
    pub fn read_checked(
        &self,
        digest: &Digest,
        expected: Option<u64>,
        out: &mut dyn Write,
        check: Check,
    ) -> Result<u64> {
        if let Some(n) = self.read_from_packs(digest, expected, out, check)? {
            return Ok(n);
        }
        if let Some(n) = self.read_loose_if_present(digest, expected, out)? {
            return Ok(n);
        }
        if let Some(generation) = self.codexfold()
            && generation.find(digest)?.is_some()
        {
            return generation.read(digest, expected, out);
        }
        // Another process may have packed it since this handle listed the packs.
        if self.packs.refresh()?
            && let Some(n) = self.read_from_packs(digest, expected, out, check)?
        {
            return Ok(n);
        }
        // It may be in a pack that does not open: say so, the pack is what needs repair.
        match self.packs.broken()?.first() {
            Some((name, why)) => Err(Error::object_missing(*digest).context(format_args!(
                "pack {} does not open ({why})",
                pack::pack_path(self.packs.dir(), name).display()
            ))),
            None => Err(Error::object_missing(*digest)),
        }
    }

    /// Read the loose copy of an object, whatever other copies exist (fsck checks each).
    pub fn read_loose(
        &self,
        digest: &Digest,
        expected: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<u64> {
        self.read_loose_if_present(digest, expected, out)?
            .ok_or_else(|| Error::object_missing(*digest))
    }

    fn read_loose_if_present(
        &self,
        digest: &Digest,
        expected: Option<u64>,
        out: &mut dyn Write,
    ) -> Result<Option<u64>> {
        let Some(file) = self.loose.open(digest)? else {
            return Ok(None);
        };
        let (header, id) = self.loose.frame_dictionary(&file)?;
        let dictionary = match id {
            Some(id) => Some(
                self.decoder_dictionary(id)
                    .map_err(|e| e.context(format_args!("object {digest}")))?,
            ),
            None => None,
        };
        self.loose
            .read(digest, header, file, dictionary.as_ref(), expected, out)
            .map(Some)
    }

    fn read_from_packs(
        &self,
        digest: &Digest,
        expected: Option<u64>,
        out: &mut dyn Write,
        check: Check,
    ) -> Result<Option<u64>> {
        let Some((member, at)) = self.packs.find(digest)? else {
            return Ok(None);
        };
        match member.pack.read(&at, expected, out, self, check) {
            Ok(n) => Ok(Some(n)),
            // A damaged block names the pack and block; say which object was wanted too.
            Err(e) => match e.cause() {
                Cause::ObjectCorrupt { digest: named, .. } if named == digest => Err(e),
                Cause::Write { .. } => Err(e),
                _ => Err(Error::object_corrupt(*digest, e.to_string())),
            },
        }
    }

    /// An object's raw bytes in memory, verified. Memory grows with what the object really holds,
    /// never with what a manifest claims.
    pub fn read_to_vec(&self, digest: &Digest, expected: Option<u64>) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.read(digest, expected, &mut bytes)?;
        Ok(bytes)
    }

    /// Every object, in each place it lives (an object both packed and loose is listed twice),
    /// then what could not be listed. Packs in name order, then loose objects, then the reference's
    /// generation.
    pub fn list(&self) -> Result<impl Iterator<Item = Listed> + '_> {
        let packed = self.packs.members()?.into_iter().flat_map(|member| {
            let name = *member.pack.name();
            let what = member.pack.path().to_path_buf();
            (0..member.pack.object_count()).map(move |nth| {
                match member.pack.object_in_pack_order(nth) {
                    Ok(at) => Listed::Object {
                        digest: at.digest,
                        place: Place::Pack(name),
                    },
                    Err(e) => Listed::Broken {
                        what: what.clone(),
                        why: e.to_string(),
                    },
                }
            })
        });
        let broken = self
            .packs
            .broken()?
            .into_iter()
            .map(|(name, why)| Listed::Broken {
                what: pack::pack_path(self.packs.dir(), &name),
                why,
            });
        let loose = self.loose.list()?.map(|entry| match entry {
            Ok(digest) => Listed::Object {
                digest,
                place: Place::Loose,
            },
            Err(path) => Listed::Stray(path),
        });
        let generation: Box<dyn Iterator<Item = Listed>> = match self.generation() {
            Ok(None) => Box::new(std::iter::empty()),
            Ok(Some(generation)) => {
                let dir = generation.dir().to_path_buf();
                Box::new(generation.objects().map(move |digest| match digest {
                    Ok(digest) => Listed::Object {
                        digest,
                        place: Place::Codexfold,
                    },
                    Err(e) => Listed::Broken {
                        what: dir.clone(),
                        why: e.to_string(),
                    },
                }))
            }
            Err(why) => Box::new(std::iter::once(Listed::Broken {
                what: self.root.join(codexfold::DIR).join(codexfold::CURRENT),
                why: why.clone(),
            })),
        };
        Ok(packed.chain(broken).chain(loose).chain(generation))
    }

    /// Where a loose object's file is (for what reports on the loose layout itself: the git
    /// mirror, which carries the files as they are, and benchmarks).
    pub fn loose_path(&self, digest: &Digest) -> PathBuf {
        self.loose.path(digest)
    }

    /// The reference implementation's current generation, opened on first use: `None` when the
    /// store has none, or when it does not open (no source of objects then; [`Odb::list`] says
    /// why).
    fn codexfold(&self) -> Option<&codexfold::Generation> {
        self.generation().as_ref().ok()?.as_ref()
    }

    fn generation(&self) -> &std::result::Result<Option<codexfold::Generation>, String> {
        self.codexfold
            .get_or_init(|| codexfold::Generation::open(&self.root).map_err(|e| e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn odb() -> (tempfile::TempDir, Odb) {
        let dir = tempfile::tempdir().unwrap();
        crate::store::Store::init(dir.path().join("s")).unwrap();
        let odb = Odb::at(&dir.path().join("s"));
        (dir, odb)
    }

    #[test]
    fn put_then_read_round_trips_and_dedupes() {
        let (_dir, odb) = odb();
        let mut enc = Encoder::new(3).unwrap();
        let raw = b"hello hello hello hello".repeat(100);
        let d = Digest::of(&raw);
        let first = odb.put(&d, &raw, &mut enc).unwrap();
        assert!(first.created);
        assert!(first.stored_bytes < raw.len() as u64);
        let again = odb.put(&d, &raw, &mut enc).unwrap();
        assert_eq!(
            again,
            Stored {
                stored_bytes: first.stored_bytes,
                created: false
            }
        );
        assert_eq!(odb.read_to_vec(&d, Some(raw.len() as u64)).unwrap(), raw);
        let listed: Vec<_> = odb.list().unwrap().collect();
        assert_eq!(
            listed,
            vec![Listed::Object {
                digest: d,
                place: Place::Loose
            }]
        );
        assert_eq!(fs::read_dir(odb.root.join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn packed_objects_are_found_read_listed_and_go_with_their_pack() {
        let (_dir, odb) = odb();
        let objects: Vec<Vec<u8>> = (0..50u32)
            .map(|i| {
                format!("object {i} ")
                    .repeat(i as usize * 20 + 1)
                    .into_bytes()
            })
            .collect();
        let mut writer = odb.pack_writer(PackOptions::default()).unwrap();
        for raw in &objects {
            writer.add(&Digest::of(raw), raw).unwrap();
        }
        // Nothing is visible before the commit.
        assert!(!odb.contains(&Digest::of(&objects[0])).unwrap());
        let info = odb.commit_pack(writer).unwrap().unwrap();
        for raw in &objects {
            let d = Digest::of(raw);
            let found = odb.locate(&d).unwrap().unwrap();
            assert_eq!(found.place, Place::Pack(info.name));
            assert!(found.stored_bytes > 0);
            assert_eq!(odb.read_to_vec(&d, Some(raw.len() as u64)).unwrap(), *raw);
        }
        // Another handle sees the pack; a put of a packed object writes nothing loose.
        let other = Odb::at(&odb.root);
        let d = Digest::of(&objects[7]);
        let stored = other
            .put(&d, &objects[7], &mut Encoder::new(3).unwrap())
            .unwrap();
        assert!(!stored.created);
        assert!(!other.loose_path(&d).exists());
        let listed: Vec<Listed> = other.list().unwrap().collect();
        assert_eq!(listed.len(), objects.len());
        assert!(
            listed.iter().all(
                |l| matches!(l, Listed::Object { place: Place::Pack(p), .. } if *p == info.name)
            )
        );
        // Kept while it alone holds objects the caller keeps; gone once it keeps none.
        assert!(!odb.retire_pack(&info.name, |_| true).unwrap());
        assert_eq!(odb.read_to_vec(&d, None).unwrap(), objects[7]);
        assert!(odb.retire_pack(&info.name, |_| false).unwrap());
        let err = odb.read_to_vec(&d, None).unwrap_err();
        assert_eq!(err.to_string(), format!("object {d} is missing"));
        // A handle that had the pack open keeps reading it (its files stay open, as in git).
        assert_eq!(other.read_to_vec(&d, None).unwrap(), objects[7]);
    }

    #[test]
    fn a_writer_remembering_its_packs_is_found_only_what_others_stored() {
        let (_dir, odb) = odb();
        let mut enc = Encoder::new(3).unwrap();
        let (packed, loose, later) = (b"packed".repeat(9), b"loose".repeat(9), b"later".repeat(9));
        let mut writer = odb.pack_writer(PackOptions::default()).unwrap();
        writer.add(&Digest::of(&packed), &packed).unwrap();
        let info = odb.commit_pack(writer).unwrap().unwrap();
        // The pack this handle wrote is passed over; another handle lists it, and finds it there.
        assert_eq!(odb.reuse_unwritten(&Digest::of(&packed)).unwrap(), None);
        let found = odb.reuse(&Digest::of(&packed)).unwrap().unwrap();
        assert_eq!(found.place, Place::Pack(info.name));
        let other = Odb::at(&odb.root);
        assert_eq!(
            other.reuse_unwritten(&Digest::of(&packed)).unwrap(),
            Some(found)
        );
        // No loose object at the first look: none is looked for, until this handle writes one.
        assert_eq!(other.reuse_unwritten(&Digest::of(&loose)).unwrap(), None);
        odb.put(&Digest::of(&loose), &loose, &mut enc).unwrap();
        assert_eq!(other.reuse_unwritten(&Digest::of(&loose)).unwrap(), None);
        assert!(other.reuse(&Digest::of(&loose)).unwrap().is_some());
        other.put(&Digest::of(&later), &later, &mut enc).unwrap();
        for d in [Digest::of(&loose), Digest::of(&later)] {
            let found = other.reuse_unwritten(&d).unwrap().unwrap();
            assert_eq!(found.place, Place::Loose);
        }
        // A handle whose first look finds loose objects looks for each.
        let third = Odb::at(&odb.root);
        let found = third.reuse_unwritten(&Digest::of(&loose)).unwrap().unwrap();
        assert_eq!(found.place, Place::Loose);
    }

    #[test]
    fn reads_refuse_wrong_bytes_and_name_missing_objects() {
        let (_dir, odb) = odb();
        let raw = vec![7u8; 10_000];
        let d = Digest::of(&raw);
        odb.put(&d, &raw, &mut Encoder::new(3).unwrap()).unwrap();
        // Another object's bytes under this name.
        let other = zstd::encode_all(&b"other"[..], 3).unwrap();
        fs::write(odb.loose_path(&d), other).unwrap();
        let err = odb.read_to_vec(&d, None).unwrap_err();
        assert!(err.to_string().contains("hash to"), "{err}");
        let missing = Digest::of(b"nope");
        let err = odb.read_to_vec(&missing, None).unwrap_err();
        assert_eq!(err.to_string(), format!("object {missing} is missing"));
    }
}
