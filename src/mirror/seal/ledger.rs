//! What this machine knows of one encrypted remote: which sealed blob holds which plain file, and
//! which sealed commit is which plain commit. age encrypts with a fresh key each time, so sealing a
//! file again would give another blob: the ledger lets an unchanged file keep its blob (the push
//! sends only what changed, and the remote's history stays small), and lets a sealed blob seen
//! before be read without decrypting it again.
//!
//! `<mirror>/ctxfold-sealed/<remote, hex>`, private like the mirror; lines `f SEALED KIND PLAIN PATH`
//! (KIND `b` a blob, `t` a tree of parts) and `c SEALED PLAIN` (commits), after a first line naming
//! the keyring it was made under. A ledger of another keyring (recipients changed, here or on
//! another machine) is dropped whole: its blobs are encrypted to the wrong recipients. A lost or
//! corrupt ledger costs only time (everything is sealed or opened again).

use std::collections::HashMap;
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
                ["f", _, kind, _, path] => {
                    let kind = match *kind {
                        "b" => EntryKind::Blob,
                        "t" => EntryKind::Tree,
                        _ => continue,
                    };
                    if let (Some(sealed), Some(oid)) = (oid(1), oid(3)) {
                        let path = path.to_string();
                        ledger.remember(sealed, Plain { path, kind, oid });
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
        ledger
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
        self.changed = true;
    }

    /// The plain commit a sealed commit is.
    pub fn plain_commit(&self, sealed: &ObjectId) -> Option<ObjectId> {
        self.commits.get(sealed).copied()
    }

    /// The sealed commit a plain commit was sealed into.
    pub fn sealed_commit(&self, plain: &ObjectId) -> Option<ObjectId> {
        self.commits_back.get(plain).copied()
    }

    pub fn remember_commit(&mut self, sealed: ObjectId, plain: ObjectId) {
        self.commits.insert(sealed, plain);
        self.commits_back.insert(plain, sealed);
        self.changed = true;
    }

    /// Write the ledger back, whole, if it changed.
    pub fn save(&self) -> Result<()> {
        if !self.changed {
            return Ok(());
        }
        let mut text = format!("{}\n", self.keyring);
        for (sealed, plain) in &self.opened {
            let kind = if plain.kind == EntryKind::Tree {
                't'
            } else {
                'b'
            };
            let _ = writeln!(text, "f {sealed} {kind} {} {}", plain.oid, plain.path);
        }
        for (sealed, plain) in &self.commits {
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
