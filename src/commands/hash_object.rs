//! `ctxfold-hash-object`: the sha256 of files or stdin, as the store names objects; `-w` stores them.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::commands::LevelArgs;
use crate::digest::{Digest, hash_reader};
use crate::error::{Error, IoContext, Result};
use crate::store::Store;
use crate::store::lock::Mode;

/// Compute the object name (sha256 of the raw bytes) of files or stdin, and optionally store them
///
/// Prints one lowercase hex sha256 per input, in order. The name is what `sha256sum` prints: objects
/// are named by the sha256 of their uncompressed bytes. With -w each input is also written to the
/// store as one object (zstd, streamed: memory does not grow with the input).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-hash-object", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct HashObjectArgs {
    /// Write the objects into the store, not only name them
    #[arg(short = 'w')]
    pub write: bool,
    /// Read the object from stdin
    #[arg(long, conflicts_with = "stdin_paths")]
    pub stdin: bool,
    /// Read file paths from stdin, one per line, instead of from the command line
    #[arg(long)]
    pub stdin_paths: bool,
    /// Files to hash
    #[arg(value_name = "FILE", value_hint = clap::ValueHint::FilePath, conflicts_with = "stdin_paths")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub level: LevelArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for HashObjectArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        if !self.stdin && !self.stdin_paths && self.files.is_empty() {
            return Err(Error::usage(
                "nothing to hash: name files, or use --stdin or --stdin-paths",
            ));
        }
        let store = if self.write {
            Some(self.store.init()?)
        } else {
            None
        };
        let _lock = match &store {
            Some(store) => Some(store.lock(Mode::Shared, || ())?),
            None => None,
        };
        let hasher = Hasher {
            store: store.as_ref(),
            level: self.level.level,
        };
        if self.stdin {
            let digest = hasher.hash(&mut io.stdin, Path::new("<stdin>"))?;
            emit(io.out, digest)?;
        }
        if self.stdin_paths {
            let mut line = Vec::new();
            loop {
                line.clear();
                if io
                    .stdin
                    .read_until(b'\n', &mut line)
                    .context(|| "read stdin".into())?
                    == 0
                {
                    break;
                }
                let path = path_from_line(&line);
                let digest = hasher.hash_file(&path)?;
                emit(io.out, digest)?;
            }
        }
        for path in &self.files {
            let digest = hasher.hash_file(path)?;
            emit(io.out, digest)?;
        }
        if let Some(store) = &store {
            store.odb().sync()?;
        }
        Ok(Status::Success)
    }
}

struct Hasher<'a> {
    store: Option<&'a Store>,
    level: i32,
}

impl Hasher<'_> {
    fn hash_file(&self, path: &Path) -> Result<Digest> {
        let mut file = crate::input::open_file(path)?;
        self.hash(&mut file, path)
    }

    fn hash(&self, input: &mut dyn Read, path: &Path) -> Result<Digest> {
        match self.store {
            Some(store) => Ok(store
                .odb()
                .put_streaming(input, &path.display().to_string(), self.level)?
                .0),
            None => Ok(hash_reader(input).with_path("read", path)?.0),
        }
    }
}

/// A path from one line of stdin: the line ending removed, the bytes kept as they are.
fn path_from_line(line: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    PathBuf::from(std::ffi::OsStr::from_bytes(line))
}
