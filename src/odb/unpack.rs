//! Unpacking: every object written as a plain loose object, zstd without a dictionary, so that the
//! store is the Fold V1 layout of the contract, which any Fold V1 reader restores (the reference
//! implementation included).
//!
//! Objects come from ctxfold's packs, from the reference's generation, and from loose files
//! written with a dictionary (a reader that does not know ctxfold's dictionaries cannot decode
//! those). Each is written through a temp file and renamed into place; a loose object already in
//! the plain form is left alone. Nothing is removed here: the caller removes the packs once every
//! manifest reconstructs from loose objects alone.

use std::collections::HashSet;

use super::codec::Encoder;
use super::{DEFAULT_LEVEL, Listed, Odb};
use crate::digest::Digest;
use crate::error::{Error, Result};

/// What unpacking wrote.
#[derive(Debug, Default)]
pub struct Unpacked {
    /// Objects written loose (from packs, or rewritten without a dictionary).
    pub written: u64,
    /// Loose objects already in the plain form.
    pub kept: u64,
}

/// Write every object of `from` as a plain loose object of `to` (the same store, or a new one).
pub fn unpack(from: &Odb, to: &Odb) -> Result<Unpacked> {
    let mut done = Unpacked::default();
    let mut encoder = Encoder::new(DEFAULT_LEVEL)?;
    let mut seen = HashSet::new();
    for entry in from.list()? {
        let digest = match entry {
            Listed::Object { digest, .. } => digest,
            Listed::Stray(_) => continue,
            Listed::Broken { what, why } => {
                return Err(Error::corrupt(format!("{}: {why}", what.display())));
            }
        };
        if !seen.insert(digest) {
            continue;
        }
        if to.is_plain_loose(&digest)? {
            done.kept += 1;
            continue;
        }
        let bytes = from.read_to_vec(&digest, None)?;
        to.loose.replace(&digest, &bytes, &mut encoder)?;
        done.written += 1;
    }
    to.sync()?;
    Ok(done)
}

impl Odb {
    /// Whether `digest` is here as a loose object written without a dictionary.
    pub fn is_plain_loose(&self, digest: &Digest) -> Result<bool> {
        match self.loose.open(digest)? {
            Some(file) => Ok(self.loose.frame_dictionary(&file)?.1.is_none()),
            None => Ok(false),
        }
    }
}
