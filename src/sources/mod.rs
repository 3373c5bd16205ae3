//! Finding sessions: the Codex rollouts and Pi sessions on this machine, or the files and folders
//! named on a command line, each with the fields its manifest records (`id`, `title`, `cwd`,
//! `rollout_path`, `archived`).
//!
//! This module only reads. It knows where agents keep their files and how to name a session; it
//! knows nothing of the store (see `fold` for what happens to what is found).

pub mod codex;
mod lines;
pub mod pi;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, IoContext, Result};
use crate::store::check_session_id;
use crate::store::manifest::Session;

/// Which agent wrote a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    Codex,
    Pi,
    /// Any other JSONL ledger named on the command line.
    File,
}

/// A session file and the fields its manifest will record.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    #[serde(flatten)]
    pub session: Session,
    pub agent: Agent,
    /// The file that is read: for a Codex archive, the `.jsonl.zst` (whose decompressed bytes are
    /// folded, and whose `rollout_path` is the plain `.jsonl` beside it, where Codex looks).
    pub path: PathBuf,
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

/// Where the agents keep their sessions.
#[derive(Debug, Clone)]
pub struct Homes {
    /// `$CODEX_HOME`, default `~/.codex`.
    pub codex: PathBuf,
    /// Pi's agent dir: `$PI_CODING_AGENT_DIR`, default `~/.pi/agent` (sessions are in `sessions/`).
    pub pi: PathBuf,
}

impl Homes {
    pub fn from_env() -> Result<Self> {
        let env = |name| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = env("HOME");
        let under_home = |rel: &str| {
            home.as_ref()
                .map(|h| h.join(rel))
                .ok_or_else(|| Error::usage(format!("HOME is not set: cannot find ~/{rel}")))
        };
        let codex = match env("CODEX_HOME") {
            Some(dir) => dir,
            None => under_home(".codex")?,
        };
        let pi = match env("PI_CODING_AGENT_DIR") {
            Some(dir) => dir,
            None => under_home(".pi/agent")?,
        };
        Ok(Self { codex, pi })
    }

    pub fn codex_sessions(&self) -> PathBuf {
        self.codex.join("sessions")
    }

    pub fn codex_archived(&self) -> PathBuf {
        self.codex.join("archived_sessions")
    }

    pub fn pi_sessions(&self) -> PathBuf {
        self.pi.join("sessions")
    }
}

/// A file that may be a session, before it is read.
struct Candidate {
    path: PathBuf,
    archived: bool,
}

/// Find sessions: under the agents' homes when `paths` is empty, else in the files and folders named.
pub fn discover(homes: &Homes, paths: &[PathBuf]) -> Discovery {
    let mut found = Discovery::default();
    let mut candidates = Vec::new();
    if paths.is_empty() {
        for dir in [
            homes.codex_sessions(),
            homes.codex_archived(),
            homes.pi_sessions(),
        ] {
            let exists = dir.is_dir();
            found.looked_in.push((dir, exists));
        }
        walk(
            &homes.codex_sessions(),
            None,
            &mut candidates,
            &mut found,
            codex::is_rollout_name,
        );
        walk(
            &homes.codex_archived(),
            Some(1),
            &mut candidates,
            &mut found,
            codex::is_rollout_name,
        );
        walk(
            &homes.pi_sessions(),
            Some(4),
            &mut candidates,
            &mut found,
            |name| name.ends_with(".jsonl"),
        );
        // Pi sessions sit exactly one folder down; deeper files (subagent artifacts) are not sessions.
        let pi_root = homes.pi_sessions();
        candidates.retain(|c| {
            !c.path.starts_with(&pi_root)
                || c.path.parent().and_then(Path::parent) == Some(pi_root.as_path())
        });
    } else {
        for path in paths {
            if path.is_dir() {
                found.looked_in.push((path.clone(), true));
                walk(path, None, &mut candidates, &mut found, is_ledger_name);
            } else if path.exists() {
                let archived = path
                    .components()
                    .any(|c| c.as_os_str() == "archived_sessions");
                candidates.push(Candidate {
                    path: path.clone(),
                    archived,
                });
            } else {
                found
                    .problems
                    .push(format!("{}: no such file or directory", path.display()));
            }
        }
    }
    drop_shadowed_archives(&mut candidates);
    candidates.sort_by(|a, b| a.path.cmp(&b.path));
    candidates.dedup_by(|a, b| a.path == b.path);

    let titles = CodexTitles {
        home: homes.codex.clone(),
        loaded: OnceLock::new(),
    };
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    // Reading titles can mean reading whole files (Pi's session_info may come last): in parallel.
    let described = crate::parallel::map(&candidates, || (), |(), c| describe(c, &titles), || ());
    for described in described {
        match described {
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
    found.seed_indexes.sort_by(|a, b| a.path.cmp(&b.path));
    found.symlinks.sort();
    found
}

/// Names a folder walk picks up: JSONL files, plain or zstd-compressed.
fn is_ledger_name(name: &str) -> bool {
    name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")
}

/// Walk `dir` (to `depth`), adding seed indexes to `found` and files whose name passes `keep` to
/// `candidates`. A missing folder is simply empty.
fn walk(
    dir: &Path,
    depth: Option<usize>,
    candidates: &mut Vec<Candidate>,
    found: &mut Discovery,
    keep: impl Fn(&str) -> bool,
) {
    if !dir.is_dir() {
        return;
    }
    let walker = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(depth)
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
        if let Some(index) = seed_index(&path) {
            found.seed_indexes.push(index);
            continue;
        }
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if keep(name) {
            let archived = path
                .components()
                .any(|c| c.as_os_str() == "archived_sessions");
            candidates.push(Candidate { path, archived });
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

/// Codex's own titles, read the first time a Codex session needs one.
struct CodexTitles {
    home: PathBuf,
    loaded: OnceLock<codex::Titles>,
}

impl CodexTitles {
    fn get(&self, id: &str) -> Option<String> {
        self.loaded
            .get_or_init(|| codex::Titles::load(&self.home))
            .get(id)
            .map(str::to_string)
    }
}

/// Read a candidate's first line (and, for its title, as much more as needed).
fn describe(candidate: &Candidate, titles: &CodexTitles) -> Result<Found> {
    let path = &candidate.path;
    let mut input = crate::input::open(path)?;
    let mut first: Option<Value> = None;
    lines::for_each_line(
        &mut input,
        crate::segment::Settings::default().max_json_line_bytes as usize,
        |line| {
            first = serde_json::from_slice(line).ok();
            false
        },
    )
    .with_path("read", path)?;
    let first = first.unwrap_or(Value::Null);
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    let stem = stem.strip_suffix(".jsonl").unwrap_or(stem);
    let (agent, id, cwd, archived) = if let Some((id, cwd)) = codex::meta(&first) {
        let id = id.or_else(|| codex::id_from_name(stem).map(str::to_string));
        (Agent::Codex, id, cwd, candidate.archived)
    } else if let Some((id, cwd)) = pi::meta(&first) {
        (
            Agent::Pi,
            id.or_else(|| pi::id_from_name(stem).map(str::to_string)),
            cwd,
            false,
        )
    } else {
        // A rollout's name still names its thread when its first line is not (yet) readable.
        (
            Agent::File,
            codex::id_from_name(stem).map(str::to_string),
            None,
            candidate.archived,
        )
    };
    let id = id.unwrap_or_else(|| stem.to_string());
    check_session_id(&id)
        .map_err(|e| Error::bad_input(path.display(), format!("{e}; not folded")))?;
    let title = match agent {
        Agent::Codex => titles
            .get(&id)
            .or_else(|| codex::first_user_message(&mut input)),
        Agent::Pi => pi::title(&mut input),
        Agent::File => None,
    };
    // A compressed archive is restored as the plain JSONL Codex reads.
    let restored = if crate::input::is_zstd(path) {
        path.with_extension("")
    } else {
        path.clone()
    };
    let rollout_path = absolute_utf8(&restored)?;
    Ok(Found {
        session: Session {
            id,
            title,
            cwd,
            rollout_path,
            archived,
        },
        agent,
        path: path.clone(),
    })
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

/// The `text` of a content array's blocks joined by `\n`, or `None` when it holds none (the shape
/// both Codex and Pi messages use).
fn joined_texts(content: &Value) -> Option<String> {
    let parts: Vec<&str> = content
        .as_array()?
        .iter()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}
