//! Encrypted remotes: the mirror's plain branch sealed into a branch that a git host cannot read,
//! and unsealed back. A layer between the plain mirror and what is pushed and fetched: the plain
//! mirror (`tree`, `merge`, `cut`) stays the one copy of the store-to-git logic, and this module
//! only turns one plain tree into one sealed tree and back.
//!
//! A sealed tree holds:
//! - `recipients`: the recipients (`age1…`, one a line, sorted), in clear, so that a machine that
//!   cannot decrypt is told which keys the remote expects (public keys reveal nothing stored);
//! - `key.age`: the remote's secret (32 random bytes) and the same recipients, encrypted with age
//!   to each of them (see `header`);
//! - every plain file but the manifests, encrypted with age to every recipient, at
//!   `<2 hex>/<62 hex>`: the HMAC-SHA256 of its plain path under the secret (see `names`). The same
//!   path under the same secret gets the same name, so an unchanged file keeps its name and blob
//!   (see `ledger`) and pushes stay incremental; a name says nothing of a session id, a sha256, a
//!   title or a cwd. The encrypted payload is the plain path, a newline, then the file (see
//!   `envelope`), so that a file cannot be moved to another name unnoticed. A blob over the
//!   mirror's cap is cut as plain files are.
//! - the manifests, in groups sealed together (see `close`, `envelope`), each at the keyed hash of
//!   the paths it holds (see `names`).
//!
//! The sealed objects are written straight into a pack of the mirror (see `pack`).
//!
//! What the host still sees: the number of files, their sizes (zstd-compressed where the plain file
//! was not compressed already), and the commit times.

pub mod close;
pub mod envelope;
pub mod header;
pub mod ledger;
pub mod names;
pub mod pack;
pub mod remote;
pub mod unseal;

use age::x25519::Recipient;

/// The sealed tree's file of recipients, in clear.
pub const RECIPIENTS: &str = "recipients";

/// The sealed tree's encrypted header: the secret names are keyed with.
pub const KEY: &str = "key.age";

/// What seals and unseals one remote's files: its secret and its recipients.
#[derive(Clone)]
pub struct Keyring {
    pub secret: [u8; 32],
    /// Sorted by their text and without duplicates, so that one set has one spelling.
    pub recipients: Vec<Recipient>,
}

impl Keyring {
    /// A keyring for `recipients` with a fresh secret.
    pub fn new(recipients: Vec<Recipient>) -> crate::error::Result<Self> {
        let mut secret = [0; 32];
        getrandom::getrandom(&mut secret).map_err(|e| {
            crate::error::Error::system("draw a random secret", std::io::Error::other(e))
        })?;
        Ok(Self {
            secret,
            recipients: canonical(recipients),
        })
    }

    /// The recipients as their text, in order.
    pub fn recipient_names(&self) -> Vec<String> {
        self.recipients.iter().map(|r| r.to_string()).collect()
    }
}

/// `recipients` sorted by their text, each once.
pub fn canonical(mut recipients: Vec<Recipient>) -> Vec<Recipient> {
    recipients.sort_by_key(|r| r.to_string());
    recipients.dedup();
    recipients
}
