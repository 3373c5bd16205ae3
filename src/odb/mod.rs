//! The object database's storage forms beside loose objects: ctxfold's own packs ([`pack`]) and,
//! read-only, the reference implementation's pack generations ([`codexfold`]).
//!
//! These are self-contained engine components. They know nothing of where a store keeps its files
//! (beyond a folder-name constant each), of manifests, sessions or locks, nor of how gc and fsck
//! decide what to keep: the store wires them in.

pub mod codexfold;
pub mod dictionary;
mod extent;
pub mod pack;

use crate::digest::Digest;

/// A digest read from a binary table. `Digest` offers no constructor from raw bytes, so this goes
/// through its one parser (cheap: it runs per object listed, never per lookup).
fn digest_from_bytes(bytes: &[u8; 32]) -> Digest {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 64];
    for (i, b) in bytes.iter().enumerate() {
        text[2 * i] = HEX[usize::from(b >> 4)];
        text[2 * i + 1] = HEX[usize::from(b & 15)];
    }
    Digest::parse(std::str::from_utf8(&text).expect("hex is ascii")).expect("64 lowercase hex")
}

#[cfg(test)]
mod tests {
    #[test]
    fn digests_from_bytes_round_trip() {
        let d = crate::digest::Digest::of(b"abc");
        assert_eq!(super::digest_from_bytes(d.as_bytes()), d);
    }
}
