//! Prepared zstd dictionaries for decoding, found by the id a frame header names.
//!
//! For readers of frames that may have been written with a dictionary (ctxfold packs). Not where
//! dictionaries are trained, registered or chosen for writing: that is `store::dictionary`, whose
//! store-wide registry guarantees that an id names one dictionary, so callers may cache by id.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;

use zstd::dict::DecoderDictionary;

use crate::error::{Error, Result};

/// A dictionary prepared once for decoding (zstd digests it into tables; reuse it across frames).
pub type Prepared = Arc<DecoderDictionary<'static>>;

/// Where a reader finds the dictionary a frame names.
pub trait Dictionaries: Sync {
    fn prepared(&self, id: NonZeroU32) -> Result<Prepared>;
}

/// No dictionaries at all: a frame naming one cannot be read.
pub struct NoDictionaries;

impl Dictionaries for NoDictionaries {
    fn prepared(&self, id: NonZeroU32) -> Result<Prepared> {
        Err(missing(id))
    }
}

/// A fixed set of dictionaries, prepared up front (tests, benchmarks, one-off tools).
#[derive(Default)]
pub struct DictionarySet {
    by_id: HashMap<NonZeroU32, Prepared>,
}

impl DictionarySet {
    /// Add a dictionary by its bytes; returns the zstd id frames written with it carry.
    pub fn add(&mut self, dictionary: &[u8]) -> Result<NonZeroU32> {
        let id = zstd::zstd_safe::get_dict_id_from_dict(dictionary).ok_or_else(|| {
            Error::bad_input("the dictionary", "not a zstd dictionary (no dictionary id)")
        })?;
        let prepared = DecoderDictionary::try_copy(dictionary)
            .map_err(|e| Error::bad_input(format_args!("zstd dictionary {id}"), e.to_string()))?;
        self.by_id.insert(id, Arc::new(prepared));
        Ok(id)
    }
}

impl Dictionaries for DictionarySet {
    fn prepared(&self, id: NonZeroU32) -> Result<Prepared> {
        self.by_id.get(&id).cloned().ok_or_else(|| missing(id))
    }
}

fn missing(id: NonZeroU32) -> Error {
    Error::corrupt(format!("no zstd dictionary with id {id}"))
}
