//! `ctxfold sync` and `ctxfold clone`: the store merged with a git remote's, both ways.

use std::path::{Path, PathBuf};

use crate::cli::human::count;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::mirror::GitArgs;
use crate::error::{Error, Result};
use crate::mirror::sync::{Outcome, Target, clone, sync};
use crate::mirror::{Mirror, git};
use crate::secrets::gate::{Policy, screen};
use crate::store::lock::Mode;
use crate::store::{Store, packing};

/// Sync the store with a git remote: mirror, fetch, merge, commit, push
///
/// The store is mirrored (see ctxfold-mirror), the remote's `ctxfold` branch is fetched and merged
/// into the store, the merge is committed in the mirror with both parents, and pushed. Fetch and
/// push run the real `git` binary, so credential helpers, `~/.ssh/config`, `GIT_SSH_COMMAND` and
/// the rest of git's configuration apply exactly as for git itself. REMOTE defaults to `origin`,
/// or to the only remote there is (see ctxfold remote).
///
/// Merging is lossless and checks everything before changing anything: every new remote object
/// must hash to its name, every new manifest must reconstruct to its source. A remote object or
/// manifest that fails aborts the whole sync with the store as it was. zstd dictionaries travel
/// too (their registrations `dictionaries/<sha256>`, never `dictionaries/CURRENT`: which one new
/// objects are written with stays each machine's choice): each remote dictionary this store lacks
/// must come with its object, which is verified first, then used to verify the remote objects
/// written with it; a missing or corrupt one aborts the sync likewise. Dictionaries are
/// registered after every object is in place and before any manifest. A session new to this store
/// is added; one folded on both sides keeps the longer fold when it extends the other (the same
/// rollout folded later); otherwise both are kept and the remote's is put at
/// `manifests/conflicts/<id>@<first 12 hex of its source sha256>.json` and reported. Seed indexes
/// become the union of their lines, local lines first. The store lock is held shared while merging.
/// A merge that adds 256 or more sessions (a clone) commits their manifests into the packed form
/// at once (see ctxfold gc); fewer are committed loose, and packed once 256 or more are loose.
///
/// A manifest's bytes are verified; its rollout_path is not trusted. Each manifest added whose
/// session `ctxfold restore` will not put back by itself (a file folded by path, or a rollout_path
/// that is not where its agent keeps that session: see ctxfold-restore) is named in a note on
/// stderr, one line each, and kept: it restores with --to. A manifest with an unsafe session id
/// (one that is not a plain file name) is refused like any invalid manifest.
///
/// An encrypted remote (see ctxfold-remote: `remote add --encrypt`) is decrypted with this
/// machine's age identity (see ctxfold-key) or the one --identity names, before anything else:
/// without a matching identity the sync is refused (status 3) naming the recipients the remote
/// expects; a file of the remote that fails authentication (changed there) stops it (status 4)
/// naming the file, before anything is merged. What is pushed there is encrypted to the
/// remote's recipients; the store stays as it is here. This machine encrypts only to the
/// recipients its configuration names: a remote that names others is refused until `ctxfold remote
/// recipients` agrees.
///
/// Before anything is merged, every session version the push would send (each one the remote's
/// history lacks) is scanned for credentials as `ctxfold secrets` scans (what was scanned before is
/// remembered, so this reads only what is new). To an encrypted remote they are pushed, and the
/// sync says how many hold secrets. To a plain one, while any holds one, the sync is refused (status
/// 3) with the store as it was, and the sessions are named: `ctxfold secrets ID` shows where, and
/// --allow-secrets pushes them anyway (how many is said). The mirror's commit of the refused state
/// is undone, so a session taken out (`ctxfold rm`) is not sent by the next sync. A session an
/// earlier mirror commit holds (a sync whose push failed) that the store can no longer read, taken
/// out and collected since, is refused likewise: what cannot be scanned is not sent unasked.
///
/// Once a plain remote holds the branch, the mirror drops its copies of the store's packs and
/// loose objects (they are in the store and there): it is a partial repository whose remotes are
/// promisor remotes (`git clone --filter`), and keeps commits, trees, manifests, the seed catalog
/// and pack indexes. A remote that lacks them later (one added since) gets them from the store's
/// files; a merge that needs one the store gave up (a session taken out here, brought back from
/// the remote) has git fetch it. A mirror with an encrypted remote keeps everything it writes, and
/// so does one whose git is older than 2.43 (which cannot repack with a filter).
///
/// Prints what changed (with --json, one JSON object, the notes in its `unplaced`). `pushed COMMIT`
/// names the commit the remote got: for an encrypted remote, the encrypted one the host holds (in
/// JSON, `commit` is this mirror's commit and `remote_commit` the remote's).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-sync", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct SyncArgs {
    /// The remote [default: origin, or the only remote]
    #[arg(value_name = "REMOTE")]
    pub remote: Option<String>,
    /// Push sessions that hold credentials (see ctxfold-secrets) instead of refusing to
    #[arg(long)]
    pub allow_secrets: bool,
    /// The age identity file that decrypts an encrypted remote [default: this machine's, see
    /// ctxfold-key]
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub identity: Option<PathBuf>,
    /// One JSON object instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub git: GitArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for SyncArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.init()?;
        let dir = self.git.dir(&store);
        let remote = match self.remote {
            Some(remote) => remote,
            None => default_remote(&Mirror::open_or_init(&dir)?)?,
        };
        let wait = || io.note(crate::mirror::lock::WAITING);
        let policy = match self.allow_secrets {
            true => Policy::Send,
            false => Policy::Refuse,
        };
        let target = Target {
            remote: &remote,
            identity: self.identity.as_deref(),
        };
        let outcome = sync(&store, &dir, target, wait, &|m, encrypted| {
            screen(&store, policy, m, encrypted)
        })
        .map_err(|e| e.context(format_args!("sync with {remote}")))?;
        packing::pack_auto(&store)?;
        report(io, &outcome, self.json)
    }
}

fn default_remote(mirror: &Mirror) -> Result<String> {
    let remotes = git::remotes(mirror.git_dir())?;
    if let Some(origin) = remotes.iter().find(|r| r.name == "origin") {
        return Ok(origin.name.clone());
    }
    match remotes.as_slice() {
        [only] => Ok(only.name.clone()),
        [] => Err(Error::usage(
            "no remote to sync with: add one with 'ctxfold remote add NAME URL'",
        )),
        _ => Err(Error::usage(
            "several remotes and none is 'origin': name the one to sync with",
        )),
    }
}

/// Make an empty store a copy of a remote's: the remote becomes `origin`, then the store syncs
///
/// The store (created when missing) must hold no session yet; its mirror repository gets URL as
/// remote `origin` and `ctxfold sync origin` runs, fetching and verifying everything, and noting
/// on stderr each session `ctxfold restore` will not place without --to (see ctxfold-sync). A
/// `sync` into an empty store does the same with a remote added by hand. A clone refused by the
/// remote (see ctxfold-sync: no identity for an encrypted one, a file changed there) removes the
/// store it created; one that failed half-way (the network) is run again. An encrypted remote is
/// recognised as such and decrypted with this machine's age identity or the one --identity names
/// (see ctxfold-sync); its recipients become the ones this machine encrypts it to. The sessions'
/// manifests are committed packed (see ctxfold gc) once there are 256 or more of them.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-clone", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct CloneArgs {
    /// Any URL or path git can fetch from (a relative path is kept as the absolute one it names
    /// from here)
    #[arg(value_name = "URL")]
    pub url: String,
    /// The age identity file that decrypts an encrypted remote [default: this machine's, see
    /// ctxfold-key]
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub identity: Option<PathBuf>,
    /// One JSON object instead of text
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub git: GitArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for CloneArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let path = self.store.path()?;
        let created = !path.exists();
        let store = self.store.init()?;
        let wait = || io.note(crate::mirror::lock::WAITING);
        // An empty store has nothing of its own to send: nothing to allow.
        let refuse = &|m: &[_], encrypted| screen(&store, Policy::Refuse, m, encrypted);
        let dir = self.git.dir(&store);
        let outcome = clone(
            &store,
            &dir,
            &self.url,
            self.identity.as_deref(),
            wait,
            refuse,
        )
        .map_err(|e| {
            // A store this clone made goes when the remote refused it (no identity for an
            // encrypted remote, a file changed there): a refused clone writes nothing. Only
            // one it made, never one that was there before; one that failed half-way (the
            // network, the disk) stays, to be run again.
            if created && matches!(e.status(), Status::Refused | Status::Corrupt) {
                remove_unless_written_to(&store, &path);
            }
            e.context(format_args!("clone {}", self.url))
        })?;
        packing::pack_auto(&store)?;
        report(io, &outcome, self.json)
    }
}

/// Remove the store at `path` a refused clone made, unless another writer put a session in it
/// meanwhile (a fold started at the same moment knew the path as its store's too): looked at and
/// removed under the store lock taken exclusive, which every writer holds shared from its first
/// object to its last manifest. Left, it is a store like any other.
fn remove_unless_written_to(store: &Store, path: &Path) {
    let Ok(Some(_alone)) = store.try_lock(Mode::Exclusive) else {
        return;
    };
    if store.session_ids().is_ok_and(|ids| ids.is_empty()) {
        let _ = std::fs::remove_dir_all(path);
    }
}

fn report(io: &mut Io<'_>, outcome: &Outcome, json: bool) -> Result<Status> {
    for unplaced in &outcome.merged.unplaced {
        io.note(format_args!(
            "{} ({}): {}; restore {} needs --to",
            unplaced.session, unplaced.manifest, unplaced.why, unplaced.session
        ));
    }
    if json {
        emit(
            io.out,
            serde_json::to_string(outcome).expect("outcomes serialize"),
        )?;
        return Ok(Status::Success);
    }
    let merged = &outcome.merged;
    for dictionary in &merged.dictionaries_added {
        emit(io.out, format_args!("added zstd dictionary {dictionary}"))?;
    }
    for session in &merged.sessions_added {
        emit(io.out, format_args!("added {session}"))?;
    }
    for session in &merged.sessions_extended {
        emit(io.out, format_args!("extended {session}"))?;
    }
    for conflict in &merged.conflicts {
        emit(
            io.out,
            format_args!(
                "conflict {}: both kept, the remote's at {}",
                conflict.session, conflict.path
            ),
        )?;
    }
    // What was pushed is what the remote got (for an encrypted remote, not the commit here).
    let pushed = match (outcome.commit, outcome.remote_commit) {
        (Some(_), Some(sent)) if outcome.pushed && outcome.sessions_with_secrets > 0 => format!(
            "pushed {sent}: {} new or changed there, {} holding secrets",
            count(outcome.sessions_pushed, "session"),
            count(outcome.sessions_with_secrets, "session")
        ),
        (Some(_), Some(sent)) if outcome.pushed => format!(
            "pushed {sent}: {} new or changed there",
            count(outcome.sessions_pushed, "session")
        ),
        (Some(commit), _) => format!("at {commit}, nothing to push"),
        (None, _) => "both sides empty, nothing to push".into(),
    };
    emit(
        io.out,
        format_args!(
            "{}: pulled {}, {} added, {} extended, {}, {}; {pushed}",
            outcome.remote,
            count(merged.objects_added, "object"),
            count(merged.sessions_added.len() as u64, "session"),
            merged.sessions_extended.len(),
            count(merged.conflicts.len() as u64, "conflict"),
            count(merged.seed_lines_added, "seed line"),
        ),
    )?;
    Ok(Status::Success)
}
