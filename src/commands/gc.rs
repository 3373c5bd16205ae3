//! `ctxfold gc`: unreferenced objects and stale temp files removed (a dry run unless --apply).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::cli::human::bytes;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::{Error, Result};
use std::collections::HashMap;

use crate::digest::Digest;
use crate::odb::repack::Repacked;
use crate::store::gc;
use crate::store::generations::{self, Generation};
use crate::store::lock::Mode;

/// Remove objects no manifest references, and stale temp files (a dry run unless --apply)
///
/// Every manifest under manifests/ is a root, its subfolders included (generations/, conflicts/),
/// and so is every registered zstd dictionary (dictionaries/: objects written with one need it).
/// While any manifest cannot be read, gc removes nothing: an unreadable manifest may name objects
/// that would otherwise look unreferenced (ctxfold fsck names it).
///
/// Safe beside a running fold, by two means together, as git, restic and kopia do it. --apply takes
/// the store lock (<store>/locks/objects.lock, an flock shared with the reference implementation)
/// exclusive, waiting for running folds to finish, and holds it while it plans and removes; every
/// writer holds it shared from its first object to its last manifest, so none is between writing
/// an object and committing the manifest that names it. And only objects and temp files whose mtime
/// is older than the grace period go (--prune, default 1 hour): a plumbing pipeline such as
/// `ctxfold-split --write | ctxfold-write-manifest` releases the lock between its two steps, and
/// writers refresh the mtime of every object they reuse. (The reference implementation's gc takes
/// no lock and keeps no grace period: a fold committing between its scan and its deletes loses
/// objects. This one does not.)
///
/// Stale temp files are the files in <store>/tmp and the `.*.tmp` files under objects/ and
/// manifests/ older than the grace period.
///
/// --prune-generations also removes every generation (manifests/generations/<id>/: the earlier
/// versions of sessions that fold kept when it replaced them; see ctxfold fold), listing each,
/// and then the objects only they referenced. Nothing else ever removes a generation of a session
/// that changed other than by an append: it may hold the only copy of those bytes (`ctxfold
/// restore ID@N --to FILE` saves one first).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-gc", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(arg = crate::cli::dry_run())]
pub struct GcArgs {
    /// Remove (without it, list what would be removed)
    #[arg(long)]
    pub apply: bool,
    /// Keep unreferenced objects and temp files younger than this: `now`, or a number with s, m, h,
    /// d or w (`30m`, `2d`)
    #[arg(long, value_name = "AGE", default_value = "1h", value_parser = crate::cli::human::parse_duration)]
    pub prune: Duration,
    /// Rewrite every pack at zstd level 19 in larger blocks: the smallest store, slowly
    #[arg(long)]
    pub aggressive: bool,
    /// Remove every session's generations (earlier versions kept by fold) too
    #[arg(long)]
    pub prune_generations: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for GcArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let _lock = match self.apply {
            true => Some(store.lock(Mode::Exclusive, || {
                io.note("waiting for running folds to finish…")
            })?),
            false => None,
        };
        // The cutoff is taken once the lock is held: the grace period counts from then.
        let cutoff = SystemTime::now()
            .checked_sub(self.prune)
            .ok_or_else(|| Error::usage("--prune is too long"))?;
        let dropping: Vec<(String, Generation)> = match self.prune_generations {
            true => generations::all(&store)?
                .into_iter()
                .flat_map(|(id, kept)| kept.into_iter().map(move |g| (id.clone(), g)))
                .collect(),
            false => Vec::new(),
        };
        let paths: Vec<PathBuf> = dropping.iter().map(|(_, g)| g.path.clone()).collect();
        let roots = gc::roots(&store, &paths)?;
        let plan = gc::plan(&store, &roots, cutoff, self.aggressive)?;
        let options = store.odb().pack_options(self.aggressive)?;
        let (verb, done) = if self.apply {
            // Generations first: a crash between the two must not leave one naming a removed object.
            let kept: Vec<Generation> = dropping.iter().map(|(_, g)| g.clone()).collect();
            generations::remove(&kept)?;
            (
                "removed",
                Some(gc::apply(&store, &roots, &plan, cutoff, options)?),
            )
        } else {
            ("would remove", None)
        };
        for (id, generation) in &dropping {
            emit(
                io.out,
                format_args!(
                    "{verb} generation {id}@{} ({})",
                    generation.number,
                    generation.describe()
                ),
            )?;
        }
        report(io, &plan, done.as_ref(), verb, dropping.len())?;
        if !self.apply {
            io.note("dry run: add --apply to remove and repack.");
        }
        Ok(Status::Success)
    }
}

/// What was done (after --apply: the objects actually dropped, the pack actually written), or what
/// would be.
fn report(
    io: &mut Io<'_>,
    plan: &gc::Plan,
    done: Option<&Repacked>,
    verb: &str,
    generations: usize,
) -> Result<()> {
    let sizes: HashMap<Digest, u64> = plan.dead_loose.iter().copied().collect();
    let dropped: Vec<Digest> = match done {
        Some(done) => done.dropped.iter().map(|(d, _)| *d).collect(),
        None => plan
            .dead_loose
            .iter()
            .map(|(d, _)| *d)
            .chain(plan.rewrite.iter().flat_map(|r| r.dead.iter().copied()))
            .collect(),
    };
    for digest in &dropped {
        match sizes.get(digest) {
            Some(size) => emit(
                io.out,
                format_args!("{verb} object {digest} ({})", bytes(*size)),
            )?,
            None => emit(io.out, format_args!("{verb} object {digest} (packed)"))?,
        }
    }
    for temp in &plan.temps {
        emit(io.out, format_args!("{verb} temp file {}", temp.display()))?;
    }
    let repacked = match done {
        Some(done) => match &done.pack {
            Some(pack) => format!(
                "repacked {} packs and {} loose objects into pack {} ({} objects, {})",
                done.removed_packs.len(),
                done.packed_loose,
                pack.name,
                pack.objects,
                bytes(pack.pack_bytes + pack.index_bytes)
            ),
            None => format!(
                "removed {} packs and {} loose objects, nothing left to pack",
                done.removed_packs.len(),
                done.packed_loose
            ),
        },
        None => format!(
            "would repack {} packs and {} loose objects",
            plan.rewrite.len(),
            plan.loose_to_pack
        ),
    };
    emit(
        io.out,
        format_args!(
            "{} unreferenced objects {verb}, {} temp files, {generations} generations; {repacked}; {} objects referenced; {} unreferenced objects younger than --prune kept",
            dropped.len(),
            plan.temps.len(),
            plan.referenced,
            plan.young,
        ),
    )
}
