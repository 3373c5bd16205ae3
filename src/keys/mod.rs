//! This machine's age identity (X25519), and the recipients an encrypted remote is encrypted to.
//!
//! The identity is a standard age identity file, as `age-keygen` writes it (comments, then one
//! `AGE-SECRET-KEY-1…` line), so `age -d -i FILE` and `rage -d -i FILE` read it too. It lives under
//! `$XDG_CONFIG_HOME/ctxfold/` (else `~/.config/ctxfold/`), private, and never in a store or its
//! mirror: a store and its remotes are what it protects, not where it may be kept.
//! This module knows keys only; what is encrypted with them is `mirror::seal`'s business.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use age::secrecy::ExposeSecret;
use age::x25519::{Identity, Recipient};

use crate::cli::env_path;
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::{Committed, write_file};
use crate::files::create_private_dir;

/// The identity file's name in the configuration directory.
const FILE: &str = "identity.txt";

/// Where this machine's identity lives: `$XDG_CONFIG_HOME/ctxfold/identity.txt`, else
/// `~/.config/ctxfold/identity.txt`.
pub fn default_path() -> Result<PathBuf> {
    let config = env_path("XDG_CONFIG_HOME")
        .or_else(|| env_path("HOME").map(|home| home.join(".config")))
        .ok_or_else(|| Error::usage("no configuration directory: set XDG_CONFIG_HOME or HOME"))?;
    Ok(config.join("ctxfold").join(FILE))
}

/// Make a new identity at `path` and return its recipient; an identity already there is kept
/// (refused) unless `force`: replacing it loses what only it can decrypt.
pub fn create(path: &Path, force: bool) -> Result<Recipient> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::usage(format!("{}: not a file path", path.display())))?;
    create_private_dir(dir)?;
    let identity = Identity::generate();
    let recipient = identity.to_public();
    let text = format!(
        "# ctxfold: this machine's age identity (keep it private; back it up)\n\
         # created: {}\n# public key: {recipient}\n{}\n",
        crate::time::Instant::now().rfc3339(),
        identity.to_string().expose_secret()
    );
    match write_file(dir, ".identity-", path, text.as_bytes(), force)? {
        Committed::Written => Ok(recipient),
        Committed::AlreadyThere => Err(Error::refused(format!(
            "{} exists already: --force replaces it (what only it can decrypt is then lost)",
            path.display()
        ))),
    }
}

/// The identities of an age identity file (one or more `AGE-SECRET-KEY-1…` lines).
pub fn load(path: &Path) -> Result<Vec<Identity>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::refused(format!(
                "no age identity at {}: `ctxfold key new` makes one (or name one with --identity)",
                path.display()
            )));
        }
        Err(e) => return Err(e).with_path("read", path),
    };
    let mut identities = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The parser's own message never repeats the secret line; neither does ours.
        let identity = line.parse::<Identity>().map_err(|why| {
            Error::bad_input(
                format_args!("{}:{}", path.display(), n + 1),
                format!("not an age X25519 identity ({why})"),
            )
        })?;
        identities.push(identity);
    }
    if identities.is_empty() {
        return Err(Error::bad_input(path.display(), "holds no age identity"));
    }
    Ok(identities)
}

/// A recipient (`age1…`), or a usage error naming it.
pub fn parse_recipient(text: &str) -> Result<Recipient> {
    text.trim()
        .parse::<Recipient>()
        .map_err(|why| Error::usage(format!("{text:?} is not an age X25519 recipient ({why})")))
}

/// The recipients of a recipients file (one `age1…` a line; `#` comments and blank lines skipped),
/// as age's `-R` reads it.
pub fn read_recipients_file(path: &Path) -> Result<Vec<Recipient>> {
    let text = fs::read_to_string(path).with_path("read", path)?;
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(parse_recipient)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_identity_is_private_readable_and_never_overwritten_unasked() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf/ctxfold").join(FILE);
        let recipient = create(&path, false).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let loaded = load(&path).unwrap();
        assert_eq!(loaded[0].to_public().to_string(), recipient.to_string());
        let again = create(&path, false).unwrap_err();
        assert_eq!(again.status(), crate::error::Status::Refused);
        assert_eq!(
            load(&path).unwrap()[0].to_public().to_string(),
            recipient.to_string()
        );
        let forced = create(&path, true).unwrap();
        assert_ne!(forced.to_string(), recipient.to_string());
        assert!(parse_recipient("age1nope").is_err());
    }
}
