//! What this machine knows of one encrypted remote: which sealed blob holds which plain file, and
//! which sealed commit is which plain commit. age encrypts with a fresh key each time, so sealing a
//! file again would give another blob: the ledger lets an unchanged file keep its blob (the push
//! sends only what changed, and the remote's history stays small), and lets a sealed blob seen
//! before be read without decrypting it again.
//!
//! `<mirror>/ctxfold-sealed/<remote, hex>`, private like the mirror; lines `f SEALED KIND PLAIN PATH`
//! (KIND `b` a blob, `t` a tree of parts), `g SEALED KIND PLAIN PATH` (one a file of a group sealed
//! together, in the group's order) and `c SEALED PLAIN` (commits), after a first line naming
//! the keyring it was made under. A ledger of another keyring (recipients changed, here or on
//! another machine) is dropped whole: its blobs are encrypted to the wrong recipients. A lost or
//! corrupt ledger costs only time (everything is sealed or opened again).
//!
//! Pruning: a sync that sealed or opened a whole tree keeps, of the files, only those of the trees
//! it sealed or opened (what the remote's branch holds now: what the next sync reuses), and of the
//! commits only those it made, opened or looked up (the remote's tip and what was pushed over it).
//! A sync that walked no tree (nothing new either way) drops nothing. What is dropped costs, should
//! it come back, only its sealing or opening again.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use gix::ObjectId;
use gix::objs::tree::EntryKind;
use sha2::{Digest, Sha256};

use super::Keyring;
use crate::error::Result;
use crate::files::atomic::write_file;
use crate::files::create_private_dir;

const DIR: &str = "ctxfold-sealed";

/// A plain file: its path in the plain tree, and its entry there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Plain {
    pub path: String,
    pub kind: EntryKind,
    pub oid: ObjectId,
}

pub struct Ledger {
    file: PathBuf,
    keyring: String,
    /// Sealed entry (a blob, or a tree of parts) -> the plain file it holds.
    opened: HashMap<ObjectId, Plain>,
    /// The other way.
    sealed: HashMap<Plain, ObjectId>,
    /// Sealed commit -> plain commit, and back.
    commits: HashMap<ObjectId, ObjectId>,
    commits_back: HashMap<ObjectId, ObjectId>,
    /// Sealed blob of a group -> the plain files it holds, in order.
    groups: HashMap<ObjectId, Vec<Plain>>,
    /// The sealed files and commits this sync used (see the module's doc on pruning).
    used: HashSet<ObjectId>,
    /// Whether this sync sealed or opened a whole tree.
    walked: bool,
    changed: bool,
}

impl Ledger {
    /// The ledger of `remote` in the mirror at `git_dir`, for `keyring` (empty if it was kept for
    /// another, or never).
    pub fn load(git_dir: &Path, remote: &str, keyring: &Keyring) -> Self {
        let hex: String = remote.bytes().map(|b| format!("{b:02x}")).collect();
        let mut ledger = Self {
            file: git_dir.join(DIR).join(hex),
            keyring: fingerprint(keyring),
            opened: HashMap::new(),
            sealed: HashMap::new(),
            commits: HashMap::new(),
            commits_back: HashMap::new(),
            groups: HashMap::new(),
            used: HashSet::new(),
            walked: false,
            changed: false,
        };
        let Ok(text) = std::fs::read_to_string(&ledger.file) else {
            return ledger;
        };
        let mut lines = text.lines();
        if lines.next() != Some(ledger.keyring.as_str()) {
            ledger.changed = true;
            return ledger;
        }
        for line in lines {
            // A line that does not read is skipped: it costs a decryption, never a wrong answer.
            let fields: Vec<&str> = line.splitn(5, ' ').collect();
            let oid = |n: usize| ObjectId::from_hex(fields[n].as_bytes()).ok();
            match fields.as_slice() {
                [what @ ("f" | "g"), _, kind, _, path] => {
                    let kind = match *kind {
                        "b" => EntryKind::Blob,
                        "t" => EntryKind::Tree,
                        _ => continue,
                    };
                    if let (Some(sealed), Some(oid)) = (oid(1), oid(3)) {
                        let plain = Plain {
                            path: path.to_string(),
                            kind,
                            oid,
                        };
                        match *what {
                            "f" => ledger.remember(sealed, plain),
                            _ => ledger.groups.entry(sealed).or_default().push(plain),
                        }
                    }
                }
                ["c", _, _] => {
                    if let (Some(sealed), Some(plain)) = (oid(1), oid(2)) {
                        ledger.remember_commit(sealed, plain);
                    }
                }
                _ => {}
            }
        }
        ledger.changed = false;
        ledger.used.clear();
        ledger
    }

    /// Say that this sync sealed or opened a whole tree, whose files it marks used as it goes.
    pub fn walking(&mut self) {
        self.walked = true;
    }

    /// Mark a sealed file (or group) as one the remote's branch holds now.
    pub fn keep(&mut self, sealed: ObjectId) {
        self.used.insert(sealed);
    }

    /// The plain file a sealed entry holds, if it was opened or made here.
    pub fn opened(&self, sealed: &ObjectId) -> Option<&Plain> {
        self.opened.get(sealed)
    }

    /// The sealed entry made for a plain file, if any.
    pub fn sealed(&self, plain: &Plain) -> Option<ObjectId> {
        self.sealed.get(plain).copied()
    }

    pub fn remember(&mut self, sealed: ObjectId, plain: Plain) {
        self.sealed.insert(plain.clone(), sealed);
        self.opened.insert(sealed, plain);
        self.used.insert(sealed);
        self.changed = true;
    }

    /// The plain files a sealed group holds, if it was opened or made here.
    pub fn group(&self, sealed: &ObjectId) -> Option<&[Plain]> {
        self.groups.get(sealed).map(Vec::as_slice)
    }

    pub fn remember_group(&mut self, sealed: ObjectId, files: Vec<Plain>) {
        self.groups.insert(sealed, files);
        self.used.insert(sealed);
        self.changed = true;
    }

    /// The plain commit a sealed commit is.
    pub fn plain_commit(&mut self, sealed: &ObjectId) -> Option<ObjectId> {
        let plain = self.commits.get(sealed).copied();
        if plain.is_some() {
            self.used.insert(*sealed);
        }
        plain
    }

    /// The sealed commit a plain commit was sealed into.
    pub fn sealed_commit(&mut self, plain: &ObjectId) -> Option<ObjectId> {
        let sealed = self.commits_back.get(plain).copied();
        if let Some(sealed) = sealed {
            self.used.insert(sealed);
        }
        sealed
    }

    pub fn remember_commit(&mut self, sealed: ObjectId, plain: ObjectId) {
        self.commits.insert(sealed, plain);
        self.commits_back.insert(plain, sealed);
        self.used.insert(sealed);
        self.changed = true;
    }

    /// Write the ledger back, whole, if it changed or drops something (see the module's doc).
    pub fn save(&self) -> Result<()> {
        let kept = |sealed: &ObjectId| !self.walked || self.used.contains(sealed);
        let drops = self.walked
            && (self.opened.keys().chain(self.groups.keys()))
                .chain(self.commits.keys())
                .any(|s| !self.used.contains(s));
        if !self.changed && !drops {
            return Ok(());
        }
        let kind = |plain: &Plain| match plain.kind {
            EntryKind::Tree => 't',
            _ => 'b',
        };
        let mut text = format!("{}\n", self.keyring);
        for (sealed, plain) in self.opened.iter().filter(|(s, _)| kept(s)) {
            let _ = writeln!(
                text,
                "f {sealed} {} {} {}",
                kind(plain),
                plain.oid,
                plain.path
            );
        }
        for (sealed, files) in self.groups.iter().filter(|(s, _)| kept(s)) {
            for plain in files {
                let _ = writeln!(
                    text,
                    "g {sealed} {} {} {}",
                    kind(plain),
                    plain.oid,
                    plain.path
                );
            }
        }
        for (sealed, plain) in self.commits.iter().filter(|(s, _)| kept(s)) {
            let _ = writeln!(text, "c {sealed} {plain}");
        }
        let dir = self.file.parent().expect("the ledger is in a folder");
        create_private_dir(dir)?;
        write_file(dir, ".ledger-", &self.file, text.as_bytes(), true)?;
        Ok(())
    }
}

/// The ledger's first line: which keyring its blobs were sealed under (a hash: the ledger need not
/// be another copy of the secret).
fn fingerprint(keyring: &Keyring) -> String {
    let mut hash = Sha256::new();
    hash.update(keyring.secret);
    for recipient in &keyring.recipients {
        hash.update(recipient.to_string().as_bytes());
        hash.update(b"\n");
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("ctxfold sealed ledger v1 {hex}")
}
