//! `ctxfold ls`: the folded sessions.

use std::collections::HashSet;

use serde::Serialize;

use crate::cli::human::bytes;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::error::Result;
use crate::store::Store;

/// List the folded sessions: id, title, archived, source bytes, stored bytes
///
/// One line per manifest in manifests/, then the conflicts sync kept in manifests/conflicts/
/// (a remote manifest that disagreed with the local one), marked as such. Stored bytes are the
/// compressed size of the session's distinct objects, however many other sessions share them.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-ls", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct LsArgs {
    /// One JSON object per session (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Serialize)]
struct Entry<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    archived: bool,
    source_bytes: u64,
    stored_bytes: u64,
    conflict: bool,
    rollout_path: &'a str,
}

impl Command for LsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let conflicts = store.manifests_dir().join("conflicts");
        let mut bad = 0;
        for path in store.manifest_files()? {
            let conflict = path.parent() == Some(conflicts.as_path());
            if !conflict && path.parent() != Some(store.manifests_dir().as_path()) {
                continue; // generations/ belong to the reference implementation's filesystem layer
            }
            let manifest = match Store::load_manifest_file(&path) {
                Ok(manifest) => manifest,
                Err(e) => {
                    bad += 1;
                    io.warn(e);
                    continue;
                }
            };
            let mut seen = HashSet::new();
            let stored_bytes = manifest
                .parts
                .iter()
                .filter(|p| seen.insert(p.object.sha256))
                .map(|p| p.object.stored_bytes)
                .sum();
            let entry = Entry {
                id: &manifest.session.id,
                title: manifest.session.title.as_deref(),
                archived: manifest.session.archived,
                source_bytes: manifest.source.bytes,
                stored_bytes,
                conflict,
                rollout_path: &manifest.session.rollout_path,
            };
            if self.json {
                emit(
                    io.out,
                    serde_json::to_string(&entry).expect("entries serialize"),
                )?;
            } else {
                let state = if conflict {
                    "conflict"
                } else if entry.archived {
                    "archived"
                } else {
                    "active"
                };
                emit(
                    io.out,
                    format_args!(
                        "{:<36}  {state:<8}  {:>10}  {:>10}  {}",
                        entry.id,
                        bytes(entry.source_bytes),
                        bytes(entry.stored_bytes),
                        entry.title.unwrap_or("")
                    ),
                )?;
            }
        }
        Ok(if bad == 0 {
            Status::Success
        } else {
            Status::Corrupt
        })
    }
}
