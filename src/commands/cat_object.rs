//! `ctxfold-cat-object`: an object's bytes, size or existence, one at a time or in git's batch formats.

use std::io;

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::digest::Digest;
use crate::error::{Error, IoContext, Result, STDOUT, stdout_failed};
use crate::store::Store;

/// Show an object's raw bytes (-p), size (-s) or existence (-e), or answer a batch of names on stdin
///
/// Every object is decoded and checked against its name before anything about it is printed: the
/// bytes printed are verified bytes. --batch and --batch-check read one object name per line and
/// answer in git's formats: `<sha256> blob <size>` (followed, for --batch, by the bytes and a
/// newline), or `<name> missing` for a name the store does not hold.
#[derive(Debug, clap::Parser)]
#[command(
    name = "ctxfold-cat-object",
    version,
    after_long_help = crate::cli::EXIT_STATUS
)]
#[command(group = clap::ArgGroup::new("mode").required(true).args(["print", "size", "exists", "batch", "batch_check"]))]
pub struct CatObjectArgs {
    /// Print the object's raw bytes
    #[arg(short = 'p', requires = "object")]
    pub print: bool,
    /// Print the object's raw size in bytes
    #[arg(short = 's', requires = "object")]
    pub size: bool,
    /// Print nothing; exit 0 when the object exists and is intact, 1 when it is missing (a damaged
    /// one is an error: exit 4)
    #[arg(short = 'e', requires = "object")]
    pub exists: bool,
    /// For each name on stdin print `<sha256> blob <size>`, the bytes, and a newline
    #[arg(long, conflicts_with = "object")]
    pub batch: bool,
    /// For each name on stdin print `<sha256> blob <size>`
    #[arg(long, conflicts_with = "object")]
    pub batch_check: bool,
    /// The object's sha256
    #[arg(value_name = "OBJECT")]
    pub object: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for CatObjectArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        if self.batch || self.batch_check {
            return batch(&self.store.open()?, self.batch, io);
        }
        let name = self.object.expect("clap requires an object here");
        let digest = Digest::parse(&name).ok_or_else(|| {
            Error::usage(format!(
                "not an object name (64 lowercase hex digits): {name:?}"
            ))
        })?;
        let store = self.store.open()?;
        let size = match store.odb().stored_bytes(&digest)? {
            None if self.exists => return Ok(Status::Negative),
            None => return Err(Error::not_found(format!("object {digest} is missing"))),
            Some(_) => store.odb().read(&digest, None, &mut io::sink())?,
        };
        if self.size {
            emit(io.out, size)?;
        } else if self.print {
            store
                .odb()
                .read(&digest, Some(size), io.out)
                .map_err(|e| e.on_target(STDOUT))?;
        }
        Ok(Status::Success)
    }
}

fn batch(store: &Store, contents: bool, io: &mut Io<'_>) -> Result<Status> {
    let mut line = String::new();
    loop {
        line.clear();
        if io
            .stdin
            .read_line(&mut line)
            .context(|| "read stdin".into())?
            == 0
        {
            return Ok(Status::Success);
        }
        let name = line.trim_end_matches(['\n', '\r']);
        let digest = match Digest::parse(name) {
            Some(d) if store.odb().stored_bytes(&d)?.is_some() => d,
            _ => {
                emit(io.out, format_args!("{name} missing"))?;
                continue;
            }
        };
        let size = store.odb().read(&digest, None, &mut io::sink())?;
        emit(io.out, format_args!("{digest} blob {size}"))?;
        if contents {
            store
                .odb()
                .read(&digest, Some(size), io.out)
                .map_err(|e| e.on_target(STDOUT))?;
            io.out.write_all(b"\n").map_err(stdout_failed)?;
        }
        // A script reading answers one by one must see each answer before asking the next.
        io.out.flush().map_err(stdout_failed)?;
    }
}
