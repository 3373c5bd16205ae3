//! The folded sessions an agents mount shows where their files are missing: each at the place
//! restore computes for it under its agent's home, from the manifests (never their objects), read
//! again when the store's manifests change (a fold, an `rm`), at most once a second.
//!
//! Not for: deciding what is shown (the real file wins: [`super::overlay`]).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use super::tree::{File, file_of};
use crate::agents::Agent;
use crate::agents::place::place;
use crate::error::Result;
use crate::store::Store;
use crate::store::heads::Heads;

/// How often the manifests' folder is looked at for changes.
const RECHECK: Duration = Duration::from_secs(1);

pub struct Folded {
    store: Store,
    state: RwLock<State>,
    /// When the manifests' folder was last looked at, and its mtime then.
    checked: Mutex<(Instant, Option<SystemTime>)>,
}

#[derive(Default)]
struct State {
    /// Each agent's sessions by their path under its home.
    files: HashMap<Agent, BTreeMap<PathBuf, File>>,
    /// When they were read: the time of the folders that hold only folded sessions.
    read: Option<SystemTime>,
}

/// What a path under an agent's home is among the folded sessions.
#[derive(Debug, Clone)]
pub enum Entry {
    File(File),
    /// A folder on the way to some.
    Dir,
}

impl Folded {
    /// The folded sessions of `store` as they are now; the manifests that could not be read are
    /// left out and returned, each with why.
    pub fn of(store: &Store) -> Result<(Self, Vec<String>)> {
        let stamp = stamp(store);
        let (state, problems) = read(store)?;
        let folded = Self {
            store: store.clone(),
            state: RwLock::new(state),
            checked: Mutex::new((Instant::now(), stamp)),
        };
        Ok((folded, problems))
    }

    /// What `rel` (under `agent`'s home) is, among the sessions folded now.
    pub fn entry(&self, agent: Agent, rel: &Path) -> Option<Entry> {
        self.refresh();
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let files = state.files.get(&agent)?;
        if let Some(file) = files.get(rel) {
            return Some(Entry::File(file.clone()));
        }
        let under = files.range(rel.to_path_buf()..).next()?.0;
        (under.starts_with(rel) && under != rel).then_some(Entry::Dir)
    }

    /// The names in folder `rel` (under `agent`'s home) and what each is, but for the files for
    /// which `hidden` says so (a folder whose every file is hidden is not listed).
    pub fn children(
        &self,
        agent: Agent,
        rel: &Path,
        hidden: impl Fn(&Path) -> bool,
    ) -> Vec<(OsString, Entry)> {
        self.refresh();
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let Some(files) = state.files.get(&agent) else {
            return Vec::new();
        };
        let mut children: BTreeMap<OsString, Entry> = BTreeMap::new();
        for (path, file) in files.range(rel.to_path_buf()..) {
            let Ok(below) = path.strip_prefix(rel) else {
                break;
            };
            let mut names = below.iter();
            let (Some(name), rest) = (names.next(), names.next()) else {
                continue;
            };
            if hidden(path) || children.contains_key(name) {
                continue;
            }
            let entry = match rest {
                Some(_) => Entry::Dir,
                None => Entry::File(file.clone()),
            };
            children.insert(name.to_os_string(), entry);
        }
        children.into_iter().collect()
    }

    /// Whether some file under folder `rel` is not hidden (the first such ends the search).
    pub fn shows_under(&self, agent: Agent, rel: &Path, hidden: impl Fn(&Path) -> bool) -> bool {
        self.refresh();
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let Some(files) = state.files.get(&agent) else {
            return false;
        };
        files
            .range(rel.to_path_buf()..)
            .map(|(path, _)| path)
            .take_while(|path| path.starts_with(rel))
            .any(|path| path != rel && !hidden(path))
    }

    /// When the sessions were read.
    pub fn read_at(&self) -> SystemTime {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.read.unwrap_or(SystemTime::UNIX_EPOCH)
    }

    /// Read the manifests again when their folder changed since they were read (a fold replaces
    /// a manifest by a rename into it).
    fn refresh(&self) {
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        if checked.0.elapsed() < RECHECK {
            return;
        }
        let now = stamp(&self.store);
        checked.0 = Instant::now();
        if now == checked.1 {
            return;
        }
        match read(&self.store) {
            Ok((state, problems)) => {
                checked.1 = now;
                *self.state.write().unwrap_or_else(|e| e.into_inner()) = state;
                for problem in problems {
                    eprintln!("ctxfold mount: warning: left out: {problem}");
                }
            }
            Err(e) => eprintln!("ctxfold mount: error: read the manifests again: {e}"),
        }
    }
}

/// The mtime of the store's manifests' folder.
fn stamp(store: &Store) -> Option<SystemTime> {
    std::fs::metadata(store.manifests_dir())
        .and_then(|m| m.modified())
        .ok()
}

fn read(store: &Store) -> Result<(State, Vec<String>)> {
    let mut state = State {
        read: Some(SystemTime::now()),
        ..State::default()
    };
    let mut problems = Vec::new();
    let heads = Heads::load(store);
    for id in store.session_ids()? {
        match file_of(store, &heads, &store.manifest_path(&id)) {
            Ok((manifest, file)) => {
                if let Ok(placed) = place(&manifest.session) {
                    let files = state.files.entry(placed.agent).or_default();
                    files.entry(placed.rel).or_insert(file);
                }
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    let _ = heads.save();
    Ok((state, problems))
}
