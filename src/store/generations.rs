//! Earlier versions of folded sessions, kept so that no fold ever loses one:
//! `manifests/generations/<session-id>/<kept at>-<reason>-<12 hex>.json`, loose or packed (a
//! generation's path is its name either way: see `named`).
//!
//! Before a fold replaces a session's manifest it keeps the manifest it replaces here, as the
//! reference implementation keeps its own generations under `manifests/generations/`. gc and fsck
//! walk `manifests/` recursively, so a generation's objects stay as long as the generation does.
//!
//! A name is the UTC time the version was kept (`20260512T101112.123456789Z`), why
//! (`grown` or `changed`), and the first 12 hex digits of the kept version's source sha256. Names
//! sort by time; two machines that sync never write one name for two different manifests; and no
//! name can be taken for one of the reference's own generation files (`<20 digits>.json`), which
//! are listed too, before ours. Generation 1 is the newest: the version before the current one, as
//! `@{1}` is in git's reflog.
//!
//! A `grown` generation's bytes are a prefix of the next version's, so dropping it loses nothing:
//! fold keeps the newest [`KEEP_GROWN`] of them per session and drops older ones. A `changed`
//! generation holds the only copy of its bytes: it stays until `gc --prune-generations` or `rm`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::manifest::{Manifest, Source};
use super::{Store, check_session_id};
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::{Pending, sync_parent};
use crate::files::{create_private_dir, entry_names, remove_if_present};
use crate::time::civil_from_days;

/// How many `grown` generations fold keeps per session.
pub const KEEP_GROWN: usize = 3;

/// Why a version was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The session grew by an append: the kept bytes are a prefix of the next version's.
    Grown,
    /// The session changed some other way (`fold --overwrite`): the kept bytes are nowhere else.
    Changed,
}

impl Reason {
    fn word(self) -> &'static str {
        match self {
            Reason::Grown => "grown",
            Reason::Changed => "changed",
        }
    }
}

/// One kept version of a session.
#[derive(Debug, Clone)]
pub struct Generation {
    /// 1 for the newest.
    pub number: usize,
    pub path: PathBuf,
    /// When it was kept (`2026-05-12 10:11:12Z`) and why; `None` for a file this module did not
    /// name (the reference implementation's).
    pub kept: Option<(String, Reason)>,
}

impl Generation {
    /// When and why it was kept, for people: `kept 2026-05-12 10:11:12Z, changed since`.
    pub fn describe(&self) -> String {
        match &self.kept {
            Some((at, reason)) => format!("kept {at}, {} since", reason.word()),
            None => "kept by another tool".into(),
        }
    }
}

impl Store {
    /// `manifests/generations/`.
    pub fn generations_dir(&self) -> PathBuf {
        self.manifests_dir().join("generations")
    }
}

fn session_dir(store: &Store, id: &str) -> Result<PathBuf> {
    check_session_id(id)?;
    Ok(store.generations_dir().join(id))
}

/// Keep the current manifest of `id` as its newest generation before a fold replaces it: the one
/// whose source is `replaced`, which the fold read. Nothing is written when there is no current
/// manifest, when it is another (another run replaced it meanwhile, and the fold's commit refuses
/// to: see [`super::commit::Replace::Only`]), or when a generation of the same bytes is kept
/// already (a retried or concurrent fold). Returns the file written.
///
/// The generation is the current manifest's file itself, linked under its new name (a manifest is
/// never written in place: a fold replaces the file), else a copy; neither is synced: the caller
/// makes it durable, with the objects of the version replacing it, before that version's manifest
/// replaces the current one.
pub fn keep(store: &Store, id: &str, reason: Reason, replaced: &Source) -> Result<Option<PathBuf>> {
    let dir = session_dir(store, id)?;
    let current_path = store.manifest_path(id);
    // The loose file, opened so that it can be linked as the one read; else the packed body.
    let (bytes, read) = match fs::File::open(&current_path) {
        Ok(mut file) => {
            let read = file.metadata().with_path("stat", &current_path)?;
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut file, &mut bytes).with_path("read", &current_path)?;
            (bytes, Some(read))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            match store.manifest_bytes_at(&current_path)? {
                Some(bytes) => (bytes, None),
                None => return Ok(None),
            }
        }
        Err(e) => return Err(e).with_path("open", &current_path),
    };
    let current = Manifest::from_slice(&bytes, &current_path.display().to_string())?;
    if current.source != *replaced || holds(store, id, &current.source)? {
        return Ok(None);
    }
    create_private_dir(&dir)?;
    let name = format!(
        "{}-{}-{}.json",
        timestamp(std::time::SystemTime::now()),
        reason.word(),
        &current.source.sha256.to_hex()[..12]
    );
    let target = dir.join(name);
    if let Some(read) = read {
        match fs::hard_link(&current_path, &target) {
            // The file read, unless another fold replaced it meanwhile.
            Ok(()) if same_file(&target, &read) => return Ok(Some(target)),
            Ok(()) => remove_if_present(&target)?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(Some(target)),
            // A filesystem without hard links: a copy.
            Err(_) => {}
        }
    }
    let mut pending = Pending::new_in(&store.tmp_dir(), ".manifest-")?;
    io::Write::write_all(&mut pending, &bytes).with_path("write", pending.path())?;
    pending.commit_unsynced(&target)?;
    Ok(Some(target))
}

/// Whether `path` is the file `read` is the metadata of.
fn same_file(path: &Path, read: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).is_ok_and(|m| m.dev() == read.dev() && m.ino() == read.ino())
}

/// Whether a generation of `id` records `source`.
fn holds(store: &Store, id: &str, source: &Source) -> Result<bool> {
    let hex = &source.sha256.to_hex()[..12];
    for generation in list(store, id)? {
        let named = generation
            .path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| s.ends_with(hex));
        if named && store.load_manifest_at(&generation.path)?.source == *source {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The generations of `id`, newest first.
pub fn list(store: &Store, id: &str) -> Result<Vec<Generation>> {
    let dir = session_dir(store, id)?;
    let mut names: Vec<String> = store
        .manifest_names_in(&format!("generations/{id}"))?
        .into_iter()
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    Ok(names
        .into_iter()
        .enumerate()
        .map(|(at, name)| Generation {
            number: at + 1,
            kept: parse_name(&name),
            path: dir.join(name),
        })
        .collect())
}

/// Every session that has generations, with them (newest first), by id.
pub fn all(store: &Store) -> Result<Vec<(String, Vec<Generation>)>> {
    let mut found = Vec::new();
    let table = store.packed()?;
    let packed = (table.iter()).filter_map(|(name, _)| {
        let rest = name.strip_prefix("generations/")?;
        Some(rest.split_once('/')?.0.to_string())
    });
    let mut ids: Vec<String> = entry_names(&store.generations_dir())?
        .into_iter()
        .filter(|id| store.generations_dir().join(id).is_dir())
        .chain(packed)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        if check_session_id(&id).is_err() {
            continue;
        }
        let generations = list(store, &id)?;
        if !generations.is_empty() {
            found.push((id, generations));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(found)
}

/// Drop the `grown` generations of `id` beyond the newest [`KEEP_GROWN`], never `kept` (the one
/// the same fold kept, however its clock named it); returns their files. Each holds a prefix of a
/// later version that stays, so nothing is lost.
pub fn prune_grown(store: &Store, id: &str, kept: Option<&Path>) -> Result<Vec<PathBuf>> {
    let dropped: Vec<Generation> = list(store, id)?
        .into_iter()
        .filter(|g| matches!(g.kept, Some((_, Reason::Grown))))
        .skip(KEEP_GROWN)
        .filter(|g| Some(g.path.as_path()) != kept)
        .collect();
    remove(store, &dropped)?;
    Ok(dropped.into_iter().map(|g| g.path).collect())
}

/// Remove `generations` (of any sessions), loose or packed, and each session's folder once it
/// is empty.
pub fn remove(store: &Store, generations: &[Generation]) -> Result<()> {
    let paths: Vec<PathBuf> = generations.iter().map(|g| g.path.clone()).collect();
    store.remove_manifests(&paths)?;
    let mut dirs: Vec<&Path> = paths.iter().filter_map(|p| p.parent()).collect();
    dirs.dedup();
    for dir in dirs {
        // A folder that still holds something (another tool's file, a generation kept
        // meanwhile) stays.
        if fs::remove_dir(dir).is_ok() {
            sync_parent(dir)?;
        }
    }
    Ok(())
}

/// The manifest `spec` names: `ID`, the current version; `ID@N`, generation N (`ID@0` is the
/// current version); with `generation`, generation N of `spec`. ID may be a unique prefix of the
/// session's id (see [`Store::resolve_session`]). A session whose id itself ends in `@<digits>` is
/// found by that id first.
pub fn resolve(store: &Store, spec: &str, generation: Option<usize>) -> Result<Manifest> {
    let name = resolve_name(store, spec, generation)?;
    store.manifest_at(&name)?.ok_or_else(|| {
        Error::not_found(format!(
            "no folded session {spec:?} in {}",
            store.root().display()
        ))
    })
}

/// The name (see `named`) of the manifest [`resolve`] reads.
pub fn resolve_name(store: &Store, spec: &str, generation: Option<usize>) -> Result<PathBuf> {
    let (id, number) = match (generation, spec.rsplit_once('@')) {
        (Some(n), _) => (spec, n),
        (None, Some((id, n)))
            if !store.has_manifest(spec)
                && !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            let n = n
                .parse()
                .map_err(|_| Error::usage(format!("{spec:?}: no such generation number")))?;
            (id, n)
        }
        _ => (spec, 0),
    };
    // A session kept only as generations is named by its whole id.
    let id = &store.resolve_session_held(id, |id| Ok(!list(store, id)?.is_empty()))?;
    if number == 0 {
        return Ok(store.manifest_path(id));
    }
    let generations = list(store, id)?;
    match generations.get(number - 1) {
        Some(generation) => Ok(generation.path.clone()),
        None => Err(Error::not_found(format!(
            "session {id:?} has {} kept generations: no {id}@{number} ('ctxfold ls --generations' lists them)",
            generations.len()
        ))),
    }
}

/// `20260512T101112.123456789Z`: fixed width, so names sort as times do.
fn timestamp(at: std::time::SystemTime) -> String {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rest = secs % 86_400;
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}.{:09}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_nanos()
    )
}

/// When and why a generation named by [`keep`] was kept, the time as `2026-05-12 10:11:12Z`.
fn parse_name(name: &str) -> Option<(String, Reason)> {
    let stem = name.strip_suffix(".json")?;
    let mut fields = stem.splitn(3, '-');
    let (time, reason, hex) = (fields.next()?, fields.next()?, fields.next()?);
    let reason = match reason {
        "grown" => Reason::Grown,
        "changed" => Reason::Changed,
        _ => return None,
    };
    let t = time.as_bytes();
    let well_formed = t.len() == 26
        && t[8] == b'T'
        && t[15] == b'.'
        && t[25] == b'Z'
        && hex.len() == 12
        && hex.bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed {
        return None;
    }
    let shown = format!(
        "{}-{}-{} {}:{}:{}Z",
        &time[..4],
        &time[4..6],
        &time[6..8],
        &time[9..11],
        &time[11..13],
        &time[13..15]
    );
    Some((shown, reason))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn names_sort_as_times_and_parse_back() {
        let at = UNIX_EPOCH + Duration::new(1_778_580_672, 5);
        let name = format!("{}-changed-0123456789ab.json", timestamp(at));
        assert_eq!(name, "20260512T101112.000000005Z-changed-0123456789ab.json");
        assert_eq!(
            parse_name(&name),
            Some(("2026-05-12 10:11:12Z".into(), Reason::Changed))
        );
        assert_eq!(timestamp(UNIX_EPOCH), "19700101T000000.000000000Z");
        // The reference implementation's own names are listed, not parsed.
        assert_eq!(parse_name("00000000000000000002.json"), None);
        let later = timestamp(at + Duration::from_nanos(1));
        assert!(later > timestamp(at));
    }
}
