//! One file sealed: age, to every recipient, of its plain path, a newline, a byte saying how the
//! rest is held (`z`: zstd, `r`: as it is) and the file. Files the store keeps compressed (objects,
//! packs) are held as they are; the rest (manifests, the seed catalog) is compressed first, as git
//! would have compressed them in clear, since nothing compresses once encrypted.
//!
//! age authenticates what it decrypts (the header's MAC, then every 64 KiB chunk's tag): a changed
//! byte anywhere makes opening fail, before the caller has used any of it.

use std::io::{Read, Write};

use age::x25519::{Identity, Recipient};

use crate::error::{Error, Result};

/// zstd level of what is compressed before it is sealed: the store's own default.
const LEVEL: i32 = 3;

/// Why a sealed file did not open.
#[derive(Debug)]
pub enum Unopened {
    /// None of the identities is among its recipients.
    NotForUs,
    /// It is not an age file, or it was changed: it fails authentication.
    Forged(String),
}

/// Seal `bytes`, the file at the plain `path`, to `recipients` (at least one).
pub fn seal(recipients: &[Recipient], path: &str, bytes: &[u8]) -> Result<Vec<u8>> {
    let mut plain = Vec::with_capacity(path.len() + 2 + bytes.len());
    plain.extend_from_slice(path.as_bytes());
    plain.push(b'\n');
    if compressed_already(path) {
        plain.push(b'r');
        plain.extend_from_slice(bytes);
    } else {
        plain.push(b'z');
        plain.extend(zstd::bulk::compress(bytes, LEVEL).map_err(|e| Error::system("compress", e))?);
    }
    encrypt(recipients, &plain)
}

/// Open a sealed file: its plain path and bytes.
pub fn open(
    identities: &[Identity],
    sealed: &[u8],
) -> std::result::Result<(String, Vec<u8>), Unopened> {
    let plain = decrypt(identities, sealed)?;
    let forged = |why: &str| Unopened::Forged(why.to_string());
    let newline = memchr::memchr(b'\n', &plain).ok_or_else(|| forged("no path"))?;
    let path = std::str::from_utf8(&plain[..newline]).map_err(|_| forged("a path not UTF-8"))?;
    let bytes = match plain.get(newline + 1) {
        Some(b'r') => plain[newline + 2..].to_vec(),
        Some(b'z') => zstd::stream::decode_all(&plain[newline + 2..])
            .map_err(|e| Unopened::Forged(format!("its zstd frame: {e}")))?,
        _ => return Err(forged("an unknown encoding")),
    };
    Ok((path.to_string(), bytes))
}

/// age-encrypt `plain` to every recipient.
pub fn encrypt(recipients: &[Recipient], plain: &[u8]) -> Result<Vec<u8>> {
    let encryptor = age::Encryptor::with_recipients(recipients.iter().map(|r| r as _))
        .map_err(|e| Error::usage(format!("encrypt: {e}")))?;
    // age's overhead: a header of ~100 bytes a recipient, 16 bytes a 64 KiB chunk.
    let mut sealed =
        Vec::with_capacity(plain.len() + plain.len() / 4096 + 128 * recipients.len() + 128);
    let system = |e| Error::system("encrypt", e);
    let mut writer = encryptor.wrap_output(&mut sealed).map_err(system)?;
    writer.write_all(plain).map_err(system)?;
    writer.finish().map_err(system)?;
    Ok(sealed)
}

/// age-decrypt `sealed` with any of `identities`.
pub fn decrypt(identities: &[Identity], sealed: &[u8]) -> std::result::Result<Vec<u8>, Unopened> {
    let forged = |e: &dyn std::fmt::Display| Unopened::Forged(e.to_string().replace('\n', " "));
    let decryptor = age::Decryptor::new_buffered(sealed).map_err(|e| forged(&e))?;
    let mut reader = match decryptor.decrypt(identities.iter().map(|i| i as _)) {
        Ok(reader) => reader,
        Err(age::DecryptError::NoMatchingKeys) => return Err(Unopened::NotForUs),
        Err(e) => return Err(forged(&e)),
    };
    let mut plain = Vec::with_capacity(sealed.len());
    reader.read_to_end(&mut plain).map_err(|e| forged(&e))?;
    Ok(plain)
}

/// Whether the store keeps the file at `path` compressed already (objects and packs are zstd).
fn compressed_already(path: &str) -> bool {
    path.starts_with("objects/") || path.starts_with(&format!("{}/", crate::odb::pack::DIR))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_file_opens_for_its_recipients_only_and_not_once_changed() {
        let (us, them) = (Identity::generate(), Identity::generate());
        let sealed = seal(&[us.to_public()], "manifests/s1.json", b"{\"x\":1}").unwrap();
        let (path, bytes) = open(std::slice::from_ref(&us), &sealed).unwrap();
        assert_eq!(
            (path.as_str(), bytes.as_slice()),
            ("manifests/s1.json", b"{\"x\":1}".as_slice())
        );
        assert!(matches!(open(&[them], &sealed), Err(Unopened::NotForUs)));
        // (A byte of our stanza in the header would read as "not for us": the caller tells them
        // apart by the recipients the remote names, see `header`.)
        for at in [sealed.len() - 20, sealed.len() - 1] {
            let mut changed = sealed.clone();
            changed[at] ^= 1;
            assert!(
                matches!(
                    open(std::slice::from_ref(&us), &changed),
                    Err(Unopened::Forged(_))
                ),
                "byte {at}"
            );
        }
    }
}
