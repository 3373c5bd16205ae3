//! Reconstruction across two stores: a remote manifest checked against the objects staged from the
//! remote plus those the local store already holds, before either is changed; and, on the way,
//! the sha256 of the session's first bytes, which tells whether one fold of a session extends
//! another (the same rollout folded later, so the shorter's bytes are a prefix).

use std::io::{self, Write};

use crate::digest::{Digest, HashingWriter};
use crate::error::{Error, Result};
use crate::odb::Check;
use crate::store::Store;
use crate::store::manifest::Manifest;

/// The objects a remote's sync may use: the staged ones first, then the store's own.
pub struct Sources<'a> {
    pub staged: &'a Store,
    pub local: &'a Store,
}

impl<'a> Sources<'a> {
    /// The store to read `digest` from: staging if it holds it, else this store.
    pub fn holder(&self, digest: &Digest) -> Result<&'a Store> {
        Ok(if self.staged.odb().stored_bytes(digest)?.is_some() {
            self.staged
        } else {
            self.local
        })
    }

    /// Where the session's last part is packed (pack, block, offset in it), if it is: the order
    /// to verify many sessions in. Fold and gc pack each session's new objects at its turn (gc in
    /// fork-family order), so a session's last part, the most its own, lies among its
    /// relatives': sessions verified in this order need the same few blocks one after another,
    /// and the block cache keeps them (4,914 forks in the order of their names decoded 6.9 GB of
    /// blocks for 102 MiB of objects).
    pub fn last_part_at(&self, manifest: &Manifest) -> Result<Option<(Digest, u32, u64)>> {
        let Some(last) = manifest.parts.last() else {
            return Ok(None);
        };
        let digest = &last.object.sha256;
        Ok((self.holder(digest)?.odb().packed(digest)?)
            .map(|(member, at)| (*member.pack.name(), at.block, at.offset)))
    }

    /// Stream the session through the checks a restore makes (each object's size, the whole
    /// against the source), and return the sha256 of its first `prefix` bytes (`None` when it is
    /// shorter than that). Objects are not hashed one by one ([`Check::Whole`]): the staged ones
    /// were, when staged (`merge`), this store's are its own, and any wrong byte fails the whole.
    pub fn verify(&self, manifest: &Manifest, prefix: u64) -> Result<Option<Digest>> {
        // Staging registers every dictionary the store will have (see `merge`).
        self.staged.odb().check_dictionary(&manifest.settings)?;
        let head = PrefixHasher {
            left: prefix,
            hashing: HashingWriter::new(io::sink()),
        };
        let mut whole = HashingWriter::new(head);
        for part in &manifest.parts {
            let digest = &part.object.sha256;
            self.holder(digest)?.odb().read_checked(
                digest,
                Some(part.object.raw_bytes),
                &mut whole,
                Check::Whole,
            )?;
        }
        let (head, digest, bytes) = whole.finish();
        let source = &manifest.source;
        if bytes != source.bytes || digest != source.sha256 {
            return Err(Error::corrupt(format!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::odb::Encoder;
    use crate::segment::Settings;
    use crate::store::manifest::{KIND, ObjectRef, Part, PartKind, Session, Source};

    /// A manifest of `chunks`, each stored in `store`.
    fn folded(store: &Store, chunks: &[&[u8]]) -> Manifest {
        let mut enc = Encoder::new(3).unwrap();
        let parts = chunks
            .iter()
            .map(|raw| {
                let sha256 = Digest::of(raw);
                store.odb().put(&sha256, raw, &mut enc).unwrap();
                let object = ObjectRef {
                    sha256,
                    raw_bytes: raw.len() as u64,
                    stored_bytes: 0,
                };
                Part {
                    kind: PartKind::Residual,
                    json_path: None,
                    object,
                }
            })
            .collect();
        let whole = chunks.concat();
        Manifest {
            version: 1,
            kind: KIND.into(),
            session: Session {
                id: "s".into(),
                title: None,
                cwd: None,
                rollout_path: "/r".into(),
                archived: false,
                mtime: None,
            },
            source: Source {
                bytes: whole.len() as u64,
                sha256: Digest::of(&whole),
            },
            settings: Settings::default(),
            parts,
        }
    }

    #[test]
    fn a_later_fold_extends_an_earlier_one_across_part_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let (local, staged) = (
            Store::init(dir.path().join("l")).unwrap(),
            Store::init(dir.path().join("s")).unwrap(),
        );
        let short = folded(&local, &[b"line one\nline", b" two\n"]);
        // The longer fold cuts its parts elsewhere, and its new part exists only in staging.
        let long = folded(&local, &[b"line one\n"]);
        let tail = folded(&staged, &[b"line two\nline three\n"]);
        let long = Manifest {
            source: Source {
                bytes: 29,
                sha256: Digest::of(b"line one\nline two\nline three\n"),
            },
            parts: [long.parts, tail.parts].concat(),
            ..long
        };
        let sources = Sources {
            staged: &staged,
            local: &local,
        };
        assert!(sources.extends(&long, &short).unwrap());
        assert!(
            !sources.extends(&short, &long).unwrap(),
            "the shorter cannot extend the longer"
        );
        let other = folded(&local, &[b"line one\nline 2\n"]);
        assert!(!sources.extends(&long, &other).unwrap());
        // A lying source is caught even when asking about a prefix.
        let mut lying = long.clone();
        lying.source.sha256 = Digest::of(b"else");
        assert!(
            sources
                .extends(&lying, &short)
                .unwrap_err()
                .to_string()
                .contains("reconstruction gives")
        );
        assert!(
            Sources {
                staged: &local,
                local: &local
            }
            .verify(&long, 0)
            .is_err(),
            "a missing object fails"
        );
    }
}
