//! `ctxfold unpack`: the store back in the plain loose layout of Fold V1.

use std::path::PathBuf;

use crate::cli::human::count;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::layout::{unpack_in_place, unpack_to};
use crate::store::lock::Mode;

/// Write every object as a plain loose file, the Fold V1 layout any reader restores
///
/// Every object of the store's packs (and of the reference implementation's pack generation) is
/// written as `objects/<2 hex>/<sha256>.zst`, zstd without a dictionary; loose objects written
/// with a ctxfold zstd dictionary are rewritten without one, since a reader that does not know
/// ctxfold's dictionaries cannot decode them. Manifests that gc packed (manifests/packed.json) are
/// written back as manifests/<id>.json and generations/<id>/*.json files, byte for byte as they
/// were packed, and the table goes. Then every manifest is checked to reconstruct from
/// the loose objects alone, and only then are the packs removed. The result is the store layout of
/// the Fold V1 contract, which the reference implementation restores.
///
/// With --to DIR, the store is left as it is and a plain copy is written to DIR instead (which
/// must not hold a store): loose objects, manifests, seed indexes and dictionary registrations,
/// each manifest checked against the copy. Holds the store lock exclusive (in place) or shared
/// (--to).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-unpack", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct UnpackArgs {
    /// Write a plain copy of the store here instead
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub to: Option<PathBuf>,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for UnpackArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let mode = match self.to {
            Some(_) => Mode::Shared,
            None => Mode::Exclusive,
        };
        let _lock = store.lock(mode, || io.note("waiting for the store lock…"))?;
        match &self.to {
            Some(dir) => {
                let done = unpack_to(&store, dir)?;
                emit(
                    io.out,
                    format_args!(
                        "wrote a plain copy to {}: {}",
                        dir.display(),
                        count(done.written + done.kept, "loose object")
                    ),
                )?;
            }
            None => {
                let (done, packs) = unpack_in_place(&store)?;
                emit(
                    io.out,
                    format_args!(
                        "unpacked {} ({} loose already); removed {}",
                        count(done.written, "object"),
                        done.kept,
                        count(packs as u64, "pack")
                    ),
                )?;
            }
        }
        Ok(Status::Success)
    }
}
