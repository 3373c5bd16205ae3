//! An encrypted remote as a sync sees it: what this machine's configuration says of it (the
//! recipients, `remote.<name>.ctxfoldRecipient` in the mirror's git config), the fetched sealed
//! commit as a plain commit that `sync` merges as it merges any other, and the plain commit the
//! sync settles on, sealed for its push. And the one change that is not a sync: re-encrypting what
//! a remote holds for a new set of recipients.
//!
//! This machine encrypts only to the recipients its own configuration names: a remote that says
//! otherwise (a recipient added by someone with push access, or on another machine) is refused
//! until `ctxfold remote recipients` here agrees. A remote that names none here (a clone, or a
//! remote added without `--encrypt` whose branch is encrypted) is taken as it is, once: its
//! recipients are written into the configuration.

use std::path::Path;

use age::x25519::{Identity, Recipient};
use gix::ObjectId;

use super::close::{seal_tree, write_header};
use super::ledger::Ledger;
use super::unseal::{is_sealed, open_header, unseal_tree};
use super::{KEY, Keyring, RECIPIENTS, canonical};
use crate::error::{Error, Result};
use crate::keys::{self, parse_recipient};
use crate::mirror::lock::MirrorLock;
use crate::mirror::{Mirror, git};

/// The git configuration key of a remote's recipients.
fn recipients_key(remote: &str) -> String {
    format!("remote.{remote}.ctxfoldRecipient")
}

/// The recipients this machine encrypts `remote` to (none: a plain remote).
pub fn configured(git_dir: &Path, remote: &str) -> Result<Vec<Recipient>> {
    let values = git::config_values(git_dir, &recipients_key(remote))?;
    values.iter().map(|v| parse_recipient(v)).collect()
}

/// Make `recipients` the ones this machine encrypts `remote` to.
pub fn configure(git_dir: &Path, remote: &str, recipients: &[Recipient]) -> Result<()> {
    let values: Vec<String> = canonical(recipients.to_vec())
        .iter()
        .map(|r| r.to_string())
        .collect();
    git::set_config_values(git_dir, &recipients_key(remote), &values)
}

/// The identities to decrypt with: the file named, else this machine's.
pub fn identities(named: Option<&Path>) -> Result<Vec<Identity>> {
    match named {
        Some(path) => keys::load(path),
        None => keys::load(&keys::default_path()?),
    }
}

/// One encrypted remote, for one sync.
pub struct Sealed {
    identities: Vec<Identity>,
    keyring: Keyring,
    /// The blobs of the header's `recipients` and `key.age`.
    header: (ObjectId, ObjectId),
    ledger: Ledger,
}

impl Sealed {
    /// `remote` as this machine encrypts it, given the sealed commit fetched from it (`None`: an
    /// empty remote), decrypting with the identity file `identity` or this machine's. `None`: a
    /// plain remote (none configured, and what was fetched is not encrypted).
    pub fn for_remote(
        mirror: &Mirror,
        remote: &str,
        fetched: Option<ObjectId>,
        identity: Option<&Path>,
    ) -> Result<Option<Self>> {
        let git_dir = mirror.git_dir();
        let configured = canonical(configured(git_dir, remote)?);
        let tree = fetched.map(|c| mirror.tree_of(c)).transpose()?;
        let sealed_there = match tree {
            Some(tree) => is_sealed(mirror, tree)?,
            None => false,
        };
        let Some(tree) = tree.filter(|_| sealed_there) else {
            if configured.is_empty() {
                return Ok(None);
            }
            if tree.is_some() {
                return Err(Error::refused(format!(
                    "{remote} holds sessions unencrypted, and this machine encrypts it: an \
                     encrypted remote needs a new empty repository (`ctxfold remote remove \
                     {remote}`, `ctxfold remote add {remote} NEW-URL --encrypt`, sync, then delete \
                     the old one: its history keeps every session in clear)"
                )));
            }
            // A new remote: a new secret, for the configured recipients.
            let keyring = Keyring::new(configured)?;
            let header = write_header(mirror, &keyring)?;
            let ledger = Ledger::load(git_dir, remote, &keyring);
            return Ok(Some(Self {
                identities: Vec::new(),
                keyring,
                header,
                ledger,
            }));
        };
        let identities = identities(identity)?;
        let keyring = open_header(mirror, tree, &identities)?;
        if configured.is_empty() {
            configure(git_dir, remote, &keyring.recipients)?;
        } else if configured != keyring.recipients {
            return Err(Error::refused(format!(
                "{remote} is encrypted to {}, and this machine encrypts it to {}: if that change \
                 is meant, `ctxfold remote recipients add|remove {remote} …` here to agree",
                names(&keyring.recipients),
                names(&configured)
            )));
        }
        // Kept as they are: the next commit sealed on this one changes no header blob.
        let root = mirror.entries(Some(tree))?;
        let blob = |name: &str| {
            root.get(name.as_bytes())
                .map(|e| e.oid)
                .ok_or_else(|| Error::corrupt(format!("{remote} has no {name}")))
        };
        let header = (blob(RECIPIENTS)?, blob(KEY)?);
        let ledger = Ledger::load(git_dir, remote, &keyring);
        Ok(Some(Self {
            identities,
            keyring,
            header,
            ledger,
        }))
    }

    /// The plain commit a fetched sealed commit holds: its tree opened and checked, its parents
    /// the plain commits of the sealed parents this machine knows (so that `sync` sees what of
    /// the remote it merged before).
    pub fn plain_of(&mut self, mirror: &Mirror, sealed: ObjectId) -> Result<ObjectId> {
        let known = self.ledger.plain_commit(&sealed);
        if let Some(plain) = known.filter(|c| mirror.repo().has_object(c)) {
            return Ok(plain);
        }
        let tree = unseal_tree(
            mirror,
            mirror.tree_of(sealed)?,
            &self.identities,
            &self.keyring,
            &mut self.ledger,
        )?;
        let parents: Vec<ObjectId> = parents(mirror, sealed)?
            .iter()
            .filter_map(|p| self.ledger.plain_commit(p))
            .collect();
        let plain =
            mirror.write_commit(tree, &parents, "ctxfold: opened from an encrypted remote\n")?;
        self.ledger.remember_commit(sealed, plain);
        Ok(plain)
    }

    /// The sealed commit of the plain commit `plain`, on top of the remote's `parent`.
    pub fn seal_commit(
        &mut self,
        mirror: &Mirror,
        plain: ObjectId,
        parent: Option<ObjectId>,
    ) -> Result<ObjectId> {
        let known = self.ledger.sealed_commit(&plain).filter(|c| {
            mirror.repo().has_object(c) && parents(mirror, *c).is_ok_and(|p| p == parent.as_slice())
        });
        if let Some(sealed) = known {
            return Ok(sealed);
        }
        let tree = seal_tree(
            mirror,
            mirror.tree_of(plain)?,
            &self.keyring,
            self.header,
            &mut self.ledger,
            parent.map(|c| mirror.tree_of(c)).transpose()?,
        )?;
        // The message says nothing: the host reads it.
        let sealed = mirror.write_commit(tree, parent.as_slice(), "ctxfold\n")?;
        self.ledger.remember_commit(sealed, plain);
        Ok(sealed)
    }

    /// Keep what this sync learnt of the remote's blobs for the next.
    pub fn save(&self) -> Result<()> {
        self.ledger.save()
    }
}

/// Re-encrypt what `remote` holds for `recipients` (with a fresh secret when `fresh`: a removed
/// recipient knew the old one, and with it could test guessed paths against the names), in one
/// commit pushed there, then make them the ones this machine encrypts to. An empty remote only
/// changes the configuration. Returns the commit pushed.
pub fn rekey(
    git_dir: &Path,
    remote: &str,
    recipients: Vec<Recipient>,
    fresh: bool,
    identity: Option<&Path>,
    on_wait: impl FnOnce(),
) -> Result<Option<ObjectId>> {
    Mirror::open_or_init(git_dir)?;
    let _lock = MirrorLock::take(git_dir, on_wait)?;
    let fetched = git::fetch(git_dir, remote)?;
    let mirror = Mirror::open(git_dir)?;
    let tip = match fetched {
        true => mirror.resolve(&git::tracking_ref(remote))?,
        false => None,
    };
    let Some(tip) = tip else {
        configure(git_dir, remote, &recipients)?;
        return Ok(None);
    };
    let mut old = Sealed::for_remote(&mirror, remote, Some(tip), identity)?
        .ok_or_else(|| Error::refused(format!("{remote} is not an encrypted remote")))?;
    let plain = old.plain_of(&mirror, tip)?;
    let mut keyring = Keyring::new(recipients)?;
    if !fresh {
        keyring.secret = old.keyring.secret;
    }
    let header = write_header(&mirror, &keyring)?;
    let mut new = Sealed {
        ledger: Ledger::load(git_dir, remote, &keyring),
        identities: old.identities,
        keyring,
        header,
    };
    let sealed = new.seal_commit(&mirror, plain, Some(tip))?;
    git::push(git_dir, remote, sealed)?;
    new.save()?;
    configure(git_dir, remote, &new.keyring.recipients)?;
    Ok(Some(sealed))
}

/// A commit's parents.
fn parents(mirror: &Mirror, commit: ObjectId) -> Result<Vec<ObjectId>> {
    use crate::mirror::GitContext;
    let found = mirror
        .repo()
        .find_commit(commit)
        .git(|| format!("read commit {commit}"))?;
    Ok(found.parent_ids().map(|id| id.detach()).collect())
}

fn names(recipients: &[Recipient]) -> String {
    recipients
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
