//! Packed manifests' bodies, read ahead and kept for the life of a `Store` handle.
//!
//! Commands that read many sessions (ls, log, status, restore --all, a re-fold) read their
//! manifests one by one, in the table's order or near it, and packing writes the bodies in that
//! order, many to a pack block. Reading one body decodes its whole block: the bodies that follow
//! it in the table are taken from that block at once, rather than each decoding it again.
//!
//! Not a store of its own: dropping it changes speed, never results (each body is read through
//! the object database, verified against its sha256).

use std::collections::HashMap;
use std::sync::Arc;

use super::Store;
use super::packed::Table;
use crate::digest::Digest;
use crate::error::Result;

/// How many bodies after the one asked for are read with it.
const READ_AHEAD: usize = 64;

/// Bytes of bodies kept before they are all dropped (and read again as needed).
const BUDGET: usize = 64 << 20;

#[derive(Debug, Default)]
pub struct Bodies {
    held: HashMap<Digest, Arc<Vec<u8>>>,
    bytes: usize,
}

impl Store {
    /// Drop the bodies read ahead: for a command that has read every manifest it needs at once,
    /// and would otherwise carry their bytes beside what it parsed of them.
    pub fn forget_bodies_read(&self) {
        *self.bodies.lock().unwrap_or_else(|e| e.into_inner()) = Bodies::default();
    }

    /// The packed body `body`, named `name` in `table`, and the bodies after it read ahead.
    pub(super) fn packed_body(
        &self,
        table: &Table,
        name: &str,
        body: Digest,
    ) -> Result<Arc<Vec<u8>>> {
        let lock = || self.bodies.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = lock().held.get(&body) {
            return Ok(held.clone());
        }
        let wanted = Arc::new(self.odb().read_to_vec(&body, None)?);
        // Those not read yet (threads reading near each other share the work).
        let ahead: Vec<Digest> = {
            let held = lock();
            (table.after(name).take(READ_AHEAD))
                .map(|(_, next)| next)
                .filter(|next| !held.held.contains_key(next))
                .collect()
        };
        let mut read = vec![(body, wanted.clone())];
        for next in ahead {
            // One that does not read now is read, and its error reported, when it is asked for.
            match self.odb().read_to_vec(&next, None) {
                Ok(bytes) => read.push((next, Arc::new(bytes))),
                Err(_) => break,
            }
        }
        let mut bodies = lock();
        let adding: usize = read.iter().map(|(_, b)| b.len()).sum();
        if bodies.bytes + adding > BUDGET {
            *bodies = Bodies::default();
        }
        for (digest, bytes) in read {
            let len = bytes.len();
            if bodies.held.insert(digest, bytes).is_none() {
                bodies.bytes += len;
            }
        }
        Ok(wanted)
    }
}
