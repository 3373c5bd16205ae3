//! Reconstruction across two stores: a remote manifest checked against the objects staged from the
//! remote plus those the local store already holds, before either is changed; and, on the way,
//! the sha256 of the session's first bytes, which tells whether one fold of a session extends
//! another (the same rollout folded later, so the shorter's bytes are a prefix).

use std::io::{self, Write};

use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::manifest::Manifest;

/// The objects a remote's sync may use: the staged ones first, then the store's own.
pub struct Sources<'a> {
    pub staged: &'a Store,
    pub local: &'a Store,
}

impl Sources<'_> {
    fn holder(&self, digest: &Digest) -> Result<&Store> {
        Ok(if self.staged.object_stored_bytes(digest)?.is_some() {
            self.staged
        } else {
            self.local
        })
    }

    /// Stream the session through every check `reconstruct::write_session` makes (each object
    /// against its name and size, the whole against the source), and return the sha256 of its
    /// first `prefix` bytes (`None` when it is shorter than that).
    pub fn verify(&self, manifest: &Manifest, prefix: u64) -> Result<Option<Digest>> {
        let head = PrefixHasher {
            left: prefix,
            hashing: HashingWriter::new(io::sink()),
        };
        let mut whole = HashingWriter::new(head);
        for part in &manifest.parts {
            let digest = &part.object.sha256;
            self.holder(digest)?
                .read_object(digest, Some(part.object.raw_bytes), &mut whole)?;
        }
        let (head, digest, bytes) = whole.finish();
        let source = &manifest.source;
        if bytes != source.bytes || digest != source.sha256 {
            return Err(Error::failed(format!(
                "reconstruction gives {bytes} bytes with sha256 {digest}, the source had {} bytes with sha256 {}",
                source.bytes, source.sha256
            )));
        }
        let (_, head_digest, head_bytes) = head.hashing.finish();
        Ok((head_bytes == prefix).then_some(head_digest))
    }

    /// Whether `longer`'s session begins with `shorter`'s bytes; verifies `longer` whole.
    pub fn extends(&self, longer: &Manifest, shorter: &Manifest) -> Result<bool> {
        let head = self.verify(longer, shorter.source.bytes)?;
        Ok(head == Some(shorter.source.sha256))
    }
}

/// Hashes what passes through, up to `left` bytes, and swallows the rest.
struct PrefixHasher {
    left: u64,
    hashing: HashingWriter<io::Sink>,
}

impl Write for PrefixHasher {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let take = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        self.hashing.write_all(&buf[..take])?;
        self.left -= take as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
