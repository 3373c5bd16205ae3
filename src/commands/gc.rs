//! `ctxfold gc`: unreferenced objects and stale temp files removed (a dry run unless --apply).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::cli::human::{bytes, count, path};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit_either};
use crate::error::{Error, Result};
use std::collections::HashMap;

use crate::digest::Digest;
use crate::odb::repack::Repacked;
use crate::seeds::{index, resume};
use crate::store::generations::{self, Generation};
use crate::store::lock::Mode;
use crate::store::{gc, packing};

/// Remove objects no manifest references, and stale temp files (a dry run unless --apply)
///
/// Every manifest under manifests/ is a root, its subfolders included (generations/, conflicts/),
/// and so are the seed catalog's batches (seeds/catalog.jsonl) and every registered zstd
/// dictionary (dictionaries/: objects written with one need it). While any manifest or catalog
/// line cannot be read, gc removes nothing: it may name objects that would otherwise look
/// unreferenced (ctxfold fsck names it).
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
/// Loose manifests (manifests/<id>.json, and generations) are packed: each kept byte for byte as an
/// object, packed beside its session's objects, and named in the table manifests/packed.json (as git
/// packs refs into packed-refs); the loose file goes once both are durable. Every command reads
/// both forms, and a loose manifest written later (by fold, write-manifest, a sync, the reference
/// implementation) stands over a packed one of the same session. `ctxfold unpack` writes them back
/// as loose files; `ctxfold-cat-manifest --manifest` prints one as JSON.
///
/// Seed indexes an older ctxfold kept as files (context-fold/<id>/seed-index.jsonl) are moved into
/// the seed catalog (seeds/catalog.jsonl), where they are packed and compressed with the rest.
///
/// Stale temp files are the files and folders in <store>/tmp (a folder there is the staging a killed
/// sync left) and the `.*.tmp` files under objects/ and manifests/ older than the grace period.
/// A dry run takes no lock: while another ctxfold holds the store (a fold or a sync running), it
/// lists no temp file or folder, since those may be what that one is writing, and says so.
///
/// --prune-generations also removes every generation (manifests/generations/<id>/: the earlier
/// versions of sessions that fold kept when it replaced them; see ctxfold fold), listing each,
/// and then the objects only they referenced. Nothing else ever removes a generation of a session
/// that changed other than by an append: it may hold the only copy of those bytes (`ctxfold
/// restore ID@N --to FILE` saves one first).
///
/// Prints what it removed (or would remove), one per line, then a summary. --json prints JSON
/// Lines instead, `action` being `removed` or `would_remove`:
/// `{"type":"generation","action":…,"session":ID,"generation":N,"kept_at":TIME|null,"reason":"grown"|"changed"|null,"path":PATH}`,
/// `{"type":"object","action":…,"sha256":HEX,"bytes":N|null}` (null: packed),
/// `{"type":"temp_file","action":…,"path":PATH}`, `{"type":"temp_folder","action":…,"path":PATH}`,
/// `{"type":"manifests","action":"packed"|"would_pack","manifests":N}`, with --aggressive
/// `{"type":"checkpoints","action":"recompressed","checkpoints":N,"bytes_before":N,"bytes_after":N}`
/// (under --apply, when any got smaller) and `{"type":"mirror","action":"repacked","bytes_before":N,"bytes_after":N}`
/// (under --apply, when the store has a git mirror), then
/// `{"type":"summary","applied":BOOL,"objects":N,"temp_files":N,"generations":N,"referenced_objects":N,"young_objects_kept":N,"packs_rewritten":N,"loose_objects_packed":N,"pack":{"name":…,"objects":N,"bytes":N}|null}`
/// (`pack`: the pack written, under --apply).
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
    /// Rewrite every pack at zstd level 19 in larger blocks, compress fold's seed-resume
    /// checkpoints again at level 15, and repack the git mirror as `git gc --aggressive` does: the
    /// smallest store, slowly
    #[arg(long)]
    pub aggressive: bool,
    /// JSON Lines: one object per thing removed, then a summary
    #[arg(long)]
    pub json: bool,
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
        let lock = match self.apply {
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
        // Before the roots are taken: the objects the moved indexes become are roots.
        let legacy = index::legacy_sessions(&store)?;
        if self.apply {
            for id in &legacy {
                index::move_legacy(&store, id)?;
            }
        }
        let paths: Vec<PathBuf> = dropping.iter().map(|(_, g)| g.path.clone()).collect();
        let mut roots = gc::roots(&store, &paths)?;
        // Only once every manifest reads (the roots say so): then the roots again, since a packed
        // manifest's body is one.
        let manifests = match self.apply {
            true => packing::pack(&store)?,
            false => packing::packable(&store)?.len(),
        };
        if self.apply && manifests > 0 {
            roots = gc::roots(&store, &paths)?;
        }
        let mut plan = gc::plan(&store, &roots, cutoff, self.aggressive)?;
        // Asked once the temp files are listed: a writer running now may have made them. (A
        // store whose lock cannot be taken at all, one this user may only read, is listed.)
        let busy = !self.apply && matches!(store.try_lock(Mode::Exclusive), Ok(None));
        if busy {
            plan.temps.clear();
            plan.temp_folders.clear();
        }
        let options = store.odb().pack_options(self.aggressive)?;
        let (verb, done) = if self.apply {
            // Generations first: a crash between the two must not leave one naming a removed object.
            let kept: Vec<Generation> = dropping.iter().map(|(_, g)| g.clone()).collect();
            generations::remove(&store, &kept)?;
            (
                "removed",
                Some(gc::apply(&store, &roots, &plan, cutoff, options)?),
            )
        } else {
            ("would remove", None)
        };
        let say = Say {
            json: self.json,
            verb,
        };
        for (id, generation) in &dropping {
            say.line(
                io,
                format_args!(
                    "{verb} generation {id}@{} ({})",
                    generation.number,
                    generation.describe()
                ),
                serde_json::json!({
                    "type": "generation",
                    "session": id,
                    "generation": generation.number,
                    "kept_at": generation.kept.as_ref().map(|(at, _)| at),
                    "reason": generation.kept.as_ref().map(|(_, reason)| reason),
                    "path": generation.path,
                }),
            )?;
        }
        if !legacy.is_empty() {
            let verb = if self.apply { "moved" } else { "would move" };
            emit_either(
                io.out,
                self.json,
                format_args!(
                    "{verb} the seed indexes of {} from context-fold/ into the seed catalog",
                    count(legacy.len() as u64, "session")
                ),
                serde_json::json!({
                    "type": "seed_indexes",
                    "action": verb.replace(' ', "_"),
                    "sessions": legacy,
                }),
            )?;
        }
        if manifests > 0 {
            let verb = if self.apply { "packed" } else { "would pack" };
            emit_either(
                io.out,
                self.json,
                format_args!(
                    "{verb} {} into manifests/packed.json",
                    count(manifests as u64, "loose manifest")
                ),
                serde_json::json!({
                    "type": "manifests",
                    "action": verb.replace(' ', "_"),
                    "manifests": manifests,
                }),
            )?;
        }
        if self.apply && self.aggressive {
            let recompressed = resume::recompress(&store, resume::AGGRESSIVE_LEVEL)?;
            if recompressed.checkpoints > 0 {
                emit_either(
                    io.out,
                    self.json,
                    format_args!(
                        "recompressed {} of seed extraction: {} -> {}",
                        count(recompressed.checkpoints, "checkpoint"),
                        bytes(recompressed.before),
                        bytes(recompressed.after)
                    ),
                    serde_json::json!({
                        "type": "checkpoints",
                        "action": "recompressed",
                        "checkpoints": recompressed.checkpoints,
                        "bytes_before": recompressed.before,
                        "bytes_after": recompressed.after,
                    }),
                )?;
            }
        }
        // Not under the store's lock: a sync takes the mirror's, then the store's, and waiting
        // for the mirror's while holding the store's would wait for it forever.
        drop(lock);
        if self.apply && self.aggressive {
            repack_mirror(io, &store, self.json)?;
        }
        report(io, &plan, done.as_ref(), &say, dropping.len())?;
        if busy {
            io.note(
                "another ctxfold holds the store (a fold or a sync running): its temp files are \
                 not listed",
            );
        }
        if !self.apply {
            io.note("dry run: add --apply to remove and repack.");
        }
        Ok(Status::Success)
    }
}

/// Repack the store's git mirror (`<store>/mirror.git`) as `git gc --aggressive` would, if there
/// is one, waiting for a sync that holds it; say how its size changed.
fn repack_mirror(io: &mut Io<'_>, store: &crate::store::Store, json: bool) -> Result<()> {
    let dir = crate::mirror::default_dir(store);
    if !dir.join("HEAD").is_file() {
        return Ok(());
    }
    let mirror = crate::mirror::Mirror::open(&dir)?;
    let _lock =
        crate::mirror::lock::MirrorLock::take(&dir, || io.note(crate::mirror::lock::WAITING))?;
    let before = crate::store::usage::allocated(&dir)?;
    crate::mirror::partial::repack_aggressively(&mirror)?;
    let after = crate::store::usage::allocated(&dir)?;
    emit_either(
        io.out,
        json,
        format_args!(
            "repacked the git mirror: {} -> {}",
            bytes(before),
            bytes(after)
        ),
        serde_json::json!({
            "type": "mirror",
            "action": "repacked",
            "bytes_before": before,
            "bytes_after": after,
        }),
    )
}

/// How the report is written: for people, or as JSON Lines; `verb` says whether it was done.
struct Say {
    json: bool,
    verb: &'static str,
}

impl Say {
    /// One line: `human`, or `record` with its `action`.
    fn line(
        &self,
        io: &mut Io<'_>,
        human: impl std::fmt::Display,
        mut record: serde_json::Value,
    ) -> Result<()> {
        if record["type"] != "summary" {
            record["action"] = self.verb.replace(' ', "_").into();
        }
        emit_either(io.out, self.json, human, record)
    }
}

/// What was done (after --apply: the objects actually dropped, the pack actually written), or what
/// would be.
fn report(
    io: &mut Io<'_>,
    plan: &gc::Plan,
    done: Option<&Repacked>,
    say: &Say,
    generations: usize,
) -> Result<()> {
    let verb = say.verb;
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
        let size = sizes.get(digest);
        say.line(
            io,
            format_args!(
                "{verb} object {digest} ({})",
                size.map_or("packed".into(), |size| bytes(*size))
            ),
            serde_json::json!({"type": "object", "sha256": digest, "bytes": size}),
        )?;
    }
    for temp in &plan.temps {
        say.line(
            io,
            format_args!("{verb} temp file {}", path(temp)),
            serde_json::json!({"type": "temp_file", "path": temp}),
        )?;
    }
    for folder in &plan.temp_folders {
        say.line(
            io,
            format_args!(
                "{verb} temp folder {} (a killed sync's staging)",
                path(folder)
            ),
            serde_json::json!({"type": "temp_folder", "path": folder}),
        )?;
    }
    let repacked = match done {
        Some(done) => match &done.pack {
            Some(pack) if done.unchanged => format!("pack {} was packed so already", pack.name),
            Some(pack) => format!(
                "repacked {} and {} into pack {} ({}, {})",
                count(done.removed_packs.len() as u64, "pack"),
                count(done.packed_loose, "loose object"),
                pack.name,
                count(pack.objects, "object"),
                bytes(pack.pack_bytes + pack.index_bytes)
            ),
            None => format!(
                "removed {} and {}, nothing left to pack",
                count(done.removed_packs.len() as u64, "pack"),
                count(done.packed_loose, "loose object"),
            ),
        },
        None => format!(
            "would repack {} and {}",
            count(plan.rewrite.len() as u64, "pack"),
            count(plan.loose_to_pack, "loose object"),
        ),
    };
    let pack = done.and_then(|done| done.pack.as_ref());
    say.line(
        io,
        format_args!(
            "{verb} {}, {}, {}; {repacked}; {} referenced; {} younger than --prune kept",
            count(dropped.len() as u64, "unreferenced object"),
            count(
                (plan.temps.len() + plan.temp_folders.len()) as u64,
                "temp file"
            ),
            count(generations as u64, "generation"),
            count(plan.referenced, "object"),
            count(plan.young, "unreferenced object"),
        ),
        serde_json::json!({
            "type": "summary",
            "applied": done.is_some(),
            "objects": dropped.len(),
            "temp_files": plan.temps.len() + plan.temp_folders.len(),
            "generations": generations,
            "referenced_objects": plan.referenced,
            "young_objects_kept": plan.young,
            "packs_rewritten": done.map_or(plan.rewrite.len(), |d| d.removed_packs.len()),
            "loose_objects_packed": done.map_or(plan.loose_to_pack, |d| d.packed_loose),
            "pack": pack.map(|p| serde_json::json!({
                "name": p.name,
                "objects": p.objects,
                "bytes": p.pack_bytes + p.index_bytes,
            })),
        }),
    )
}
