//! Restoring folded sessions, one or many: which session each argument names (an id, a unique
//! prefix of one, `ID@N`, or the path of a session file), where each goes (its place under this
//! machine's agent homes, a file, or a folder under its own name), and the restores themselves, in
//! parallel on every core, each verified and each reported on its own, put in place in groups
//! behind one durability barrier.
//!
//! Not for: writing the files (`store::by_block`), or computing an agent's place
//! (`agents::place`).

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::agents::Homes;
use crate::agents::place::default_target;
use crate::error::{Error, Result};
use crate::files::create_private_dir;
use crate::store::by_block;
use crate::store::manifest::{Manifest, Session, Source};
use crate::store::reconstruct::{Beside, Restored, begin_beside};
use crate::store::{Store, check_session_id, generations, restore_temp};

/// Restored files are written and put in place in groups of this many: written and verified
/// beside their targets together (each block they need decoded once for all of them: on the
/// generated corpus, 256 restore 13% faster than 64), one `syncfs` of each filesystem they go to
/// makes them durable, then they are renamed into place and each folder is fsynced once; not two
/// fsyncs for every file. Up to twice as many temp files are open at once: a group's until it is
/// in place, the next group's as it is written (tests lower it: `CTXFOLD_TEST_RESTORE_GROUP_FILES`).
pub const GROUP_FILES: usize = 256;

/// Where the sessions go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum To {
    /// Each to its place under this machine's agent homes.
    Place,
    /// Into this folder, each under its own file name.
    Dir(PathBuf),
    /// To this file (one session).
    File(PathBuf),
}

impl To {
    /// `--to PATH`: a folder when it ends with `/` or is one; a file otherwise.
    pub fn of(path: Option<&Path>) -> To {
        match path {
            None => To::Place,
            Some(p) if p.as_os_str().to_string_lossy().ends_with('/') || p.is_dir() => {
                To::Dir(p.to_path_buf())
            }
            Some(p) => To::File(p.to_path_buf()),
        }
    }
}

/// One session to restore, as named on the command line.
#[derive(Debug, Clone)]
pub struct Request {
    /// What named it: an id, a prefix, `ID@N`, a path.
    pub name: String,
    /// `--generation N`.
    pub generation: Option<usize>,
}

/// What became of one request.
#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    /// The session's id, once the request named one.
    pub session: Option<String>,
    /// Where it went (or was to go).
    pub target: Option<PathBuf>,
    /// The session's size.
    pub bytes: u64,
    /// Temp files of killed restores of the same target, removed first.
    pub swept: Vec<PathBuf>,
    pub result: Result<Restored>,
}

impl Outcome {
    fn out_of_space(&self) -> bool {
        self.result.as_ref().is_err_and(Error::is_out_of_space)
    }
}

/// A request resolved: its session, the bytes its manifest names and its target. The manifest is
/// read again when the request's group is written, not held meanwhile: every manifest asked for at
/// once would take memory that grows with the store.
#[derive(Clone)]
struct Planned {
    session: String,
    source: Source,
    target: PathBuf,
}

/// The manifest a request names. A name with a `/`, or the name of a file here that names no
/// folded session otherwise, is a session file's path: the session is the one that file holds,
/// read as discovery reads it (or, when the file is gone, the id in its name), by its whole id.
pub fn manifest_of(store: &Store, request: &Request) -> Result<Manifest> {
    let named = &request.name;
    let is_path = named.contains('/')
        || (Path::new(named).is_file() && store.resolve_session(named).is_err());
    if !is_path {
        return generations::resolve(store, named, request.generation);
    }
    let id = crate::sources::session_id_of(Path::new(named))?;
    if !store.has_manifest(&id) {
        return Err(Error::not_found(format!(
            "{named} holds session {id}, which is not folded in {}",
            crate::cli::human::path(store.root())
        )));
    }
    generations::resolve(store, &id, request.generation)
}

/// The file name a session takes in a folder: its rollout_path's, when that is a plain name that
/// holds the session's id (as every agent names its files), else `<id>.jsonl`.
pub fn file_name(session: &Session) -> String {
    let last = session.rollout_path.rsplit('/').next().unwrap_or_default();
    let plain = check_session_id(last).is_ok() && last.contains(session.id.as_str());
    match plain {
        true => last.to_string(),
        false => format!("{}.jsonl", session.id),
    }
}

/// Where `manifest`'s session goes (`homes`: this machine's, for [`To::Place`]).
fn target_of(manifest: &Manifest, to: &To, homes: Option<&Homes>) -> Result<PathBuf> {
    match to {
        To::Place => default_target(&manifest.session, homes.expect("homes for To::Place")),
        To::Dir(dir) => Ok(dir.join(file_name(&manifest.session))),
        To::File(file) => Ok(file.clone()),
    }
}

/// Restore every request to `to`, several at once, each verified; `done` is called as each ends.
/// Returns the outcomes in the order of `requests`. A request that fails fails alone: the others
/// go on, unless the disk is full: then no later group is started, and the outcomes end with the
/// last one started. Two requests for one target are one restore when they name the same bytes,
/// and the later fails otherwise.
pub fn restore_all(
    store: &Store,
    requests: &[Request],
    to: &To,
    overwrite: bool,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<Outcome>> {
    let homes = match to {
        To::Place => Some(Homes::from_env()?),
        _ => None,
    };
    if let To::Dir(dir) = to {
        create_private_dir(dir)?;
    }
    let planned: Vec<Result<Planned>> = requests
        .par_iter()
        .map(|request| {
            let manifest = manifest_of(store, request)?;
            let target = target_of(&manifest, to, homes.as_ref())?;
            Ok(Planned {
                session: manifest.session.id,
                source: manifest.source,
                target,
            })
        })
        .collect();
    let planned = one_restore_per_target(planned, requests);
    // Temp files killed restores of these targets left: each target folder listed once.
    let swept = restore_temp::sweep(
        planned
            .iter()
            .filter_map(|p| p.as_ref()?.as_ref().ok())
            .map(|p| p.target.as_path()),
    )?;
    let mut planned = planned.into_iter();
    let mut outcomes = Vec::with_capacity(requests.len());
    // A group is put in place (its barrier waiting on the disk) while the next one is written.
    std::thread::scope(|scope| {
        let mut placing = None;
        // A group placed, or the one written last, found the disk full.
        let mut full = false;
        let group_files =
            crate::test_sizes::size("CTXFOLD_TEST_RESTORE_GROUP_FILES", GROUP_FILES as u64);
        for group in requests.chunks(group_files as usize) {
            let plans: Vec<_> = planned.by_ref().take(group.len()).collect();
            let again: Vec<Option<Planned>> = (plans.iter())
                .map(|p| p.as_ref()?.as_ref().ok().cloned())
                .collect();
            let mut written: Vec<Written> = group
                .par_iter()
                .zip(plans)
                .map(|(request, planned)| begin_one(store, request, planned, &swept, overwrite))
                .collect();
            write_group(store, &mut written);
            if written.len() > 1 && written.iter().any(|w| w.outcome.out_of_space()) {
                one_by_one(store, group, again, &mut written, &swept, overwrite);
            }
            full |= written.iter().any(|w| w.outcome.out_of_space());
            if let Some(placed) = placing.replace(scope.spawn(|| place(written))) {
                let placed = joined(placed);
                full |= placed.iter().any(Outcome::out_of_space);
                outcomes.extend(placed.into_iter().inspect(|_| done()));
            }
            if full {
                break;
            }
        }
        if let Some(placed) = placing {
            outcomes.extend(joined(placed).into_iter().inspect(|_| done()));
        }
    });
    Ok(outcomes)
}

/// A disk that fills while a group is written fails every session of it still being written
/// (they are written together, block by block): those are written again one at a time, in order,
/// as many as there is room for, until one finds the disk full again.
fn one_by_one(
    store: &Store,
    group: &[Request],
    again: Vec<Option<Planned>>,
    written: &mut [Written],
    swept: &HashMap<PathBuf, Vec<PathBuf>>,
    overwrite: bool,
) {
    for ((w, request), planned) in written.iter_mut().zip(group).zip(again) {
        let Some(planned) = planned.filter(|_| w.outcome.out_of_space()) else {
            continue;
        };
        let mut one = [begin_one(
            store,
            request,
            Some(Ok(planned)),
            swept,
            overwrite,
        )];
        write_group(store, &mut one);
        let [one] = one;
        if one.outcome.out_of_space() {
            return;
        }
        *w = one;
    }
}

fn joined(placing: std::thread::ScopedJoinHandle<'_, Vec<Outcome>>) -> Vec<Outcome> {
    placing
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// Write and verify a group's sessions beside their targets, together ([`by_block`]); one that
/// fails is dropped (its temp file with it) and fails alone.
fn write_group(store: &Store, group: &mut [Written]) {
    let mut begun: Vec<(&mut Outcome, &mut Option<(Beside, Manifest)>)> = group
        .iter_mut()
        .filter(|w| w.beside.is_some())
        .map(|w| (&mut w.outcome, &mut w.beside))
        .collect();
    let results = {
        let sessions: Vec<by_block::Session<'_>> = begun
            .iter()
            .map(|(_, beside)| {
                let (beside, manifest) = beside.as_ref().expect("begun");
                by_block::Session {
                    target: beside.target(),
                    file: beside.file(),
                    manifest,
                }
            })
            .collect();
        by_block::write_sessions(store, &sessions)
    };
    for ((outcome, beside), result) in begun.iter_mut().zip(results) {
        let kept = result.and_then(|()| {
            let (written, manifest) = beside.as_ref().expect("begun");
            written.keep_mtime(manifest)
        });
        if let Err(e) = kept {
            outcome.result = Err(e);
            **beside = None;
        }
    }
}

/// `None` for a request whose target an earlier request restores already, with the same bytes;
/// an error for one whose target an earlier request takes with other bytes.
fn one_restore_per_target(
    planned: Vec<Result<Planned>>,
    requests: &[Request],
) -> Vec<Option<Result<Planned>>> {
    let mut first: HashMap<PathBuf, (usize, Source)> = HashMap::new();
    planned
        .into_iter()
        .enumerate()
        .map(|(at, planned)| {
            let Ok(plan) = &planned else {
                return Some(planned);
            };
            match first.get(&plan.target) {
                None => {
                    first.insert(plan.target.clone(), (at, plan.source));
                    Some(planned)
                }
                Some((_, source)) if *source == plan.source => None,
                Some((earlier, _)) => Some(Err(Error::usage(format!(
                    "its target {} is also the target of {}",
                    crate::cli::human::path(&plan.target),
                    requests[*earlier].name
                )))),
            }
        })
        .collect()
}

/// A request's outcome so far, and its session beside its target (empty, then written) when it is
/// to be put in place.
struct Written {
    outcome: Outcome,
    beside: Option<(Beside, Manifest)>,
}

fn begin_one(
    store: &Store,
    request: &Request,
    planned: Option<Result<Planned>>,
    swept: &HashMap<PathBuf, Vec<PathBuf>>,
    overwrite: bool,
) -> Written {
    let mut outcome = Outcome {
        name: request.name.clone(),
        session: None,
        target: None,
        bytes: 0,
        swept: Vec::new(),
        result: Ok(Restored::InPlace),
    };
    let mut beside = None;
    match planned {
        None => {}
        Some(Err(e)) => outcome.result = Err(e),
        Some(Ok(Planned {
            session,
            source,
            target,
        })) => {
            outcome.session = Some(session);
            outcome.bytes = source.bytes;
            let begun = manifest_again(store, request, &source).and_then(|manifest| {
                outcome.swept = swept.get(&target).cloned().unwrap_or_default();
                Ok(begin_beside(&manifest, &target, overwrite)?.map(|begun| (begun, manifest)))
            });
            outcome.target = Some(target);
            match begun {
                Ok(begun) => beside = begun,
                Err(e) => outcome.result = Err(e),
            }
        }
    }
    Written { outcome, beside }
}

/// The manifest `request` names, read again: it must still name `source`, the bytes it was
/// planned with (a fold meanwhile may have replaced it).
fn manifest_again(store: &Store, request: &Request, source: &Source) -> Result<Manifest> {
    let manifest = manifest_of(store, request)?;
    if manifest.source != *source {
        return Err(Error::session_changed(
            &request.name,
            "a fold replaced its folded version while restoring (restore it again)",
        ));
    }
    Ok(manifest)
}

/// Put a group's written sessions in place (see [`GROUP_FILES`]); one alone is fsynced alone, since
/// a barrier would flush whatever else its filesystem holds.
fn place(group: Vec<Written>) -> Vec<Outcome> {
    let dirs: Vec<&Path> = group
        .iter()
        .filter_map(|w| Some(w.beside.as_ref()?.0.dir()))
        .collect();
    let barrier = (dirs.len() > 1).then(|| sync_filesystems(&dirs));
    let mut placed: Vec<(usize, PathBuf)> = Vec::new();
    let mut outcomes = Vec::with_capacity(group.len());
    for (at, written) in group.into_iter().enumerate() {
        let Written {
            mut outcome,
            beside,
        } = written;
        if let Some((beside, manifest)) = beside {
            outcome.result = match &barrier {
                None => beside.commit(&manifest),
                Some(Ok(())) => {
                    placed.push((at, beside.dir().to_path_buf()));
                    beside.place_synced(&manifest)
                }
                Some(Err((dir, e))) => Err(Error::io("sync the filesystem of", dir, again(e))),
            };
        }
        outcomes.push(outcome);
    }
    // Each folder once, for every rename into it.
    let folders: BTreeSet<&PathBuf> = placed.iter().map(|(_, dir)| dir).collect();
    for dir in folders {
        let Err(e) = crate::files::atomic::fsync_dir(dir) else {
            continue;
        };
        for (at, _) in placed.iter().filter(|(_, d)| d == dir) {
            if outcomes[*at].result.is_ok() {
                outcomes[*at].result = Err(Error::io("fsync directory", dir, again(&e)));
            }
        }
    }
    outcomes
}

/// One `syncfs` for each filesystem that holds one of `dirs`: what was written there is durable.
fn sync_filesystems(dirs: &[&Path]) -> std::result::Result<(), (PathBuf, io::Error)> {
    let mut synced = BTreeSet::new();
    for dir in dirs {
        let failed = |e: io::Error| (dir.to_path_buf(), e);
        let folder = std::fs::File::open(dir).map_err(failed)?;
        if synced.insert(folder.metadata().map_err(failed)?.dev()) {
            rustix::fs::syncfs(&folder).map_err(|e| failed(e.into()))?;
        }
    }
    Ok(())
}

/// The same error again, for each restore it fails.
fn again(e: &io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(e.kind(), e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, rollout_path: &str) -> Session {
        Session {
            id: id.into(),
            title: None,
            cwd: None,
            rollout_path: rollout_path.into(),
            archived: false,
            mtime: None,
        }
    }

    #[test]
    fn a_session_takes_its_own_file_name_in_a_folder() {
        let codex = "/h/.codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-019e.jsonl";
        assert_eq!(
            file_name(&session("019e", codex)),
            "rollout-2026-05-11T11-26-55-019e.jsonl"
        );
        assert_eq!(file_name(&session("s1", "/tmp/s1.jsonl")), "s1.jsonl");
        // A name that is not the session's, or not a plain name, is not taken.
        assert_eq!(file_name(&session("s1", "/tmp/notes.jsonl")), "s1.jsonl");
        assert_eq!(file_name(&session("s1", "/tmp/..")), "s1.jsonl");
        assert_eq!(file_name(&session("s1", "")), "s1.jsonl");
    }

    #[test]
    fn a_manifest_read_again_must_name_the_bytes_it_was_planned_with() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path().join("store")).unwrap();
        let empty = Source {
            bytes: 0,
            sha256: crate::digest::Digest::of(b""),
        };
        let manifest = Manifest {
            version: crate::store::manifest::VERSION,
            kind: crate::store::manifest::KIND.into(),
            session: session("s1", "/tmp/s1.jsonl"),
            source: empty,
            settings: Default::default(),
            parts: Vec::new(),
        };
        store
            .commit_manifest(&manifest, crate::store::commit::Replace::Nothing)
            .unwrap();
        let request = Request {
            name: "s1".into(),
            generation: None,
        };
        assert_eq!(manifest_again(&store, &request, &empty).unwrap(), manifest);
        let other = Source {
            bytes: 1,
            sha256: crate::digest::Digest::of(b"x"),
        };
        let e = manifest_again(&store, &request, &other).unwrap_err();
        assert!(e.to_string().contains("replaced its folded version"), "{e}");
    }

    #[test]
    fn to_is_a_folder_when_it_ends_with_a_slash_or_is_one() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(To::of(None), To::Place);
        assert_eq!(To::of(Some(dir.path())), To::Dir(dir.path().into()));
        let new = dir.path().join("new/");
        assert_eq!(To::of(Some(&new)), To::Dir(new.clone()));
        let file = dir.path().join("f.jsonl");
        assert_eq!(To::of(Some(&file)), To::File(file.clone()));
    }
}
