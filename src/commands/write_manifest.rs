//! `ctxfold-write-manifest`: parts on stdin plus session fields become a committed manifest.

use std::io::BufRead;
use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::commands::SettingsArgs;
use crate::digest::hash_reader;
use crate::error::{Error, IoContext, Result};
use crate::sources::absolute_utf8;
use crate::store::commit::Replace;
use crate::store::lock::Mode;
use crate::store::manifest::{KIND, Manifest, Part, Session, Source, VERSION};
use crate::store::{Store, check_session_id};

/// Commit a manifest from parts on stdin (as ctxfold-split prints them) and the session's fields
///
/// The manifest is committed only after every object it names exists in the store and a
/// reconstruction from the store matches the sha256 and size of --source; until then nothing is
/// written. An existing manifest for the session is replaced only with --overwrite. Prints the
/// committed manifest's path.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-write-manifest", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct WriteManifestArgs {
    /// The session id, which names the manifest file (a plain file name)
    #[arg(long, value_name = "ID")]
    pub session_id: String,
    /// The file the parts were cut from; its sha256 and size (decompressed, for a `.zst`) are what the parts must rebuild, and its mtime is recorded for restore to give back
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub source: PathBuf,
    /// The session's title
    #[arg(long)]
    pub title: Option<String>,
    /// The session's working directory
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<String>,
    /// Where restore puts the session back [default: the absolute path of --source, without the
    /// `.zst` of a compressed one: restore writes the plain JSONL, which Codex prefers]
    #[arg(long, value_name = "PATH")]
    pub rollout_path: Option<String>,
    /// Mark the session archived
    #[arg(long)]
    pub archived: bool,
    /// Replace an existing manifest for this session
    #[arg(long)]
    pub overwrite: bool,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for WriteManifestArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        check_session_id(&self.session_id)?;
        let mut settings = self.settings.settings()?;
        let rollout_path = match self.rollout_path {
            Some(path) => path,
            None => {
                let path = absolute_utf8(&self.source)?;
                match path.strip_suffix(".zst") {
                    Some(plain) if crate::input::is_zstd(&self.source) => plain.to_string(),
                    _ => path,
                }
            }
        };
        let store = self.store.init()?;
        let _lock = store.lock(Mode::Shared, || ())?;
        let parts = read_parts(&mut *io.stdin, &store)?;
        // The dictionary ctxfold-split --write compressed new objects with.
        settings.dictionary = store.odb().current_dictionary()?;
        let before = modified(&self.source);
        let (sha256, bytes) =
            hash_reader(crate::input::open(&self.source)?).with_path("read", &self.source)?;
        // Recorded as fold records it (restore gives it back), when the read left it as it was.
        let mtime = before
            .filter(|&before| modified(&self.source) == Some(before))
            .map(crate::time::nanos);
        let manifest = Manifest {
            version: VERSION,
            kind: KIND.into(),
            session: Session {
                id: self.session_id,
                title: self.title,
                cwd: self.cwd,
                rollout_path,
                archived: self.archived,
                mtime,
            },
            source: Source { bytes, sha256 },
            settings,
            parts,
        };
        let replace = match self.overwrite {
            true => Replace::Any,
            false => Replace::Nothing,
        };
        store.commit_manifest(&manifest, replace)?;
        emit(io.out, store.manifest_path(&manifest.session.id).display())?;
        Ok(Status::Success)
    }
}

/// When `path` was last written, if that can be told (opening it says why not).
fn modified(path: &std::path::Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Parts as JSON Lines, each checked, with `stored_bytes` taken from the store.
fn read_parts(input: &mut dyn BufRead, store: &Store) -> Result<Vec<Part>> {
    let mut parts = Vec::new();
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        number += 1;
        if input
            .read_line(&mut line)
            .context(|| "read parts from stdin".into())?
            == 0
        {
            return Ok(parts);
        }
        if line.trim().is_empty() {
            continue;
        }
        let mut part: Part = serde_json::from_str(&line).map_err(|e| {
            Error::bad_input(
                format_args!("stdin line {number}"),
                format!("not a part: {e}"),
            )
        })?;
        part.object.stored_bytes =
            store
                .odb()
                .stored_bytes(&part.object.sha256)?
                .ok_or_else(|| {
                    Error::bad_input(
                        format_args!("stdin line {number}"),
                        format!(
                            "object {} is not in the store; nothing committed",
                            part.object.sha256
                        ),
                    )
                })?;
        parts.push(part);
    }
}
