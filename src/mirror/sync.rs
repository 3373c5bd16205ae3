//! A sync with one remote: mirror the store, fetch the remote's ctxfold branch, merge it into the
//! store, commit the merge (both parents) and push it. When one side already holds the other's
//! history, no merge commit is made: the branch moves forward, or only a push is needed.

use std::path::Path;

use gix::ObjectId;

use super::lock::MirrorLock;
use super::merge::{Report, merge};
use super::seal::remote::Sealed;
use super::{Mirror, git, partial};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::lock::Mode;
use crate::store::manifest::Manifest;

/// What a sync asks before it sends anything: given every manifest the push would send (each
/// version of a session the remote's history lacks) and whether the remote is encrypted, refuse
/// with an error, or say how many of them are worth a note (the sessions that hold secrets, sent
/// anyway).
pub type Screen<'a> = &'a dyn Fn(&[Manifest], bool) -> Result<u64>;

/// What a sync did.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    pub remote: String,
    /// The branch's commit afterwards (`None`: both sides empty).
    #[serde(serialize_with = "hex")]
    pub commit: Option<ObjectId>,
    /// The commit the remote's branch is at afterwards (`None`: no branch there): for an encrypted
    /// remote, the encrypted commit the host holds, not the plain one here.
    #[serde(serialize_with = "hex")]
    pub remote_commit: Option<ObjectId>,
    pub pushed: bool,
    /// Sessions the push gave the remote: folded here, and not there or folded otherwise there.
    pub sessions_pushed: u64,
    /// What the screen counted of the manifests the push sent (see [`Screen`]).
    pub sessions_with_secrets: u64,
    #[serde(flatten)]
    pub merged: Report,
}

fn hex<S: serde::Serializer>(id: &Option<ObjectId>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match id {
        Some(id) => s.serialize_str(&id.to_string()),
        None => s.serialize_none(),
    }
}

/// How a sync reaches its remote: which, and the identity file that decrypts it if it is
/// encrypted (`None`: this machine's).
pub struct Target<'a> {
    pub remote: &'a str,
    pub identity: Option<&'a Path>,
}

/// Sync `store` with the remote of the mirror repository at `git_dir`; `on_wait` is called once if
/// another sync, or a git an earlier one started, holds the mirror. `screen` sees what the push
/// would send before anything is merged: its refusal leaves the store as it was. An encrypted
/// remote (see `seal`) is opened into a plain commit before anything else, so that a file changed
/// there stops the sync before the screen and the merge.
pub fn sync(
    store: &Store,
    git_dir: &Path,
    target: Target<'_>,
    on_wait: impl FnOnce(),
    screen: Screen<'_>,
) -> Result<Outcome> {
    Mirror::open_or_init(git_dir)?;
    let _mirror = MirrorLock::take(git_dir, on_wait)?;
    sync_locked(store, git_dir, target, screen)
}

fn sync_locked(
    store: &Store,
    git_dir: &Path,
    target: Target<'_>,
    screen: Screen<'_>,
) -> Result<Outcome> {
    let remote = target.remote;
    // Shared, as every writer takes it: gc waits until the store is mirrored and merged.
    let _lock = store.lock(Mode::Shared, || {})?;
    let recorded = Mirror::open(git_dir)?;
    let before = recorded.head()?;
    let mine = recorded.record(store)?;
    let fetched = git::fetch(git_dir, remote)?;
    // Reopened: the fetch added a pack that a repository opened before may not look for.
    let mirror = Mirror::open(git_dir)?;
    let fetched = match fetched {
        true => mirror.resolve(&git::tracking_ref(remote))?,
        false => None,
    };
    let mut sealed = Sealed::for_remote(&mirror, remote, fetched, target.identity)?;
    let theirs = match (&mut sealed, fetched) {
        (Some(sealed), Some(tip)) => Some(sealed.plain_of(&mirror, tip)?),
        _ => fetched,
    };
    // What is ours alone goes to the remote (a merge only adds what the remote holds already).
    let sessions_with_secrets = match mine {
        Some(mine) => match manifests_to_send(&mirror, mine, theirs)
            .and_then(|m| screen(&m, sealed.is_some()))
        {
            Ok(n) => n,
            Err(e) => {
                if before != Some(mine) {
                    mirror.rewind(mine, before)?;
                }
                return Err(e);
            }
        },
        None => 0,
    };
    let merged = match theirs {
        Some(commit) => {
            let recorded = mine.map(|c| mirror.tree_of(c)).transpose()?;
            merge(store, &mirror, mirror.tree_of(commit)?, recorded)?
        }
        None => Report::default(),
    };
    let (commit, push) = settle(&mirror, store, mine, theirs, &merged, remote)?;
    let mut sessions_pushed = 0;
    let mut remote_commit = fetched;
    if let (Some(commit), true) = (commit, push) {
        sessions_pushed = sessions_new_to(&mirror, commit, theirs)?;
        let sent = match &mut sealed {
            Some(sealed) => {
                let sent = sealed.seal_commit(&mirror, commit, fetched)?;
                git::push(git_dir, remote, sent)?;
                sent
            }
            None => {
                partial::push(&mirror, store, remote, commit, theirs)?;
                commit
            }
        };
        remote_commit = Some(sent);
    }
    if let Some(sealed) = &sealed {
        sealed.save()?;
    }
    // The remote now holds the branch: a mirror of plain remotes keeps no second copy of it.
    match remote_commit.is_some() && sealed.is_none() {
        true => partial::shed(&mirror, remote)?,
        false => git::pack(git_dir)?,
    }
    Ok(Outcome {
        remote: remote.to_string(),
        commit,
        remote_commit,
        pushed: push,
        sessions_pushed,
        sessions_with_secrets: if push { sessions_with_secrets } else { 0 },
        merged,
    })
}

/// Every manifest under `manifests/` that a push of `ours` over `theirs` sends.
fn manifests_to_send(
    mirror: &Mirror,
    ours: ObjectId,
    theirs: Option<ObjectId>,
) -> Result<Vec<Manifest>> {
    let mut manifests = Vec::new();
    for (id, path) in git::files_to_send(mirror.git_dir(), ours, theirs)?.files {
        if !(path.starts_with("manifests/") && path.ends_with(".json")) {
            continue;
        }
        // A manifest over the cap is a tree of parts (see `cut`), listed under its own path too.
        let Some(bytes) = mirror.read_file(id)? else {
            continue;
        };
        // Parsed, not checked: its session is read (and verified) from its parts whatever its id
        // says (fsck's to judge), and one that does not parse names nothing to read.
        if let Ok(manifest) = serde_json::from_slice::<Manifest>(&bytes) {
            manifests.push(manifest);
        }
    }
    Ok(manifests)
}

/// How many session manifests `ours` holds that `theirs` does not hold the same.
fn sessions_new_to(mirror: &Mirror, ours: ObjectId, theirs: Option<ObjectId>) -> Result<u64> {
    let manifests = |commit: Option<ObjectId>| {
        let root = mirror.entries(commit.map(|c| mirror.tree_of(c)).transpose()?)?;
        let sub = root
            .get(b"manifests".as_slice())
            .filter(|e| e.mode.is_tree())
            .map(|e| e.oid);
        mirror.entries(sub)
    };
    let (ours, theirs) = (manifests(Some(ours))?, manifests(theirs)?);
    Ok(ours
        .iter()
        .filter(|(name, entry)| {
            name.ends_with(b".json") && theirs.get(*name).map(|e| e.oid) != Some(entry.oid)
        })
        .count() as u64)
}

/// Decide the branch's new commit after merging `theirs` into the store, and whether to push it.
fn settle(
    mirror: &Mirror,
    store: &Store,
    mine: Option<ObjectId>,
    theirs: Option<ObjectId>,
    merged: &Report,
    remote: &str,
) -> Result<(Option<ObjectId>, bool)> {
    let Some(theirs) = theirs else {
        return Ok((mine, mine.is_some()));
    };
    if mine == Some(theirs) {
        return Ok((mine, false));
    }
    let ours_in_theirs = match mine {
        Some(mine) => mirror.is_ancestor(mine, theirs)?,
        None => true,
    };
    let tree = mirror.write_store_tree(store, mine.map(|c| mirror.tree_of(c)).transpose()?)?;
    if ours_in_theirs && tree == mirror.tree_of(theirs)? {
        mirror.fast_forward(mine, theirs)?;
        return Ok((Some(theirs), false));
    }
    if let (Some(mine), false) = (mine, merged.changed()) {
        // The remote has merged ours already, or has nothing we lack: no new commit.
        if ours_in_theirs {
            return Ok((Some(mine), false));
        }
        if mirror.is_ancestor(theirs, mine)? {
            return Ok((Some(mine), true));
        }
    }
    let parents: Vec<ObjectId> = mine.into_iter().chain([theirs]).collect();
    let commit = mirror.commit(tree, &parents, &format!("ctxfold sync with {remote}\n"))?;
    Ok((Some(commit), true))
}

/// Make an empty store a copy of the one at `url`: its mirror gets `url` as remote `origin`,
/// then it syncs.
pub fn clone(
    store: &Store,
    git_dir: &Path,
    url: &str,
    identity: Option<&Path>,
    on_wait: impl FnOnce(),
    screen: Screen<'_>,
) -> Result<Outcome> {
    if !store.manifest_files()?.is_empty() || store.odb().list()?.next().is_some() {
        return Err(Error::refused(format!(
            "{} already holds sessions: add the remote and sync instead",
            store.root().display()
        )));
    }
    Mirror::open_or_init(git_dir)?;
    let _mirror = MirrorLock::take(git_dir, on_wait)?;
    // A clone that failed half-way (the network) is simply run again.
    match git::remotes(git_dir)?
        .into_iter()
        .find(|r| r.name == "origin")
    {
        Some(origin) if origin.url != url => {
            return Err(Error::refused(format!(
                "the mirror already has remote origin at {}",
                origin.url
            )));
        }
        Some(_) => {}
        None => git::remote_add(git_dir, "origin", url)?,
    }
    let origin = Target {
        remote: "origin",
        identity,
    };
    sync_locked(store, git_dir, origin, screen)
}
