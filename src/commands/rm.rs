//! `ctxfold rm`: folded sessions taken out of the store, every version of them (a dry run unless
//! --apply). Objects stay for gc, which alone decides what nothing references any more.

use std::fs;
use std::io;
use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::{IoContext, Result};
use crate::files::atomic::sync_parent;
use crate::files::{entry_names, remove_if_present};
use crate::history::named::file_of;
use crate::seeds::catalog::Catalog;
use crate::seeds::index;
use crate::store::Store;
use crate::store::generations::{self, Generation};
use crate::store::lock::Mode;

/// Remove folded sessions from the store (a dry run unless --apply)
///
/// For each SESSION, everything the store holds of it goes: its manifest, the generations fold
/// kept of it (manifests/generations/<id>/), the conflicts sync kept of it
/// (manifests/conflicts/<id>@….json), its seed index (its lines of seeds/catalog.jsonl) and the
/// context-fold extension's files kept of it (context-fold/<id>/), so that a session
/// folded by mistake is gone in every version. Its objects are left to gc: those no other session
/// shares become unreferenced, and `ctxfold gc --apply` removes them once they are older than its
/// grace period (`--prune=now`: at once). Source files are never touched. A store that syncs gets
/// a session back from a remote that still holds it: remove it there too.
///
/// A session whose source file is gone (a fold with --remove-source removed it) has its only copy
/// on this machine in the store: rm warns of each, and `--json` says `"source_gone":true`.
///
/// A SESSION the store holds nothing of is reported on stderr and the others are still removed;
/// the status is then 1.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-rm", version, after_long_help = crate::cli::EXIT_STATUS)]
#[command(arg = crate::cli::dry_run())]
pub struct RmArgs {
    /// The folded sessions: ids, or unique prefixes of them
    #[arg(value_name = "SESSION", required = true, add = crate::cli::complete::session_ids())]
    pub sessions: Vec<String>,
    /// Remove (without it, list what would be removed)
    #[arg(long)]
    pub apply: bool,
    /// One JSON object per session (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// Everything the store holds of one session.
struct Held {
    manifest: Option<PathBuf>,
    generations: Vec<Generation>,
    conflicts: Vec<PathBuf>,
    /// The context-fold extension's folder (an older store's seed index, handoff files).
    extension_dir: Option<PathBuf>,
    /// Batches in the seed catalog.
    seed_batches: usize,
}

impl Held {
    fn seed_index(&self) -> bool {
        self.extension_dir.is_some() || self.seed_batches > 0
    }

    fn anything(&self) -> bool {
        self.manifest.is_some()
            || !self.generations.is_empty()
            || !self.conflicts.is_empty()
            || self.seed_index()
    }
}

impl Command for RmArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let _lock = match self.apply {
            true => Some(store.lock(Mode::Shared, || {
                io.note("waiting for the store lock (held by a gc)…")
            })?),
            false => None,
        };
        let mut status = Status::Success;
        let mut removed = 0;
        let catalog = Catalog::load(&store)?;
        // Every name resolved before anything is removed: an ambiguous one removes nothing.
        let mut ids = Vec::with_capacity(self.sessions.len());
        for spec in &self.sessions {
            let holds = |id: &str| Ok(held(&store, &catalog, id)?.anything());
            match store.resolve_session_held(spec, holds) {
                Ok(id) => ids.push(id),
                Err(e) if e.status() == Status::Negative => {
                    io.warn(e);
                    status = status.worst(Status::Negative);
                }
                Err(e) => return Err(e),
            }
        }
        for id in &ids {
            let held = held(&store, &catalog, id)?;
            let gone = gone_source(&store, &held);
            if let Some(source) = &gone {
                let source = crate::cli::human::path(source);
                match self.apply {
                    true => io.warn(format_args!(
                        "{id}: its source {source} was gone: that was its only copy on this \
                         machine (a remote the store synced it to still holds it: `ctxfold sync` \
                         brings it back)"
                    )),
                    false => io.warn(format_args!(
                        "{id}: its source {source} is gone: the store holds its only copy \
                         (`ctxfold restore {id}` puts it back first)"
                    )),
                }
            }
            if self.apply {
                remove(&store, id, &held)?;
                removed += 1;
            }
            if self.json {
                let line = serde_json::json!({
                    "session": id,
                    "removed": self.apply,
                    "manifest": held.manifest.is_some(),
                    "generations": held.generations.len(),
                    "conflicts": held.conflicts.len(),
                    "seed_index": held.seed_index(),
                    "source_gone": gone.is_some(),
                });
                emit(io.out, line)?;
            } else {
                let verb = if self.apply {
                    "removed"
                } else {
                    "would remove"
                };
                emit(io.out, format_args!("{verb} {id}: {}", describe(&held)))?;
            }
        }
        if !self.apply {
            io.note("dry run: add --apply to remove.");
        } else if removed > 0 {
            io.note(
                "their objects go at the next `ctxfold gc --apply` (`--prune=now`: without waiting for the grace period)",
            );
        }
        Ok(status)
    }
}

/// The source the session was folded from, when it is no longer there (nor compressed beside):
/// the store's copy is then the only one. `None` when there is no manifest to say where it was.
fn gone_source(store: &Store, held: &Held) -> Option<PathBuf> {
    let manifest = store.load_manifest_at(held.manifest.as_ref()?).ok()?;
    match file_of(&manifest.session) {
        Some(_) => None,
        None => Some(PathBuf::from(manifest.session.rollout_path)),
    }
}

/// What the store holds of session `id`.
fn held(store: &Store, catalog: &Catalog, id: &str) -> Result<Held> {
    let manifest = Some(store.manifest_path(id)).filter(|_| store.has_manifest(id));
    let generations = generations::list(store, id)?;
    let conflicts = conflicts_of(store, id)?;
    let extension_dir = Some(store.context_fold_dir().join(id)).filter(|p| p.exists());
    Ok(Held {
        manifest,
        generations,
        conflicts,
        extension_dir,
        seed_batches: catalog.of(id).count(),
    })
}

/// `manifests/conflicts/<id>@<12 hex>.json`: the remote versions sync kept beside this session.
fn conflicts_of(store: &Store, id: &str) -> Result<Vec<PathBuf>> {
    let dir = store.manifests_dir().join("conflicts");
    let mut found: Vec<PathBuf> = entry_names(&dir)?
        .into_iter()
        .filter(|name| {
            name.strip_suffix(".json")
                .and_then(|n| n.rsplit_once('@'))
                .is_some_and(|(named, _)| named == id)
        })
        .map(|name| dir.join(name))
        .collect();
    found.sort();
    Ok(found)
}

/// Remove what `held` lists: the manifest last, so that an interrupted rm leaves the session
/// listed (and `rm` again finishes it) rather than hidden leftovers.
fn remove(store: &Store, id: &str, held: &Held) -> Result<()> {
    generations::remove(store, &held.generations)?;
    for conflict in &held.conflicts {
        remove_if_present(conflict)?;
        sync_parent(conflict)?;
    }
    if let Some(dir) = &held.extension_dir {
        match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(e).with_path("remove", dir);
            }
            _ => sync_parent(dir)?,
        }
    }
    index::forget(store, id)?;
    if let Some(manifest) = &held.manifest {
        store.remove_manifests(std::slice::from_ref(manifest))?;
    }
    Ok(())
}

/// `manifest, 2 generations, 1 conflict, seed index`.
fn describe(held: &Held) -> String {
    let count = |n: usize, one: &str| match n {
        0 => None,
        1 => Some(format!("1 {one}")),
        n => Some(format!("{n} {one}s")),
    };
    [
        held.manifest.as_ref().map(|_| "manifest".to_string()),
        count(held.generations.len(), "generation"),
        count(held.conflicts.len(), "conflict"),
        held.seed_index().then(|| "seed index".to_string()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}
