//! A session's nearest relative in the store (`ctxfold diff ID` for a session that has only one
//! side, its file or its folded version): the folded session, other than itself, that shares the
//! longest history with it, as [`fork`](super::fork) compares them (a fork, a resume, the session
//! it was forked from). Only the sessions of its agent are read, each up to where it parts.

use crate::agents::place::named_by;
use crate::error::Result;
use crate::ledger::{Source, StoreSource, Stream};
use crate::store::Store;
use crate::store::manifest::Manifest;

use super::fork::{Common, Fork};

/// The folded session other than `id` with the longest common history with `source`, and that
/// history, when one has any; the first in id order among equals.
pub fn nearest(
    store: &Store,
    source: &dyn Source,
    id: Option<&str>,
) -> Result<Option<(Manifest, Common)>> {
    let agent = Stream::new(source)?
        .next_line()?
        .and_then(|line| line.agent);
    let mut best: Option<(Common, Manifest)> = None;
    for other in store.session_ids()? {
        if Some(other.as_str()) == id {
            continue;
        }
        // A manifest that cannot be read is fsck's to report, not a relative.
        let Ok(manifest) = store.load_manifest(&other) else {
            continue;
        };
        // A file named as another agent names its files holds none of this one's history.
        if let (Some(agent), Some(theirs)) = (agent, named_by(&manifest.session))
            && agent != theirs
        {
            continue;
        }
        let folded = StoreSource {
            store,
            manifest: &manifest,
        };
        let shared = Fork::new(source, &folded)?.common().clone();
        if shared.lines > 0
            && best
                .as_ref()
                .is_none_or(|(most, _)| shared.lines > most.lines)
        {
            best = Some((shared, manifest));
        }
    }
    Ok(best.map(|(common, manifest)| (manifest, common)))
}
