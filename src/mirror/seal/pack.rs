//! The objects of one sealed commit written straight into one pack of the mirror, not as loose
//! objects: a sealed blob is encrypted (nothing compresses it, nothing deltas against it), so it is
//! stored in the pack as it is (zlib level 0), `git push` sends it from there without compressing it
//! again, and the mirror has no second set of loose objects to pack after the sync (which took more
//! time than the sealing itself). The plain files opened from a sealed tree go into one pack too
//! (compressed at zlib's fastest level: manifests compress), as a fetch's objects would.
//!
//! The pack is written to a temporary file that is deleted when closed (nothing is left behind by a
//! kill), then streamed to `git index-pack --stdin`, which checks every object, writes the pack and
//! its index into `objects/pack/` and makes them visible together. Objects the mirror holds already,
//! or that this pack holds already, are not written again. Until `finish` the objects exist only in
//! the temporary file: nothing may refer to them from a ref before.

use std::collections::HashSet;
use std::io::{BufWriter, Read, Seek, Write};
use std::process::{Command, Stdio};

use gix::ObjectId;
use gix::object::Kind;
use gix::objs::tree::Entry;
use gix::zlib::Compression;
use gix::zlib::stream::deflate;

use crate::error::{Error, IoContext, Result};
use crate::mirror::cut::Objects;
use crate::mirror::{GitContext, Mirror};

impl Objects for PackWriter<'_> {
    fn blob(&mut self, data: &[u8]) -> Result<ObjectId> {
        self.object(Kind::Blob, data, self.blobs)
    }

    fn tree(&mut self, mut entries: Vec<Entry>) -> Result<ObjectId> {
        entries.sort();
        let tree = gix::objs::Tree { entries };
        let mut data = Vec::new();
        gix::objs::WriteTo::write_to(&tree, &mut data)
            .map_err(|e| Error::system("encode a git tree", e))?;
        self.object(Kind::Tree, &data, Compression::BEST_SPEED)
    }
}

/// A pack being written for the mirror.
pub struct PackWriter<'a> {
    mirror: &'a Mirror,
    body: BufWriter<std::fs::File>,
    count: u32,
    written: HashSet<ObjectId>,
    /// How blobs are compressed (trees: always at zlib's fastest level).
    blobs: Compression,
}

impl<'a> PackWriter<'a> {
    /// A new pack whose blobs are compressed at `blobs` (`Compression::NONE` for encrypted ones).
    pub fn new(mirror: &'a Mirror, blobs: Compression) -> Result<Self> {
        let dir = mirror.git_dir();
        let file = tempfile::tempfile_in(dir).with_path("create a temporary file in", dir)?;
        Ok(Self {
            mirror,
            body: BufWriter::with_capacity(1 << 20, file),
            count: 0,
            written: HashSet::new(),
            blobs,
        })
    }

    fn object(&mut self, kind: Kind, data: &[u8], level: Compression) -> Result<ObjectId> {
        let id = gix::objs::compute_hash(self.mirror.repo().object_hash(), kind, data)
            .git(|| "hash an object".into())?;
        if self.written.contains(&id) || self.mirror.repo().has_object(id) {
            return Ok(id);
        }
        let code: u8 = match kind {
            Kind::Commit => 1,
            Kind::Tree => 2,
            Kind::Blob => 3,
            Kind::Tag => 4,
        };
        // The entry's header: its type and its size, 4 bits then 7 bits a byte, low bits first.
        let mut size = data.len() as u64;
        let mut header = Vec::with_capacity(10);
        let mut byte = (code << 4) | (size & 0x0f) as u8;
        size >>= 4;
        while size != 0 {
            header.push(byte | 0x80);
            byte = (size & 0x7f) as u8;
            size >>= 7;
        }
        header.push(byte);
        let write = |body: &mut BufWriter<std::fs::File>| -> std::io::Result<()> {
            body.write_all(&header)?;
            let mut zlib = deflate::Write::new(&mut *body, level);
            zlib.write_all(data)?;
            zlib.flush()
        };
        write(&mut self.body).map_err(|e| Error::system("write a pack for the mirror", e))?;
        self.count += 1;
        self.written.insert(id);
        Ok(id)
    }

    /// Index the pack into the mirror (nothing when no object was new).
    pub fn finish(self) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let failed = |e| Error::system("write a pack for the mirror", e);
        let mut body = self.body.into_inner().map_err(|e| failed(e.into_error()))?;
        body.rewind().map_err(failed)?;
        let git_dir = self.mirror.git_dir();
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(git_dir)
            .args(["index-pack", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context(|| "run git (is it installed and on PATH?)".into())?;
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let sent = (|| -> std::io::Result<()> {
            let mut hash = gix::hash::hasher(self.mirror.repo().object_hash());
            let mut send = |bytes: &[u8]| -> std::io::Result<()> {
                hash.update(bytes);
                stdin.write_all(bytes)
            };
            let mut head = b"PACK\0\0\0\x02".to_vec();
            head.extend_from_slice(&self.count.to_be_bytes());
            send(&head)?;
            let mut chunk = vec![0; 1 << 20];
            loop {
                let n = body.read(&mut chunk)?;
                if n == 0 {
                    break;
                }
                send(&chunk[..n])?;
            }
            let trailer = hash.try_finalize().map_err(std::io::Error::other)?;
            stdin.write_all(trailer.as_bytes())?;
            drop(stdin);
            Ok(())
        })();
        let output = child
            .wait_with_output()
            .context(|| "run git index-pack".into())?;
        if !output.status.success() {
            let said = String::from_utf8_lossy(&output.stderr);
            let said = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(Error::system(
                "index a pack into the mirror",
                std::io::Error::other(format!("git index-pack failed: {said}")),
            ));
        }
        sent.map_err(|e| Error::system("index a pack into the mirror", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gix::objs::tree::EntryKind;

    #[test]
    fn objects_written_into_a_pack_read_back_from_the_mirror() {
        let dir = tempfile::tempdir().unwrap();
        let mirror = Mirror::open_or_init(&dir.path().join("m.git")).unwrap();
        let big: Vec<u8> = (0..300_000u32).map(|n| (n * 7 % 251) as u8).collect();
        let mut pack = PackWriter::new(&mirror, Compression::NONE).unwrap();
        let (a, b, empty) = (
            pack.blob(&big).unwrap(),
            pack.blob(b"small").unwrap(),
            pack.blob(b"").unwrap(),
        );
        assert_eq!(pack.blob(b"small").unwrap(), b);
        let entry = |name: &str, oid| Entry {
            mode: EntryKind::Blob.into(),
            filename: name.into(),
            oid,
        };
        let tree = pack
            .tree(vec![entry("b", b), entry("a", a), entry("e", empty)])
            .unwrap();
        assert_eq!(pack.count, 4);
        pack.finish().unwrap();
        // Read through the handle that was open before the pack existed, as a sync reads it.
        assert_eq!(mirror.read_file(a).unwrap().unwrap(), big);
        assert_eq!(mirror.read_file(b).unwrap().unwrap(), b"small");
        assert_eq!(mirror.entries(Some(tree)).unwrap().len(), 3);
        // What the mirror holds is not written again: an empty pack is none.
        let mut again = PackWriter::new(&mirror, Compression::BEST_SPEED).unwrap();
        assert_eq!(again.blob(&big).unwrap(), a);
        assert_eq!(again.count, 0);
        again.finish().unwrap();
        let packs = std::fs::read_dir(dir.path().join("m.git/objects/pack"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension() == Some("pack".as_ref()))
            .count();
        assert_eq!(packs, 1);
    }
}
