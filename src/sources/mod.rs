//! Finding sessions: the Codex rollouts, Pi sessions and Claude Code transcripts on this machine,
//! or the files and folders
//! named on a command line, each with the fields its manifest records (`id`, `title`, `cwd`,
//! `rollout_path`, `archived`).
//!
//! This module only reads, and only drives: what each agent keeps where, and what its files say,
//! is `agents`'. It knows nothing of the store (see `fold` for what happens to what is found).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::agents::lines::for_each_line;
use crate::agents::{Across, Agent, Describe, Homes, Titles, Titling, Tree};
use crate::error::{Error, IoContext, Result};
use crate::store::check_session_id;
use crate::store::manifest::Session;

/// A session file and the fields its manifest will record.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    #[serde(flatten)]
    pub session: Session,
    /// Which agent wrote it (`file`: any other JSONL ledger named on the command line).
    #[serde(serialize_with = "agent_or_file")]
    pub agent: Option<Agent>,
    /// The file that is read: for a Codex archive, the `.jsonl.zst` (whose decompressed bytes are
    /// folded, and whose `rollout_path` is the plain `.jsonl` beside it, where Codex looks).
    pub path: PathBuf,
    /// Its title is not read yet ([`Titles::Later`]): [`Found::title`] reads it.
    #[serde(skip)]
    pub title_later: bool,
    /// What its file says of titles across the files of its folder.
    #[serde(skip)]
    pub across: Across,
}

impl Found {
    /// Its title, read now if discovery left it for later; `grown`: the title its first bytes
    /// had, and how many they are, when the lines after them were appended since.
    pub fn title(&self, grown: Option<(Option<&str>, u64)>) -> Option<String> {
        match (self.title_later, self.agent) {
            (true, Some(agent)) => agent.format().title_later(&self.path, grown),
            _ => self.session.title.clone(),
        }
    }
}

/// A context-fold seed index found beside Pi sessions: `context-fold/<session-id>/seed-index.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedIndex {
    pub session_id: String,
    pub path: PathBuf,
}

/// Everything a search turned up.
#[derive(Debug, Default)]
pub struct Discovery {
    pub sessions: Vec<Found>,
    pub seed_indexes: Vec<SeedIndex>,
    /// The folders searched (for "nothing found" messages), each with whether it exists.
    pub looked_in: Vec<(PathBuf, bool)>,
    /// Files that look like sessions but cannot be recorded (unreadable, an unsafe id, a
    /// duplicate id), one line each.
    pub problems: Vec<String>,
    /// Symbolic links met in the folders searched: never followed, so skipped.
    pub symlinks: Vec<PathBuf>,
}

/// A file that may be a session, before it is read.
struct Candidate {
    path: PathBuf,
    archived: bool,
    /// The agent whose folder it was found in (`None`: named on the command line).
    agent: Option<Agent>,
}

/// What the store knows of a file it folded that has not changed since (by fold's stamp
/// cache): the session its manifest records. Discovery then takes it from there rather than
/// read the file.
pub type Unchanged<'k> = dyn Fn(&Path) -> Option<Session> + Sync + 'k;

/// Find sessions: under the agents' homes when `paths` is empty, else in the files and folders
/// named; only those of `agents` when it names any.
pub fn discover(homes: &Homes, paths: &[PathBuf], agents: &[Agent]) -> Discovery {
    discover_titled(homes, paths, agents, Titles::Now)
}

/// [`discover`], reading the titles that take a whole file now or leaving them for later
/// ([`Found::title_later`]).
pub fn discover_titled(
    homes: &Homes,
    paths: &[PathBuf],
    agents: &[Agent],
    titles: Titles,
) -> Discovery {
    discover_known(homes, paths, agents, titles, &|_| None)
}

/// [`discover_titled`], taking a session file in an agent's folder that `unchanged` knows from
/// the store without reading it (after a reboot, reading 4,914 files' first lines made `log`
/// and `status` take 1.5 s instead of 0.2), where the file alone says what discovery learns of
/// it (its agent's titles come from no other session file) and the store's record was folded
/// from this very path. Its title is then the one folded: for callers that show a folded
/// session's title from the store.
pub fn discover_known(
    homes: &Homes,
    paths: &[PathBuf],
    agents: &[Agent],
    titles: Titles,
    unchanged: &Unchanged<'_>,
) -> Discovery {
    let mut found = Discovery::default();
    let mut candidates = Vec::new();
    let wanted = |agent: &Agent| agents.is_empty() || agents.contains(agent);
    if paths.is_empty() {
        let trees = Agent::ALL
            .iter()
            .filter(|a| wanted(a))
            .flat_map(|&agent| agent.format().trees().iter().map(move |t| (agent, t)));
        for (agent, tree) in trees {
            let dir = homes.of(agent).join(tree.dir);
            found.looked_in.push((dir.clone(), dir.is_dir()));
            walk(&dir, tree, Some(agent), &mut candidates, &mut found);
        }
    } else {
        for path in paths {
            if path.is_dir() {
                found.looked_in.push((path.clone(), true));
                walk(path, &ANY_LEDGER, None, &mut candidates, &mut found);
            } else {
                // What is there but no file (a FIFO, a link loop) is refused when it is opened.
                match std::fs::metadata(path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => found
                        .problems
                        .push(format!("{}: no such file or directory", path.display())),
                    Err(e) => found
                        .problems
                        .push(crate::input::unopened(path, e).to_string()),
                    Ok(meta) => match crate::input::not_regular(path, &meta) {
                        Some(e) => found.problems.push(e.to_string()),
                        None => candidates.push(Candidate {
                            path: path.clone(),
                            archived: in_archive(path),
                            agent: None,
                        }),
                    },
                }
            }
        }
    }
    drop_shadowed_archives(&mut candidates);
    candidates.sort_by(|a, b| a.path.cmp(&b.path));
    candidates.dedup_by(|a, b| a.path == b.path);

    let describers: HashMap<Agent, Box<dyn Describe + '_>> = Agent::ALL
        .iter()
        .map(|&agent| (agent, agent.format().describer(homes.of(agent), titles)))
        .collect();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    // Reading titles can mean reading whole files (Pi's session_info may come last): in parallel.
    let described: Vec<_> = candidates
        .par_iter()
        .map(|c| match known(c, unchanged) {
            Some(found) => Ok(found),
            None => describe(c, &describers),
        })
        .collect();
    for described in described {
        match described {
            // Named on the command line: kept when it is one of the agents asked for.
            Ok(session) if !agents.is_empty() && !session.agent.as_ref().is_some_and(wanted) => {}
            Ok(session) => match seen.get(&session.session.id) {
                Some(first) => found.problems.push(format!(
                    "{}: session id {:?} is also the id of {}; skipped",
                    session.path.display(),
                    session.session.id,
                    first.display()
                )),
                None => {
                    seen.insert(session.session.id.clone(), session.path.clone());
                    found.sessions.push(session);
                }
            },
            Err(e) => found.problems.push(e.to_string()),
        }
    }
    title_across(&mut found.sessions);
    found.seed_indexes.sort_by(|a, b| a.path.cmp(&b.path));
    found.symlinks.sort();
    found
}

/// A folder named on the command line: every JSONL file in it, plain or zstd-compressed, at any
/// depth (whether one is archived, its path says).
const ANY_LEDGER: Tree = Tree {
    dir: "",
    archived: false,
    depth: None,
    holds: |rel| {
        rel.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(".jsonl") || n.ends_with(".jsonl.zst"))
    },
};

/// Whether `path` lies in a folder where an agent keeps archived sessions.
fn in_archive(path: &Path) -> bool {
    let archives = Agent::ALL
        .iter()
        .flat_map(|a| a.format().trees())
        .filter(|t| t.archived);
    archives
        .map(|t| t.dir)
        .any(|dir| path.components().any(|c| c.as_os_str() == dir))
}

/// Walk `dir` as `tree` says, adding seed indexes to `found` and the files the tree holds to
/// `candidates`. A missing folder is simply empty.
fn walk(
    dir: &Path,
    tree: &Tree,
    agent: Option<Agent>,
    candidates: &mut Vec<Candidate>,
    found: &mut Discovery,
) {
    if !dir.is_dir() {
        return;
    }
    // Through an agents mount, the folded sessions shown where their files are missing are not
    // files to fold: they are what was folded.
    let mounted = crate::mount::within_mount(dir);
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(tree.depth)
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found.problems.push(format!("{}: {e}", dir.display()));
                continue;
            }
        };
        if entry.path_is_symlink() {
            found.symlinks.push(entry.into_path());
            continue;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.into_path();
        if mounted && crate::mount::shown_from_store(&path) {
            continue;
        }
        if let Some(index) = seed_index(&path) {
            found.seed_indexes.push(index);
            continue;
        }
        let rel = path.strip_prefix(dir).unwrap_or(&path);
        if (tree.holds)(rel) {
            let archived = tree.archived || in_archive(&path);
            candidates.push(Candidate {
                path,
                archived,
                agent,
            });
        }
    }
}

/// `…/context-fold/<session-id>/seed-index.jsonl`, the context-fold extension's index.
fn seed_index(path: &Path) -> Option<SeedIndex> {
    if path.file_name()? != "seed-index.jsonl" {
        return None;
    }
    let session_dir = path.parent()?;
    if session_dir.parent()?.file_name()? != "context-fold" {
        return None;
    }
    let session_id = session_dir.file_name()?.to_str()?.to_string();
    Some(SeedIndex {
        session_id,
        path: path.to_path_buf(),
    })
}

/// A plain `.jsonl` wins over its `.jsonl.zst` sibling, as in Codex: the `.zst` is dropped when the
/// plain file exists.
fn drop_shadowed_archives(candidates: &mut Vec<Candidate>) {
    let plain: HashSet<PathBuf> = candidates
        .iter()
        .filter(|c| !crate::input::is_zstd(&c.path))
        .map(|c| c.path.clone())
        .collect();
    candidates.retain(|c| {
        !crate::input::is_zstd(&c.path) || {
            let sibling = c.path.with_extension("");
            !plain.contains(&sibling) && !sibling.exists()
        }
    });
}

/// A candidate as the store recorded it, if `unchanged` knows it and may be taken at its word.
fn known(candidate: &Candidate, unchanged: &Unchanged<'_>) -> Option<Found> {
    let agent = candidate.agent?;
    if !agent.format().describes_itself() {
        return None;
    }
    let session = unchanged(&candidate.path)?;
    (session.rollout_path == absolute_utf8(&restored_path(&candidate.path)).ok()?).then(|| Found {
        session,
        agent: Some(agent),
        path: candidate.path.clone(),
        title_later: false,
        across: Across::default(),
    })
}

/// Where a session file is restored: a compressed archive as the plain JSONL Codex reads.
fn restored_path(path: &Path) -> PathBuf {
    match crate::input::is_zstd(path) {
        true => path.with_extension(""),
        false => path.to_path_buf(),
    }
}

/// Read a candidate's first line (and, for its title, as much more as its agent needs).
fn describe(
    candidate: &Candidate,
    describers: &HashMap<Agent, Box<dyn Describe + '_>>,
) -> Result<Found> {
    let path = &candidate.path;
    let mut input = crate::input::open_head(path)?;
    let Identity {
        agent,
        id,
        cwd,
        first_line,
    } = identify(path, &mut input)?;
    check_session_id(&id)
        .map_err(|e| Error::bad_input(path.display(), format!("{e}; not folded")))?;
    let described = agent
        .map(|agent| describers[&agent].describe(&id, path, &first_line, &mut input))
        .unwrap_or_default();
    let cwd = cwd.or(described.cwd);
    // An agent says whether a session is being written, or which of its folders are archives.
    let archived = match described.active {
        Some(active) => !active,
        None => {
            candidate.archived
                && agent.is_none_or(|a| a.format().trees().iter().any(|t| t.archived))
        }
    };
    let rollout_path = absolute_utf8(&restored_path(path))?;
    Ok(Found {
        session: Session {
            id,
            title: described.title,
            cwd,
            rollout_path,
            archived,
            // Fold's to set, from the file as it read it.
            mtime: None,
        },
        agent,
        path: path.clone(),
        title_later: described.title_later,
        across: described.across,
    })
}

/// Give each folder's sessions the titles their files give each other, as their agent does.
fn title_across(sessions: &mut [Found]) {
    let mut folders: HashMap<(Agent, &Path), Vec<Titling<'_>>> = HashMap::new();
    for found in sessions.iter_mut() {
        let (Some(agent), Some(folder)) = (found.agent, found.path.parent()) else {
            continue;
        };
        folders.entry((agent, folder)).or_default().push(Titling {
            path: &found.path,
            across: &found.across,
            title: &mut found.session.title,
        });
    }
    for ((agent, _), mut titling) in folders {
        if titling.iter().any(|t| !t.across.titles.is_empty()) {
            agent.format().titles_across(&mut titling);
        }
    }
}

/// Who a session file is, from its first line and its name.
struct Identity {
    agent: Option<Agent>,
    id: String,
    cwd: Option<String>,
    /// The first line, as read.
    first_line: Vec<u8>,
}

/// Read the first line of `input` (the file at `path`): the agent whose opening it is, the
/// session's id (the opening's, else the one in the file name as its agent names files, else the
/// name itself without `.jsonl`) and its cwd. `input` reads on after that line.
fn identify(path: &Path, input: &mut dyn std::io::BufRead) -> Result<Identity> {
    let mut first = None;
    let mut first_line = Vec::new();
    for_each_line(
        input,
        crate::segment::Settings::default().max_json_line_bytes as usize,
        |line| {
            first = Agent::of_first_line(line);
            first_line = line.to_vec();
            false
        },
    )
    .with_path("read", path)?;
    let stem = stem(path);
    let (agent, id, cwd) = match first {
        Some((agent, meta)) => {
            let named = || agent.format().id_from_name(stem).map(str::to_string);
            (Some(agent), meta.id.or_else(named), meta.cwd)
        }
        // A file named as an agent names its sessions still names its session when its first
        // line is not (yet) readable.
        None => (None, id_in_name(stem), None),
    };
    let id = id.unwrap_or_else(|| stem.to_string());
    Ok(Identity {
        agent,
        id,
        cwd,
        first_line,
    })
}

/// The file name of `path` without `.jsonl` or `.jsonl.zst`.
fn stem(path: &Path) -> &str {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    stem.strip_suffix(".jsonl").unwrap_or(stem)
}

/// The session id in a file name, as some agent names its files.
fn id_in_name(stem: &str) -> Option<String> {
    Agent::ALL
        .iter()
        .find_map(|a| a.format().id_from_name(stem))
        .map(str::to_string)
}

/// The id of the session the file at `path` holds, read as discovery reads it (see [`identify`]).
/// A file that is not there (a source removed once it was folded) names its session by its name.
pub fn session_id_of(path: &Path) -> Result<String> {
    let id = match crate::input::open_head(path) {
        Ok(mut input) => identify(path, &mut input)?.id,
        Err(e) if !path.exists() => id_in_name(stem(path)).ok_or(e)?,
        Err(e) => return Err(e),
    };
    check_session_id(&id).map_err(|e| Error::bad_input(path.display(), e.to_string()))?;
    Ok(id)
}

fn agent_or_file<S: serde::Serializer>(
    agent: &Option<Agent>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match agent {
        Some(agent) => agent.serialize(s),
        None => s.serialize_str("file"),
    }
}

/// Manifests hold paths as JSON strings: an absolute, UTF-8 path.
pub fn absolute_utf8(path: &Path) -> Result<String> {
    let absolute = std::path::absolute(path).with_path("resolve", path)?;
    absolute.into_os_string().into_string().map_err(|p| {
        Error::bad_input(
            Path::new(&p).display(),
            "a path that is not UTF-8 cannot be recorded in a manifest",
        )
    })
}
