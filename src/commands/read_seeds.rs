//! `ctxfold-read-seeds`: the union of seed-index files under the contract's rules.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::error::{Error, Result};
use crate::ledger::{FileSource, Ledger};
use crate::seeds::catalog::Catalog;
use crate::seeds::index::{Standing, read_union};
use crate::seeds::union::{Union, pi_index_files};

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
    /// Read the store's seed index of this session
    #[arg(long, value_name = "ID")]
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
            let found: Vec<_> = pi_index_files(session_file, &ledger.session_id)
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
        if files.is_empty() && self.session.is_none() {
            return Err(Error::usage(
                "name a seed-index FILE, --pi-session FILE or --session ID",
            ));
        }
        if let (true, Some(id)) = (files.is_empty(), &self.session) {
            return self.store_only(io, id);
        }
        let mut union: Union = Union::default();
        for file in &files {
            if !union.read_file(file)? {
                return Err(Error::not_found(format!(
                    "{}: no such file",
                    file.display()
                )));
            }
        }
        if let Some(id) = &self.session {
            let store = self.store.open()?;
            if !read_union(&store, &Catalog::load(&store)?, id, &mut union)? {
                return Err(no_index(id));
            }
        }
        for note in &union.notes {
            io.note(note);
        }
        for record in union.records() {
            emit(io.out, record.to_line())?;
        }
        Ok(Status::Success)
    }
}

impl ReadSeedsArgs {
    /// The store's index of `session` alone: its records streamed, not held (a long session's
    /// take gigabytes).
    fn store_only(&self, io: &mut Io<'_>, session: &str) -> Result<Status> {
        let store = self.store.open()?;
        let catalog = Catalog::load(&store)?;
        let Some(standing) = Standing::of(&store, &catalog, session)? else {
            return Err(no_index(session));
        };
        for note in &standing.notes {
            io.note(note);
        }
        standing.each(&store, &catalog, session, &mut |record| {
            emit(io.out, record.to_line())
        })?;
        Ok(Status::Success)
    }
}

fn no_index(session: &str) -> Error {
    Error::not_found(format!("{session}: no seed index in the store"))
}
