//! `ctxfold seeds`: index folded sessions into the store's seed index.

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::{Cause, Result};
use crate::seeds::facts::FactsCache;
use crate::seeds::index_folded_session;
use crate::store::lock::Mode;

/// Index folded sessions into the store's seed index
///
/// For each folded session (every one in the store when none is named), extract its seed records —
/// one `compact` record per compaction and one over its whole active branch, as
/// `ctxfold-extract-seeds --final` gives them — from the session streamed out of the store, and append
/// those not yet there to the session's seed index in the store (a batch object, several of 32 MiB for
/// a long session's, listed in seeds/catalog.jsonl; `ctxfold-read-seeds --session ID` prints the
/// index). The index is append-only and shared with other writers (the Pi extension's records are
/// merged into it): a re-run adds only what is new. New records take seqs after the highest one in the index and above 1000000,
/// clear of the small seqs the extension's records bring when they are merged in later. Only current
/// versions are indexed, not the generations kept of them nor conflicts. A folded file that is no Pi
/// or Codex ledger (any JSONL file, or one folded with `fold --force`) has no seeds: it is skipped
/// with a note, or, when named, refused (status 3). A session that cannot be indexed for another
/// reason is reported on stderr, the others are indexed, and the status says what went wrong.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-seeds", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct SeedsArgs {
    /// Folded sessions: ids, or unique prefixes of them [default: every folded session]
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub sessions: Vec<String>,
    /// JSON Lines: `{"session":…,"appended":N}` per session
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for SeedsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        // Shared with folds, so that gc does not take the new batches for garbage meanwhile.
        let _lock = store.lock(Mode::Shared, || {
            io.note("waiting for the store lock (held by a gc)…")
        })?;
        let manifests = match self.sessions.is_empty() {
            true => store
                .manifest_files()?
                .iter()
                .filter(|p| p.parent() == Some(store.manifests_dir().as_path()))
                // None: removed since listed (an `rm` at the same moment).
                .filter_map(|p| store.manifest_at(p).transpose())
                .collect::<Result<Vec<_>>>()?,
            false => self
                .sessions
                .iter()
                .map(|id| store.load_named_manifest(id))
                .collect::<Result<Vec<_>>>()?,
        };
        let mut status = Status::Success;
        let facts = FactsCache::default();
        for manifest in &manifests {
            let id = &manifest.session.id;
            // One session that is no agent's ledger must not keep the others unindexed.
            let appended = match index_folded_session(&store, manifest, &facts) {
                Ok(n) => n,
                // Not a ledger: nothing to index, which is no failure unless it was asked for.
                Err(e)
                    if matches!(e.cause(), Cause::BadInput { .. }) && self.sessions.is_empty() =>
                {
                    io.note(format_args!(
                        "skipped {id}: not a {} session ledger",
                        crate::agents::Agent::names_or()
                    ));
                    continue;
                }
                Err(e) => {
                    status = status.worst(e.status());
                    io.warn(format_args!("{id}: {e}"));
                    continue;
                }
            };
            if self.json {
                emit(
                    io.out,
                    serde_json::json!({ "session": id, "appended": appended }),
                )?;
            } else {
                emit(io.out, format!("{id}\t{appended} new records"))?;
            }
        }
        Ok(status)
    }
}
