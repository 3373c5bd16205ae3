//! What every command shares: the writers it is handed, the registry of commands, the store option,
//! and the one function that turns a command's result into output on stderr and an exit code.

pub mod docs;

use std::ffi::OsString;
use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgMatches, Parser};

use crate::error::{Error, Result};
use crate::store::Store;

/// The streams a command talks through. Commands never touch the process's own.
pub struct Io<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
    pub stdin: &'a mut dyn BufRead,
    /// Progress bars and notes only where a person watches.
    pub err_is_terminal: bool,
}

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Success,
    /// A negative answer already explained on stderr, or none needed (`cat-object -e`): exit 1.
    Negative,
}

/// A command: its clap definition (a `Parser` named `ctxfold-<name>`) and what it does.
pub trait Command: Parser {
    fn run(self, io: &mut Io<'_>) -> Result<Status>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A `ctxfold-<name>` binary in libexec, with a stable interface for scripts.
    Plumbing,
    /// Built into the `ctxfold` dispatcher, for people.
    Porcelain,
}

/// One entry of the registry that drives the dispatcher, `help -a`, man pages and completions.
pub struct Spec {
    pub name: String,
    pub level: Level,
    pub command: fn() -> clap::Command,
    pub run: fn(&ArgMatches, &mut Io<'_>) -> Result<Status>,
}

impl Spec {
    pub fn of<C: Command>(level: Level) -> Self {
        let full = C::command().get_name().to_string();
        let name = full.strip_prefix("ctxfold-").expect("commands are named ctxfold-<name>").to_string();
        Self { name, level, command: C::command, run: run_matches::<C> }
    }

    pub fn summary(&self) -> String {
        (self.command)().get_about().map(|a| a.to_string()).unwrap_or_default()
    }
}

fn run_matches<C: Command>(matches: &ArgMatches, io: &mut Io<'_>) -> Result<Status> {
    let args = C::from_arg_matches(matches).map_err(|e| Error::usage(e.to_string()))?;
    args.run(io)
}

/// `--store DIR`, shared by every command that reads or writes a store.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub store: Option<PathBuf>,
}

impl StoreArgs {
    pub fn path(&self) -> Result<PathBuf> {
        if let Some(dir) = &self.store {
            return Ok(dir.clone());
        }
        let env = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        if let Some(dir) = env("CTXFOLD_STORE") {
            return Ok(dir);
        }
        if let Some(data) = env("XDG_DATA_HOME") {
            return Ok(data.join("ctxfold"));
        }
        match env("HOME") {
            Some(home) => Ok(home.join(".local/share/ctxfold")),
            None => Err(Error::usage("no store: pass --store or set CTXFOLD_STORE or HOME")),
        }
    }

    /// The store for reading: it must exist.
    pub fn open(&self) -> Result<Store> {
        Store::open(self.path()?)
    }

    /// The store for writing: created (private) when missing.
    pub fn init(&self) -> Result<Store> {
        Store::init(self.path()?)
    }
}

/// The exit-status table every man page carries.
pub const EXIT_STATUS: &str = "0 on success; 1 on a negative answer (not found, a mismatch, corruption, bad input data, \
a refusal) or an error from the system; 2 on bad usage. A closed stdout (a broken pipe) ends the command quietly with 0.";

/// `main` of a plumbing binary: parse, run against the process's streams, report, exit.
pub fn main<C: Command>() -> ExitCode {
    run_process(std::env::args_os().collect(), C::command(), run_matches::<C>)
}

/// Parse `args` with `command`, run, and turn the outcome into stderr text and an exit code.
pub fn run_process(
    args: Vec<OsString>,
    command: clap::Command,
    run: fn(&ArgMatches, &mut Io<'_>) -> Result<Status>,
) -> ExitCode {
    let program = command.get_bin_name().unwrap_or(command.get_name()).to_string();
    let matches = match command.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code() as u8);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut err = io::stderr();
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let err_is_terminal = err.is_terminal();
    let result = run(&matches, &mut Io { out: &mut out, err: &mut err, stdin: &mut stdin, err_is_terminal });
    // Flush what was written even after a failure; only a successful run reports a failed flush.
    let flushed = out.flush().map_err(crate::error::write_failed);
    exit_for(&program, result.and_then(|status| flushed.map(|()| status)))
}

/// The one place an error becomes a message and an exit code.
pub fn exit_for(program: &str, result: Result<Status>) -> ExitCode {
    match result {
        Ok(Status::Success) => ExitCode::SUCCESS,
        Ok(Status::Negative) => ExitCode::from(1),
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            let _ = writeln!(io::stderr(), "{program}: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Write a line of data to `out`, mapping failures (a full disk) to errors.
pub fn emit(out: &mut dyn Write, line: impl std::fmt::Display) -> Result<()> {
    writeln!(out, "{line}").map_err(crate::error::write_failed)
}
