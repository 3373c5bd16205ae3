//! zstd dictionaries: trained on a store's own objects so that many small objects compress
//! nearly as well as whole files do.
//!
//! A dictionary is an ordinary object (its raw bytes are the zstd dictionary), registered by an
//! empty file `dictionaries/<sha256>`; `dictionaries/CURRENT` names the one new objects are
//! written with. Every frame written with a dictionary carries the dictionary's zstd id, so a reader
//! decodes any object whichever manifest led it there: an object written under an older dictionary
//! and reused by a newer manifest still reads. That is why every registered dictionary is a gc root
//! ([`Odb::dictionaries`]): objects, not manifests, decide which dictionaries are still needed.
//! A manifest names the dictionary its new objects were written with (`settings.dictionary`), and
//! readers refuse a manifest naming a dictionary the store does not have.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::dictionary::{Dictionaries, Prepared};
use super::{Encoder, Odb};
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::write_file;
use crate::files::{create_private_dir, remove_if_present};
use crate::segment::Settings;

/// zstd's default dictionary size, a good trade for objects of a few KiB.
pub const DEFAULT_MAX_SIZE: usize = 112_640;

/// The file under `dictionaries/` naming the dictionary new objects are written with.
pub const CURRENT: &str = "CURRENT";

/// A registered dictionary: its name and bytes.
pub type Named = (Digest, Arc<[u8]>);

/// A registered dictionary's bytes (loose objects load them into a decoding context) and, once a
/// pack block needed it, the dictionary prepared for decoding.
type Cached = (Named, Option<Prepared>);

/// Registered dictionaries by zstd dictionary id, shared by a store handle's clones.
#[derive(Clone, Default)]
pub struct Cache(Arc<Mutex<HashMap<u32, Cached>>>);

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dictionary::Cache")
    }
}

/// Train a dictionary of at most `max_size` bytes from samples laid end to end in `data`.
pub fn train(data: &[u8], sizes: &[usize], max_size: usize) -> Result<Vec<u8>> {
    zstd::dict::from_continuous(data, sizes, max_size).map_err(|e| {
        Error::refused(format!(
            "zstd could not train a dictionary from {} samples: {e}",
            sizes.len()
        ))
    })
}

impl Odb {
    pub fn dictionaries_dir(&self) -> PathBuf {
        self.root.join("dictionaries")
    }

    /// Every registered dictionary, sorted: all of them are gc roots.
    pub fn dictionaries(&self) -> Result<Vec<Digest>> {
        let dir = self.dictionaries_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).with_path("list", &dir),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.with_path("list", &dir)?;
            if let Some(digest) = entry.file_name().to_str().and_then(Digest::parse) {
                found.push(digest);
            }
        }
        found.sort();
        Ok(found)
    }

    /// The dictionary new objects are written with, if any.
    pub fn current_dictionary(&self) -> Result<Option<Digest>> {
        let path = self.dictionaries_dir().join(CURRENT);
        match fs::read_to_string(&path) {
            Ok(text) => Digest::parse(text.trim())
                .map(Some)
                .ok_or_else(|| Error::corrupt(format!("{}: not a sha256", path.display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_path("read", &path),
        }
    }

    /// Store and register a dictionary; with `make_current`, new objects are written with it.
    pub fn add_dictionary(&self, dictionary: &[u8], make_current: bool) -> Result<Digest> {
        let id = zstd::zstd_safe::get_dict_id_from_dict(dictionary).ok_or_else(|| {
            Error::bad_input("the dictionary", "not a zstd dictionary (no dictionary id)")
        })?;
        let digest = Digest::of(dictionary);
        for other in self.dictionaries()? {
            if other != digest && self.dictionary_id(&other)? == id {
                return Err(Error::refused(format!(
                    "dictionary {other} already has zstd id {id}; train again for another id"
                )));
            }
        }
        self.put(
            &digest,
            dictionary,
            &mut Encoder::new(super::DEFAULT_LEVEL)?,
        )?;
        self.sync()?;
        self.register_dictionary(&digest)?;
        if make_current {
            self.set_current_dictionary(Some(digest))?;
        }
        Ok(digest)
    }

    /// Register the dictionary object `digest` (which the store must hold, durably).
    pub fn register_dictionary(&self, digest: &Digest) -> Result<()> {
        create_private_dir(&self.dictionaries_dir())?;
        create_private_dir(&self.root.join("tmp"))?;
        let marker = self.dictionaries_dir().join(digest.to_hex());
        // Durable and private like every store file: losing it would strand every object written
        // with the dictionary. An existing registration is the same empty file.
        write_file(&self.root.join("tmp"), ".dictionary-", &marker, b"", false)?;
        Ok(())
    }

    /// Write new objects with `dictionary` (registered), or without any.
    pub fn set_current_dictionary(&self, dictionary: Option<Digest>) -> Result<()> {
        let path = self.dictionaries_dir().join(CURRENT);
        match dictionary {
            None => remove_if_present(&path),
            Some(digest) => {
                self.check_registered(&digest)?;
                write_file(
                    &self.root.join("tmp"),
                    ".dictionary-",
                    &path,
                    format!("{digest}\n").as_bytes(),
                    true,
                )?;
                Ok(())
            }
        }
    }

    /// An encoder for new objects at `level`, with the current dictionary, which it names.
    pub fn encoder(&self, level: i32) -> Result<(Encoder, Option<Digest>)> {
        let current = self.current_dictionary_bytes()?;
        Ok((
            Encoder::for_dictionary(level, current.as_ref())?,
            current.map(|(digest, _)| digest),
        ))
    }

    /// The current dictionary with its bytes (verified), for writers that build one encoder per
    /// thread.
    pub fn current_dictionary_bytes(&self) -> Result<Option<Named>> {
        match self.current_dictionary()? {
            None => Ok(None),
            Some(digest) => {
                self.check_registered(&digest)?;
                Ok(Some((digest, self.read_to_vec(&digest, None)?.into())))
            }
        }
    }

    /// What a reader checks before trusting a manifest's settings: a dictionary it names is here.
    pub fn check_dictionary(&self, settings: &Settings) -> Result<()> {
        match &settings.dictionary {
            // A manifest that names a dictionary the store lacks cannot be read: corruption.
            Some(digest) => self
                .check_registered(digest)
                .map_err(|e| Error::corrupt(e.without_context())),
            None => Ok(()),
        }
    }

    fn check_registered(&self, digest: &Digest) -> Result<()> {
        if self.dictionaries_dir().join(digest.to_hex()).is_file() {
            Ok(())
        } else {
            Err(Error::not_found(format!(
                "zstd dictionary {digest} is not in {}",
                self.root.display()
            )))
        }
    }

    fn dictionary_id(&self, digest: &Digest) -> Result<NonZeroU32> {
        let bytes = self.read_to_vec(digest, None)?;
        zstd::zstd_safe::get_dict_id_from_dict(&bytes).ok_or_else(|| {
            Error::object_corrupt(*digest, "it is registered as a dictionary but is not one")
        })
    }

    /// The dictionary a frame names by id, looked up among the registered ones: its name and bytes.
    ///
    /// Dictionary objects are never written with a dictionary themselves (see `add_dictionary`,
    /// and repack keeps them loose), so reading one here never comes back to this lock.
    pub(super) fn decoder_dictionary(&self, id: NonZeroU32) -> Result<Named> {
        let mut cache = self
            .dictionaries
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((found, _)) = cache.get(&id.get()) {
            return Ok(found.clone());
        }
        for digest in self.dictionaries()? {
            let bytes = self.read_to_vec(&digest, None)?;
            if zstd::zstd_safe::get_dict_id_from_dict(&bytes) == Some(id) {
                let found = (digest, Arc::<[u8]>::from(bytes));
                cache.insert(id.get(), (found.clone(), None));
                return Ok(found);
            }
        }
        Err(Error::corrupt(format!(
            "no zstd dictionary with id {id} in {}",
            self.root.display()
        )))
    }
}

impl Dictionaries for Odb {
    fn prepared(&self, id: NonZeroU32) -> Result<Prepared> {
        let (digest, bytes) = self.decoder_dictionary(id)?;
        let mut cache = self
            .dictionaries
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let entry = cache
            .entry(id.get())
            .or_insert_with(|| ((digest, bytes.clone()), None));
        if let Some(prepared) = &entry.1 {
            return Ok(prepared.clone());
        }
        let prepared: Prepared = Arc::new(
            zstd::dict::DecoderDictionary::try_copy(&bytes)
                .map_err(|e| Error::object_corrupt(digest, format!("zstd dictionary: {e}")))?,
        );
        entry.1 = Some(prepared.clone());
        Ok(prepared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> (Vec<u8>, Vec<usize>) {
        let mut data = Vec::new();
        let mut sizes = Vec::new();
        for i in 0..2000 {
            let sample = format!(
                "{{\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"n\":{i},\"text\":\"the quick brown fox {}\"}}}}\n",
                i * 7919 % 1000
            );
            sizes.push(sample.len());
            data.extend_from_slice(sample.as_bytes());
        }
        (data, sizes)
    }

    #[test]
    fn objects_written_with_a_dictionary_read_back_and_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::init(dir.path().join("s")).unwrap();
        let store = store.odb();
        let (data, sizes) = samples();
        let dictionary = train(&data, &sizes, 4096).unwrap();
        let digest = store.add_dictionary(&dictionary, true).unwrap();
        assert_eq!(store.dictionaries().unwrap(), vec![digest]);
        let (mut encoder, named) = store.encoder(3).unwrap();
        assert_eq!(named, Some(digest));
        let raw = b"{\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\",\"n\":77,\"text\":\"the quick brown fox 3\"}}\n";
        let d = Digest::of(raw);
        let with = store.put(&d, raw, &mut encoder).unwrap();
        assert!(
            with.stored_bytes < encoder_len_without(raw),
            "the dictionary should help"
        );
        // A fresh handle (empty cache) finds the dictionary by the id in the frame.
        let reader = Odb::at(&store.root);
        assert_eq!(reader.read_to_vec(&d, Some(raw.len() as u64)).unwrap(), raw);
        // Without its registration the object cannot be read, and says why.
        fs::remove_file(store.dictionaries_dir().join(digest.to_hex())).unwrap();
        let err = Odb::at(&store.root).read_to_vec(&d, None).unwrap_err();
        assert!(
            err.to_string().contains("no zstd dictionary with id"),
            "{err}"
        );
        let settings = Settings {
            dictionary: Some(digest),
            ..Settings::default()
        };
        assert!(
            store
                .check_dictionary(&settings)
                .unwrap_err()
                .to_string()
                .contains("is not in")
        );
    }

    fn encoder_len_without(raw: &[u8]) -> u64 {
        Encoder::new(3).unwrap().compressed_len(raw).unwrap()
    }

    #[test]
    fn the_current_dictionary_can_be_switched_off_and_must_be_registered() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::init(dir.path().join("s")).unwrap();
        let store = store.odb();
        assert_eq!(store.current_dictionary().unwrap(), None);
        assert!(
            store
                .set_current_dictionary(Some(Digest::of(b"x")))
                .is_err()
        );
        assert!(store.add_dictionary(b"not a dictionary", true).is_err());
        let (data, sizes) = samples();
        let digest = store
            .add_dictionary(&train(&data, &sizes, 4096).unwrap(), true)
            .unwrap();
        assert_eq!(store.current_dictionary().unwrap(), Some(digest));
        store.set_current_dictionary(None).unwrap();
        assert_eq!(store.encoder(3).unwrap().1, None);
    }
}
