//! A mirror that does not hold the store's data a second time. Once a plain remote holds the
//! branch, the blobs of the store's packs and loose objects are on that remote and in the store
//! itself: the mirror drops them and keeps the commits, the trees and the small files that change
//! (manifests, the seed catalog, pack indexes), as a `git clone --filter` keeps what it fetched.
//! Every remote becomes a promisor remote, so that git fetches back on demand a dropped blob that
//! something still reads (a merge bringing back a pack the store gave up, the first seal for an
//! encrypted remote added since; see `Mirror::read_file`). A push to a remote that lacks them
//! takes them from the store's files instead ([`restore_dropped`]).
//!
//! The drop is a repack with a filter whose dropped objects go to a pack of their own, which is
//! an alternate object folder of the mirror until the kept packs are marked as promisor packs
//! again (the mark that lets git go without what they name): killed at any point, the mirror
//! holds every object the remote does not. Killed while the packs are unmarked, `git fsck` of
//! the mirror calls the blobs dropped before missing until the next sync marks them again.
//! A mirror with an encrypted remote drops nothing more: its plain commits are on no remote.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use gix::ObjectId;

use super::git::{self, NO_DELTAS_OVER, ToSend, run_ok};
use super::{GitContext, Mirror, cut};
use crate::error::{IoContext, Result};
use crate::files::atomic::{sync_dir, sync_parent, write_file};
use crate::files::remove_if_present;
use crate::store::Store;

/// The git configuration key that makes a repository partial, naming its first promisor remote.
pub(crate) const PARTIAL: &str = "extensions.partialClone";

/// Where the dropped objects wait until the kept packs are marked (an object folder).
const SHED: &str = "ctxfold-shed";

/// Whether the mirror at `git_dir` is partial (has dropped, or may drop, blobs).
pub fn is_partial(git_dir: &Path) -> Result<bool> {
    Ok(!git::config_values(git_dir, PARTIAL)?.is_empty())
}

/// The first git whose `repack` takes a filter and puts what it leaves out elsewhere.
const FILTERED_REPACK: (u32, u32) = (2, 43);

/// Drop from the mirror the blobs of the store's packs and loose objects, all of which `remote`
/// holds (the branch was just pushed there or fetched from it); or, where it may not (a remote of
/// it is encrypted, or git cannot), only pack it.
pub fn shed(mirror: &Mirror, remote: &str) -> Result<()> {
    let git_dir = mirror.git_dir();
    let remotes = git::remotes(git_dir)?;
    let mut encrypted = false;
    for other in &remotes {
        encrypted |= !super::seal::remote::configured(git_dir, &other.name)?.is_empty();
    }
    if encrypted || git::version()? < FILTERED_REPACK {
        return git::pack(git_dir);
    }
    for other in &remotes {
        let key = format!("remote.{}.promisor", other.name);
        if git::config_values(git_dir, &key)?.is_empty() {
            git::set_config_values(git_dir, &key, &["true".into()])?;
        }
    }
    // ctxfold packs the mirror itself: a `git gc --auto` that a fetch (a lazy one too) starts in
    // the background would repack beside it.
    for (key, value) in [("gc.auto", "0"), ("maintenance.auto", "false")] {
        if git::config_values(git_dir, key)?.is_empty() {
            git::set_config_values(git_dir, key, &[value.into()])?;
        }
    }
    // Named anew when the remote it named was removed.
    let named = git::config_values(git_dir, PARTIAL)?;
    if !remotes.iter().any(|r| named.contains(&r.name)) {
        git::set_config_values(git_dir, PARTIAL, &[remote.to_string()])?;
    }
    repack(mirror, &[])
}

/// What `git gc --aggressive` does for a repository: the mirror repacked with every delta searched
/// for anew, in a wider window and deeper chains (the manifests of forks delta against each
/// other), dropping what a partial mirror drops.
pub fn repack_aggressively(mirror: &Mirror) -> Result<()> {
    const AGGRESSIVE: [&str; 3] = ["-f", "--window=250", "--depth=50"];
    if is_partial(mirror.git_dir())? && git::version()? >= FILTERED_REPACK {
        return repack(mirror, &AGGRESSIVE);
    }
    let args = ["-c", NO_DELTAS_OVER, "repack", "-a", "-d", "-q"];
    run_ok(
        mirror.git_dir(),
        "repack the mirror",
        args.into_iter().chain(AGGRESSIVE),
    )?;
    Ok(())
}

/// Repack the mirror whole with `extra` arguments to git, dropping the store's data files.
fn repack(mirror: &Mirror, extra: &[&str]) -> Result<()> {
    let git_dir = mirror.git_dir();
    let packs = git_dir.join("objects/pack");
    let shed = git_dir.join(SHED);
    let alternates = git_dir.join("objects/info/alternates");
    fs::create_dir_all(shed.join("pack")).with_path("create", &shed)?;
    let info = alternates
        .parent()
        .expect("the alternates file is in objects/info");
    fs::create_dir_all(info).with_path("create", info)?;
    let kept = add_alternate(&alternates, &shed)?;
    // Written into the folder that goes, not left behind as a loose object of the mirror.
    let spec = gix::objs::Write::write_buf(
        &gix::odb::loose::Store::at(&shed, mirror.repo().object_hash()),
        gix::objs::Kind::Blob,
        kept_paths(&current_indexes(mirror)?).as_bytes(),
    )
    .git(|| "write the mirror's filter into git".into())?;
    let filter = format!("--filter=sparse:oid={spec}");
    let to = format!("--filter-to={}", shed.join("pack/pack").display());
    // Unmarked, so that the filter applies to all (git repacks marked packs whole): what they
    // lack is all under the paths the filter leaves out, which git then never reads. Loose
    // objects the filter keeps are packed; those it leaves out stay loose, and go below.
    mark_promisor_packs(&packs, false)?;
    let args = [
        "-c",
        NO_DELTAS_OVER,
        "repack",
        "-a",
        "-d",
        "-q",
        "--no-write-bitmap-index",
        &filter,
        &to,
    ];
    run_ok(
        git_dir,
        "drop from the mirror what the remote holds",
        args.iter().chain(extra),
    )?;
    // Every pack is on a remote now (the branch, the other remotes' branches; what no ref reaches
    // does not count).
    mark_promisor_packs(&packs, true)?;
    write_alternates(&alternates, &kept)?;
    fs::remove_dir_all(&shed).with_path("remove", &shed)?;
    remove_loose_objects(&git_dir.join("objects"))
}

/// Remove the loose objects left after a repack of everything: what its filter left out (on a
/// remote, named by promisor packs) and what nothing reaches.
fn remove_loose_objects(objects: &Path) -> Result<()> {
    for entry in fs::read_dir(objects).with_path("list", objects)? {
        let dir = entry.with_path("list", objects)?.path();
        let fan = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if fan.len() != 2 || !fan.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        for object in fs::read_dir(&dir).with_path("list", &dir)? {
            let object = object.with_path("list", &dir)?.path();
            fs::remove_file(&object).with_path("remove", &object)?;
        }
        fs::remove_dir(&dir).with_path("remove", &dir)?;
    }
    Ok(())
}

/// Push `commit` to `remote`, whose branch is at `theirs`, with what it lacks that the mirror
/// dropped put back first ([`restore_dropped`]).
pub fn push(
    mirror: &Mirror,
    store: &Store,
    remote: &str,
    commit: ObjectId,
    theirs: Option<ObjectId>,
) -> Result<()> {
    let git_dir = mirror.git_dir();
    let listed = git::files_to_send(git_dir, commit, theirs)?;
    let unrestored = listed.missing.len() - restore_dropped(mirror, store, &listed)?;
    git::push(git_dir, remote, commit).map_err(|e| match unrestored {
        0 => e,
        n => e.context(format!(
            "{n} files of the mirror's history are in neither this store nor the mirror, which \
             dropped them once a remote held them: that remote must be reachable, or move {} \
             aside and add the remote again, to push a new history",
            git_dir.display()
        )),
    })
}

/// Put back, from the store's own files, the blobs a push needs that the mirror dropped: a remote
/// that lacks them (one added since, or emptied) gets them from this disk, not through another
/// remote, which may be gone. A blob whose file the store no longer holds as it was is left to git
/// (which fetches it from a promisor remote, or says why it cannot).
/// Returns how many it put back, as loose objects (which the next shed removes again).
fn restore_dropped(mirror: &Mirror, store: &Store, listed: &ToSend) -> Result<usize> {
    let mut restored = 0;
    if listed.missing.is_empty() {
        return Ok(restored);
    }
    let missing: HashSet<ObjectId> = listed.missing.iter().copied().collect();
    let cap = mirror.file_cap()?;
    for (tree, path) in &listed.files {
        let header = mirror
            .repo()
            .find_header(*tree)
            .git(|| format!("read object {tree}"))?;
        if header.kind() != gix::objs::Kind::Tree {
            continue;
        }
        for (name, entry) in mirror.entries(Some(*tree))? {
            if !missing.contains(&entry.oid) {
                continue;
            }
            let name = String::from_utf8_lossy(&name);
            if let Some(bytes) = store_bytes(store, path, &name, cap)? {
                let kind = mirror.repo().object_hash();
                if gix::objs::compute_hash(kind, gix::objs::Kind::Blob, &bytes)
                    .is_ok_and(|id| id == entry.oid)
                {
                    mirror
                        .repo()
                        .write_blob(&bytes)
                        .git(|| format!("write blob {} into git", entry.oid))?;
                    restored += 1;
                }
            }
        }
    }
    Ok(restored)
}

/// The bytes the mirror's file `name` in folder `dir` holds, read from the store: a whole file,
/// or one part of a file cut at `cap` (see `cut`); `None` when the store has no such file.
fn store_bytes(store: &Store, dir: &str, name: &str, cap: u64) -> Result<Option<Vec<u8>>> {
    let (file, range) = match cut::part_number(name) {
        Some(n) => (
            store.root().join(dir),
            Some(n as u64 * cap..(n as u64 + 1) * cap),
        ),
        None => (store.root().join(dir).join(name), None),
    };
    let bytes = match fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_path("read", &file),
    };
    Ok(match range {
        None => Some(bytes),
        Some(range) => {
            let end = range.end.min(bytes.len() as u64) as usize;
            bytes.get(range.start as usize..end).map(<[u8]>::to_vec)
        }
    })
}

/// What the mirror keeps of a tree, as a sparse-checkout specification: everything but the
/// store's packs and loose objects (each named by its content) and the indexes of packs the store
/// no longer holds (`indexes`: the names of those it does).
fn kept_paths(indexes: &[String]) -> String {
    let dir = crate::odb::pack::DIR;
    let mut spec = format!("/*\n!/objects/\n!/{dir}/*\n");
    for name in indexes {
        spec.push_str(&format!("/{dir}/{name}\n"));
    }
    spec
}

/// The names of the pack indexes the branch's tree holds.
fn current_indexes(mirror: &Mirror) -> Result<Vec<String>> {
    let root = mirror.entries(mirror.head()?.map(|c| mirror.tree_of(c)).transpose()?)?;
    let packs = root
        .get(crate::odb::pack::DIR.as_bytes())
        .filter(|e| e.mode.is_tree())
        .map(|e| e.oid);
    Ok(mirror
        .entries(packs)?
        .into_keys()
        .map(|name| String::from_utf8_lossy(&name).into_owned())
        .filter(|name| name.ends_with(".idx"))
        .collect())
}

/// Add `dir` to the mirror's alternate object folders; return the others, as they were.
fn add_alternate(alternates: &Path, dir: &Path) -> Result<Vec<String>> {
    let others = match fs::read_to_string(alternates) {
        Ok(text) => text
            .lines()
            .filter(|l| Path::new(l) != dir)
            .map(str::to_string)
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_path("read", alternates),
    };
    let mut all = others.clone();
    all.push(dir.display().to_string());
    write_alternates(alternates, &all)?;
    Ok(others)
}

/// Make `lines` the mirror's alternate object folders (none: no file).
fn write_alternates(alternates: &Path, lines: &[String]) -> Result<()> {
    if lines.is_empty() {
        remove_if_present(alternates)?;
        return sync_parent(alternates);
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let dir = alternates
        .parent()
        .expect("the alternates file is in objects/info");
    write_file(dir, ".alternates-", alternates, text.as_bytes(), true)?;
    Ok(())
}

/// Mark every pack in `dir` as a promisor pack (the objects it names but lacks are on a remote),
/// or unmark them all.
fn mark_promisor_packs(dir: &Path, marked: bool) -> Result<()> {
    let listing = match fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_path("list", dir),
    };
    let mut changed = false;
    for entry in listing {
        let path = entry.with_path("list", dir)?.path();
        if path.extension().is_some_and(|e| e == "pack") {
            let mark: PathBuf = path.with_extension("promisor");
            match (marked, mark.exists()) {
                (true, false) => fs::write(&mark, b"").with_path("write", &mark)?,
                (false, true) => fs::remove_file(&mark).with_path("remove", &mark)?,
                _ => continue,
            }
            changed = true;
        }
    }
    match changed {
        true => sync_dir(dir),
        false => Ok(()),
    }
}
