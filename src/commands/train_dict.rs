//! `ctxfold-train-dict`: train a zstd dictionary on the store's own small objects, or choose one.

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::digest::Digest;
use crate::error::{Error, Result};
use crate::odb::Listed;
use crate::odb::dictionaries::{DEFAULT_MAX_SIZE, train};
use crate::store::Store;
use crate::store::lock::Mode;

/// Train a zstd dictionary on the store's objects and write new objects with it
///
/// Objects are compressed one by one, so the many small ones (a few KiB of JSON between two large
/// strings) compress far worse than whole files would: a dictionary trained on the store's own
/// objects gives each of them what the others taught it. The dictionary is stored as an object,
/// registered under dictionaries/ (every registered dictionary is a gc root), and becomes the one
/// ctxfold-split --write compresses new objects with; manifests name it in settings.dictionary.
/// Objects written before keep their own compression: each frame names its dictionary, so
/// retraining never makes an object unreadable. Prints the dictionary's sha256.
///
/// --use SHA256 switches back to a registered dictionary, --use none to none.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-train-dict", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct TrainDictArgs {
    /// Largest dictionary to train, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_SIZE)]
    pub max_size: usize,
    /// How many bytes of objects to train on at most
    #[arg(long, value_name = "BYTES", default_value_t = 32 << 20)]
    pub sample_bytes: u64,
    /// Objects stored in more than this many bytes are left out (they gain little)
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 10)]
    pub max_object_bytes: u64,
    /// Register the dictionary but keep writing new objects as before
    #[arg(long)]
    pub no_use: bool,
    /// Instead of training, write new objects with this registered dictionary (`none`: without)
    #[arg(long = "use", value_name = "SHA256|none", conflicts_with_all = ["max_size", "sample_bytes", "no_use"])]
    pub use_: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for TrainDictArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let _lock = store.lock(Mode::Shared, || ())?;
        if let Some(choice) = &self.use_ {
            let digest = match choice.as_str() {
                "none" => None,
                name => Some(
                    Digest::parse(name)
                        .ok_or_else(|| Error::usage(format!("not a sha256: {name:?}")))?,
                ),
            };
            store.odb().set_current_dictionary(digest)?;
            return Ok(Status::Success);
        }
        let (data, sizes) = samples(&store, self.sample_bytes, self.max_object_bytes)?;
        if sizes.len() < 8 {
            return Err(Error::refused(format!(
                "{} objects of at most {} stored bytes: too few to train a dictionary",
                sizes.len(),
                self.max_object_bytes
            )));
        }
        let dictionary = train(&data, &sizes, self.max_size)?;
        let digest = store.odb().add_dictionary(&dictionary, !self.no_use)?;
        emit(io.out, digest)?;
        Ok(Status::Success)
    }
}

/// Small objects, read whole and verified, laid end to end up to `budget` bytes. Objects are taken
/// in name order, which is as good as random and the same on every run over the same store.
fn samples(store: &Store, budget: u64, max_stored: u64) -> Result<(Vec<u8>, Vec<usize>)> {
    let dictionaries = store.odb().dictionaries()?;
    let mut data = Vec::new();
    let mut sizes = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in store.odb().list()? {
        let Listed::Object { digest, .. } = entry else {
            continue;
        };
        if data.len() as u64 >= budget || dictionaries.contains(&digest) || !seen.insert(digest) {
            continue;
        }
        match store.odb().stored_bytes(&digest)? {
            Some(n) if n <= max_stored => {}
            _ => continue,
        }
        let before = data.len();
        store.odb().read(&digest, None, &mut data)?;
        sizes.push(data.len() - before);
    }
    Ok((data, sizes))
}
