//! What a mount shows: the store's sessions as a tree of folders and files, built once from the
//! manifests (read, never their objects decoded), so that `readdir` and `stat` answer from memory.
//!
//! `by-id/<id>.jsonl` for every folded session and `by-id/<id>@<N>.jsonl` for its generation N;
//! `codex/`, `pi/` and `claude/` laid out as each agent's home lays out its sessions, each session
//! at the place restore computes for it (a session restore will not place is under `by-id/` only).
//! A file's size is its manifest's source size, its mtime the one fold saw (else its manifest's).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use crate::agents::place::place;
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result};
use crate::store::heads::{Head, Heads};
use crate::store::{Store, generations};

/// A node's number: its index in the tree plus one (the kernel's root is 1).
pub type Ino = u64;

pub const ROOT: Ino = 1;

/// A session file as the mount shows it.
#[derive(Debug, Clone)]
pub struct File {
    /// The manifest whose session this is, read again when the file is opened.
    pub manifest: PathBuf,
    /// The sha256 of its bytes, which name its copy once it is read whole.
    pub sha256: Digest,
    pub size: u64,
    pub mtime: SystemTime,
}

#[derive(Debug)]
pub enum Kind {
    Dir(BTreeMap<OsString, Ino>),
    File(File),
}

#[derive(Debug)]
pub struct Node {
    pub parent: Ino,
    pub kind: Kind,
}

/// The head of the manifest named `path`, and its session as a file shows it.
pub fn file_of(store: &Store, heads: &Heads<'_>, path: &Path) -> Result<(Head, File)> {
    let manifest = heads
        .at(path)?
        .ok_or_else(|| Error::io("read", path, std::io::ErrorKind::NotFound.into()))?;
    // When it was written: its loose file's mtime, else the table's that packed it.
    let written = std::fs::metadata(path)
        .or_else(|_| std::fs::metadata(store.packed_path()))
        .and_then(|m| m.modified())
        .with_path("stat", path)?;
    let file = File {
        manifest: path.to_path_buf(),
        sha256: manifest.source.sha256,
        size: manifest.source.bytes,
        mtime: manifest.session.modified().unwrap_or(written),
    };
    Ok((manifest, file))
}

/// The whole namespace, and the manifests it could not read (left out, each with why).
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    pub problems: Vec<String>,
    /// When the tree was built: the folders' times.
    pub built: SystemTime,
}

impl Tree {
    /// The tree of `store`'s sessions as they are now.
    pub fn of(store: &Store) -> Result<Self> {
        let mut tree = Self {
            nodes: vec![Node {
                parent: ROOT,
                kind: Kind::Dir(BTreeMap::new()),
            }],
            problems: Vec::new(),
            built: SystemTime::now(),
        };
        let by_id = tree.dir(ROOT, OsStr::new("by-id"));
        for agent in crate::agents::Agent::ALL {
            tree.dir(ROOT, OsStr::new(agent.id()));
        }
        let heads = Heads::load(store);
        for id in store.session_ids()? {
            let path = store.manifest_path(&id);
            let Some((manifest, file)) = tree.read(store, &heads, &path) else {
                continue;
            };
            tree.file(by_id, OsString::from(format!("{id}.jsonl")), file.clone());
            if let Ok(placed) = place(&manifest.session) {
                let rel = Path::new(placed.agent.id()).join(&placed.rel);
                tree.file_at(&rel, file);
            }
        }
        for (id, kept) in generations::all(store)? {
            for generation in kept {
                if let Some((_, file)) = tree.read(store, &heads, &generation.path) {
                    let name = format!("{id}@{}.jsonl", generation.number);
                    tree.file(by_id, OsString::from(name), file);
                }
            }
        }
        // A cache: a store this user cannot write to is shown all the same, only not faster.
        let _ = heads.save();
        Ok(tree)
    }

    pub fn node(&self, ino: Ino) -> Option<&Node> {
        self.nodes.get(usize::try_from(ino).ok()?.checked_sub(1)?)
    }

    /// The child `name` of folder `parent`.
    pub fn child(&self, parent: Ino, name: &OsStr) -> Option<Ino> {
        match &self.node(parent)?.kind {
            Kind::Dir(children) => children.get(name).copied(),
            Kind::File(_) => None,
        }
    }

    /// How many nodes there are (inodes `1..=len`).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A manifest and what its file shows; `None` (noted) when it cannot be read.
    fn read(&mut self, store: &Store, heads: &Heads<'_>, path: &Path) -> Option<(Head, File)> {
        match file_of(store, heads, path) {
            Ok(read) => Some(read),
            Err(e) => {
                self.problems.push(e.to_string());
                None
            }
        }
    }

    /// The folder `name` in `parent`, made when missing.
    fn dir(&mut self, parent: Ino, name: &OsStr) -> Ino {
        if let Some(ino) = self.child(parent, name) {
            return ino;
        }
        self.add(parent, name.to_os_string(), Kind::Dir(BTreeMap::new()))
    }

    /// `file` at `rel` under the root, its folders made; a name taken already keeps its first.
    fn file_at(&mut self, rel: &Path, file: File) {
        let mut names: Vec<&OsStr> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        let Some(last) = names.pop() else { return };
        let mut at = ROOT;
        for name in names {
            at = self.dir(at, name);
        }
        self.file(at, last.to_os_string(), file);
    }

    fn file(&mut self, parent: Ino, name: OsString, file: File) {
        if self.child(parent, &name).is_none() {
            self.add(parent, name, Kind::File(file));
        }
    }

    fn add(&mut self, parent: Ino, name: OsString, kind: Kind) -> Ino {
        self.nodes.push(Node { parent, kind });
        let ino = self.nodes.len() as Ino;
        let Kind::Dir(children) = &mut self.nodes[parent as usize - 1].kind else {
            unreachable!("files are added to folders only")
        };
        children.insert(name, ino);
        ino
    }
}
