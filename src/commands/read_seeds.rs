//! `ctxfold-read-seeds`: the union of seed-index files under the contract's rules.

use std::io::BufReader;
use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::error::{Error, Result};
use crate::ledger::{FileSource, Ledger};
use crate::seeds::catalog::Catalog;
use crate::seeds::index::{EachPart, Parts, Standing, StoreIndex, resolve_indexed};
use crate::seeds::union::pi_index_files;

/// Print the union of seed-index files: the records that stand, one JSON line each
///
/// The union follows the seed index contract: for a seq that appears more than once the latest
/// `fold-index` record stands; a `fold-retract` line voids the records of its seq appended before it,
/// and a record appended after it may reuse the seq and stands on its own. Files are read in the order
/// given, as one stream. Fields a record has and this reader does not know are kept; v1 records are
/// read (their spans carry no sha256: recall serves them unverified), v3 records (errors and commands
/// as objects) are understood, and records with a higher `v` are skipped with a note on stderr, as are
/// lines that are not records. Records are printed in the order their lines were appended.
///
/// `--pi-session FILE` reads the Pi extension's own files for that session, where it keeps them:
/// `<dir>/spool/<id>/seed-index.jsonl` (v1), then `<dir>/context-fold/<id>/seed-index.jsonl`, `<dir>`
/// being the folder of the session file and `<id>` the id in its header. `--session ID` reads the
/// store's seed index of that session, after the files: the lines it was given, in the order they
/// were appended (the store keeps them compressed, as objects the catalog `seeds/catalog.jsonl`
/// lists; a store written by an earlier ctxfold may still hold
/// `context-fold/<ID>/seed-index.jsonl`, read first).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-read-seeds", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct ReadSeedsArgs {
    /// Seed-index files (JSON Lines)
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub files: Vec<PathBuf>,
    /// Read the extension's seed index of this Pi session file
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub pi_session: Option<PathBuf>,
    /// Read the store's seed index of this session (its id, or a unique prefix of it)
    #[arg(long, value_name = "ID", add = crate::cli::complete::session_ids())]
    pub session: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for ReadSeedsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let mut files = self.files.clone();
        if let Some(session_file) = &self.pi_session {
            let source = FileSource(session_file.clone());
            let ledger = Ledger::scan(&source)?;
            let id = ledger.session_id.as_deref().unwrap_or_default();
            let found: Vec<_> = pi_index_files(session_file, id)
                .into_iter()
                .filter(|p| p.exists())
                .collect();
            if found.is_empty() {
                return Err(Error::not_found(format!(
                    "{}: no seed index beside it",
                    session_file.display()
                )));
            }
            files.extend(found);
        }
        let store = self
            .session
            .as_ref()
            .map(|_| self.store.open())
            .transpose()?;
        let catalog = store.as_ref().map(Catalog::load).transpose()?;
        let session = (store
            .as_ref()
            .zip(catalog.as_ref())
            .zip(self.session.as_deref()))
        .map(|((store, catalog), spec)| resolve_indexed(store, catalog, spec))
        .transpose()?;
        let given = Given {
            files: &files,
            store: (store.as_ref().zip(catalog.as_ref()).zip(session.as_deref()))
                .map(|((store, catalog), session)| StoreIndex::new(store, catalog, session)),
        };
        // Which records stand, then those records, one at a time: a long session's take gigabytes.
        let Some(standing) = Standing::of(&given)? else {
            return Err(Error::usage(
                "name a seed-index FILE, --pi-session FILE or --session ID",
            ));
        };
        for note in &standing.notes {
            io.note(note);
        }
        standing.each(&given, &mut |record| emit(io.out, record.to_line()))?;
        Ok(Status::Success)
    }
}

/// The seed-index files named, then the store's index of a session.
struct Given<'a> {
    files: &'a [PathBuf],
    store: Option<StoreIndex<'a>>,
}

impl Parts for Given<'_> {
    fn each_part(&self, each: &mut EachPart<'_>) -> Result<bool> {
        for path in self.files {
            let file = match std::fs::metadata(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let missing = format!("{}: no such file", path.display());
                    return Err(Error::not_found(missing));
                }
                _ => crate::input::open_file(path)?,
            };
            if each(&mut BufReader::new(file), &path.display().to_string())?.is_break() {
                return Ok(true);
            }
        }
        if let Some(index) = &self.store
            && !index.each_part(each)?
        {
            return Err(Error::not_found(format!(
                "{}: no seed index in the store",
                index.session()
            )));
        }
        Ok(!self.files.is_empty() || self.store.is_some())
    }
}
