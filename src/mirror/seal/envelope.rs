//! One file sealed: age, to every recipient, of its plain path, a newline, a byte saying how the
//! rest is held (`z`: zstd, `r`: as it is) and the file. Files the store keeps compressed (objects,
//! packs) are held as they are; the rest (manifests, the seed catalog) is compressed first, as git
//! would have compressed them in clear, since nothing compresses once encrypted.
//!
//! A group of files sealed together (manifests, which repeat each other: a fork's lists most of its
//! original's parts, and git deltas them against each other in clear) is an empty path, a newline,
//! `g`, and one zstd frame of every file in turn: its plain path, a newline, its length in decimal,
//! a newline and its bytes.
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

/// Seal `files` (plain path, bytes; at least one) together, to `recipients`.
pub fn seal_group(recipients: &[Recipient], files: &[(String, Vec<u8>)]) -> Result<Vec<u8>> {
    let mut inner = Vec::with_capacity(files.iter().map(|f| f.0.len() + f.1.len() + 24).sum());
    for (path, bytes) in files {
        inner.extend_from_slice(path.as_bytes());
        inner.extend_from_slice(format!("\n{}\n", bytes.len()).as_bytes());
        inner.extend_from_slice(bytes);
    }
    let mut plain = b"\ng".to_vec();
    plain.extend(zstd::bulk::compress(&inner, LEVEL).map_err(|e| Error::system("compress", e))?);
    encrypt(recipients, &plain)
}

/// What a sealed blob holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened {
    /// One file: its plain path and bytes.
    File(String, Vec<u8>),
    /// A group: each file's plain path and bytes, in the order sealed.
    Group(Vec<(String, Vec<u8>)>),
}

/// Open a sealed blob.
pub fn open(identities: &[Identity], sealed: &[u8]) -> std::result::Result<Opened, Unopened> {
    let plain = decrypt(identities, sealed)?;
    let forged = |why: &str| Unopened::Forged(why.to_string());
    let newline = memchr::memchr(b'\n', &plain).ok_or_else(|| forged("no path"))?;
    let path = std::str::from_utf8(&plain[..newline]).map_err(|_| forged("a path not UTF-8"))?;
    let unzstd = |bytes: &[u8]| {
        zstd::stream::decode_all(bytes)
            .map_err(|e| Unopened::Forged(format!("its zstd frame: {e}")))
    };
    let bytes = match plain.get(newline + 1) {
        Some(b'g') if path.is_empty() => return group(&unzstd(&plain[newline + 2..])?),
        Some(b'r') => plain[newline + 2..].to_vec(),
        Some(b'z') => unzstd(&plain[newline + 2..])?,
        _ => return Err(forged("an unknown encoding")),
    };
    Ok(Opened::File(path.to_string(), bytes))
}

/// The files of a group's plain text.
fn group(mut rest: &[u8]) -> std::result::Result<Opened, Unopened> {
    let forged = || Unopened::Forged("a group that does not parse".into());
    let mut files = Vec::new();
    while !rest.is_empty() {
        let line = |rest: &mut &[u8]| -> std::result::Result<String, Unopened> {
            let at = memchr::memchr(b'\n', rest).ok_or_else(forged)?;
            let text = std::str::from_utf8(&rest[..at]).map_err(|_| forged())?;
            *rest = &rest[at + 1..];
            Ok(text.to_string())
        };
        let path = line(&mut rest)?;
        let len: usize = line(&mut rest)?.parse().map_err(|_| forged())?;
        let bytes = rest.get(..len).ok_or_else(forged)?;
        files.push((path, bytes.to_vec()));
        rest = &rest[len..];
    }
    match files.is_empty() {
        true => Err(forged()),
        false => Ok(Opened::Group(files)),
    }
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
        assert_eq!(
            open(std::slice::from_ref(&us), &sealed).unwrap(),
            Opened::File("manifests/s1.json".into(), b"{\"x\":1}".to_vec())
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

    #[test]
    fn a_sealed_group_opens_into_its_files() {
        let us = Identity::generate();
        let files = vec![
            ("manifests/a.json".to_string(), b"{\"a\":\n1}".to_vec()),
            ("manifests/b.json".to_string(), Vec::new()),
            ("manifests/c.json".to_string(), b"12\n3".to_vec()),
        ];
        let sealed = seal_group(&[us.to_public()], &files).unwrap();
        assert_eq!(
            open(std::slice::from_ref(&us), &sealed).unwrap(),
            Opened::Group(files)
        );
        for bad in [&b""[..], b"x\n", b"x\n3\nab", b"x\nq\n"] {
            assert!(matches!(group(bad), Err(Unopened::Forged(_))), "{bad:?}");
        }
    }
}
