//! The secret scan before a push: the sessions a sync is about to send are scanned (what was
//! scanned before is remembered), and a push to a remote that would read them in clear is
//! refused while any holds a secret, unless the person said to send them anyway. A push to an
//! encrypted remote sends them, and counts them.

use std::collections::BTreeSet;

use super::remembered::Remembered;
use crate::error::{Error, Result, Status};
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
/// sessions `manifests` name hold secrets, or the refusal. A session the store can no longer read
/// (taken out and its objects collected since an earlier mirror commit that holds it) is refused
/// too: what cannot be scanned is not sent unless the person says so. To an `encrypted` remote
/// everything is sent: the host cannot read it.
pub fn screen(
    store: &Store,
    policy: Policy,
    manifests: &[Manifest],
    encrypted: bool,
) -> Result<u64> {
    let remembered = Remembered::load(store);
    let findings = remembered.findings_each(store, manifests);
    remembered.save(store)?;
    let mut holding = BTreeSet::new();
    let mut unread = BTreeSet::new();
    for (manifest, found) in manifests.iter().zip(findings) {
        let id = manifest.session.id.as_str();
        match found {
            Ok(found) if found.is_empty() => {}
            Ok(_) => {
                holding.insert(id);
            }
            Err(e) if e.status() == Status::Corrupt => {
                unread.insert(id);
            }
            Err(e) => return Err(e),
        }
    }
    if (holding.is_empty() && unread.is_empty()) || policy == Policy::Send || encrypted {
        return Ok(holding.len() as u64);
    }
    let mut why = Vec::new();
    if !holding.is_empty() {
        why.push(format!(
            "{} to push {} secrets, and the remote is not encrypted: {} ('ctxfold secrets ID' \
             shows where)",
            sessions(holding.len()),
            if holding.len() == 1 { "holds" } else { "hold" },
            holding.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if !unread.is_empty() {
        why.push(format!(
            "{} to push from an earlier mirror commit can no longer be read to be scanned: {}",
            sessions(unread.len()),
            unread.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Err(Error::refused(format!(
        "{}; --allow-secrets pushes them anyway",
        why.join("; ")
    )))
}

fn sessions(n: usize) -> String {
    match n {
        1 => "1 session".into(),
        n => format!("{n} sessions"),
    }
}
