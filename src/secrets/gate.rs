//! The secret scan before a push: the sessions a sync is about to send are scanned (what was
//! scanned before is remembered), and a push to a remote that would read them in clear is
//! refused while any holds a secret, unless the person said to send them anyway.

use std::collections::BTreeSet;

use super::remembered::Remembered;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::manifest::Manifest;

/// Whether sessions that hold secrets may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Refuse the push, naming them.
    Refuse,
    /// Send them (`--allow-secrets`), and count them.
    Send,
}

/// The screen of a sync from `store` (see [`crate::mirror::sync::Screen`]): how many of the
/// sessions `manifests` name hold secrets, or the refusal.
pub fn screen(store: &Store, policy: Policy, manifests: &[Manifest]) -> Result<u64> {
    let remembered = Remembered::load(store);
    let findings = remembered.findings(store, manifests)?;
    remembered.save(store)?;
    let holding: BTreeSet<&str> = manifests
        .iter()
        .zip(&findings)
        .filter(|(_, found)| !found.is_empty())
        .map(|(manifest, _)| manifest.session.id.as_str())
        .collect();
    if holding.is_empty() || policy == Policy::Send {
        return Ok(holding.len() as u64);
    }
    let names: Vec<&str> = holding.into_iter().collect();
    Err(Error::refused(format!(
        "{} to push {} secrets, and the remote is not encrypted: {} ('ctxfold secrets ID' shows \
         where; --allow-secrets pushes them anyway)",
        match names.len() {
            1 => "1 session".to_string(),
            n => format!("{n} sessions"),
        },
        if names.len() == 1 { "holds" } else { "hold" },
        names.join(", ")
    )))
}
