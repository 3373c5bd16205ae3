//! `ctxfold repack`: every pack and loose object into one pack, grouped by session.

use crate::cli::human::{bytes, count};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::layout::repack_all;
use crate::store::lock::Mode;

/// Rewrite every pack and loose object into one pack, each session's objects together
///
/// Objects are written in the order the manifests name them (manifests in name order, parts in
/// order), so that restoring a session reads few, neighbouring blocks; objects no manifest names
/// follow. Nothing is dropped, referenced or not: `ctxfold gc` decides what is garbage (and
/// repacks as it goes). Registered zstd dictionaries stay loose files. The new pack is written,
/// fsynced and in place before any old pack or loose file is removed, under the store lock held
/// exclusive (running folds finish first). Objects of the reference implementation's pack
/// generation (packs/) are read, never moved.
///
/// --aggressive writes 4 MiB blocks at zstd level 19: the smallest store, at a tenth of the speed
/// or less. `ctxfold unpack` turns the store back into loose files.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-repack", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct RepackArgs {
    /// zstd level 19 in 4 MiB blocks: the smallest packs, slowly
    #[arg(long)]
    pub aggressive: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for RepackArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let _lock = store.lock(Mode::Exclusive, || {
            io.note("waiting for running folds to finish…")
        })?;
        let done = repack_all(&store, store.odb().pack_options(self.aggressive)?)?;
        match &done.pack {
            Some(pack) if done.unchanged => emit(
                io.out,
                format_args!(
                    "already packed: pack {} holds every object as a repack writes it ({}, {})",
                    pack.name,
                    count(pack.objects, "object"),
                    bytes(pack.pack_bytes + pack.index_bytes)
                ),
            )?,
            Some(pack) => emit(
                io.out,
                format_args!(
                    "repacked {} and {} into pack {} ({} in {}, {})",
                    count(done.removed_packs.len() as u64, "pack"),
                    count(done.packed_loose, "loose object"),
                    pack.name,
                    count(pack.objects, "object"),
                    count(pack.blocks, "block"),
                    bytes(pack.pack_bytes + pack.index_bytes)
                ),
            )?,
            None => emit(io.out, "nothing to repack")?,
        }
        Ok(Status::Success)
    }
}
