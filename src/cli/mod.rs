//! What every command shares: the writers it is handed, the registry of commands, the store option,
//! and the one function that turns a command's result into output on stderr and an exit code.

pub mod complete;
pub mod exec_path;
pub mod global;
pub mod human;
pub mod pager;
pub mod style;

use std::ffi::OsString;
use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgMatches, Parser};

pub use crate::error::{EXIT_STATUS, Status};
use crate::error::{Error, Result};
use crate::store::Store;

/// How much a command says on stderr: `-q/--quiet` and `-v/--verbose` on porcelain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// The streams a command talks through: data on [`Io::out`], talk through [`Io::note`],
/// [`Io::warn`], [`Io::detail`] and [`Io::progress`], which know the program's name, the
/// verbosity and whether a person watches. Commands never touch the process's own streams.
pub struct Io<'a> {
    pub out: &'a mut dyn Write,
    pub stdin: &'a mut dyn BufRead,
    err: &'a mut dyn Write,
    program: String,
    verbosity: Verbosity,
    err_is_terminal: bool,
    out_is_terminal: bool,
}

impl<'a> Io<'a> {
    pub fn new(
        out: &'a mut dyn Write,
        err: &'a mut dyn Write,
        stdin: &'a mut dyn BufRead,
        program: impl Into<String>,
        err_is_terminal: bool,
    ) -> Self {
        Self {
            out,
            stdin,
            err,
            program: program.into(),
            verbosity: Verbosity::Normal,
            err_is_terminal,
            out_is_terminal: false,
        }
    }

    pub fn with_verbosity(mut self, verbosity: Verbosity) -> Self {
        self.verbosity = verbosity;
        self
    }

    /// Say that stdout is a terminal (a person reads it, so a manual page may open in `man`).
    pub fn with_out_terminal(mut self, out_is_terminal: bool) -> Self {
        self.out_is_terminal = out_is_terminal;
        self
    }

    /// This `Io` with its data going to `out` instead (a pager's stdin), which a person reads if
    /// `out_is_terminal`; talk still goes where it went.
    pub fn redirect<'b>(&'b mut self, out: &'b mut dyn Write, out_is_terminal: bool) -> Io<'b> {
        Io {
            out,
            stdin: &mut *self.stdin,
            err: &mut *self.err,
            program: self.program.clone(),
            verbosity: self.verbosity,
            err_is_terminal: self.err_is_terminal,
            out_is_terminal,
        }
    }

    pub fn verbosity(&self) -> Verbosity {
        self.verbosity
    }

    /// The name talk is prefixed with (`ctxfold fold`).
    pub fn program(&self) -> &str {
        &self.program
    }

    pub fn out_is_terminal(&self) -> bool {
        self.out_is_terminal
    }

    /// A line of data on stdout.
    pub fn line(&mut self, line: impl std::fmt::Display) -> Result<()> {
        emit(self.out, line)
    }

    /// `<program>: <text>` on stderr, unless `--quiet`. Talk never fails a command: a stderr that
    /// cannot be written has nobody to tell.
    pub fn note(&mut self, text: impl std::fmt::Display) {
        if self.verbosity >= Verbosity::Normal {
            self.say("", text);
        }
    }

    /// `<program>: warning: <text>` on stderr, even under `--quiet`.
    pub fn warn(&mut self, text: impl std::fmt::Display) {
        self.say("warning: ", text);
    }

    /// `<program>: error: <text>` on stderr: one item of a run that goes on failed (a session of
    /// several restored). The run's exit status says so; an error that ends the run is returned.
    pub fn error(&mut self, text: impl std::fmt::Display) {
        self.say("error: ", text);
    }

    /// `<program>: <text>` on stderr, only under `--verbose`.
    pub fn detail(&mut self, text: impl std::fmt::Display) {
        if self.verbosity >= Verbosity::Verbose {
            self.say("", text);
        }
    }

    fn say(&mut self, tag: &str, text: impl std::fmt::Display) {
        let _ = writeln!(self.err, "{}: {tag}{text}", self.program);
    }

    /// A progress bar on stderr where a person watches; hidden in pipes and under `--quiet`.
    /// `template` is indicatif's, e.g. `{bar:30} {pos}/{len} sessions {elapsed}`.
    pub fn progress(&self, length: u64, template: &str) -> indicatif::ProgressBar {
        if !self.err_is_terminal || self.verbosity == Verbosity::Quiet {
            return indicatif::ProgressBar::hidden();
        }
        let bar = indicatif::ProgressBar::new(length);
        if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        bar
    }
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
        let name = full
            .strip_prefix("ctxfold-")
            .expect("commands are named ctxfold-<name>")
            .to_string();
        Self {
            name,
            level,
            command: C::command,
            run: run_matches::<C>,
        }
    }

    pub fn summary(&self) -> String {
        (self.command)()
            .get_about()
            .map(|a| a.to_string())
            .unwrap_or_default()
    }

    /// Its name and its aliases (`restore`, `materialize`).
    pub fn names(&self) -> Vec<String> {
        let mut names = vec![self.name.clone()];
        names.extend((self.command)().get_all_aliases().map(str::to_string));
        names
    }

    /// How people run it: `ctxfold fold` for porcelain, `ctxfold-split` for plumbing.
    pub fn invocation(&self) -> String {
        match self.level {
            Level::Porcelain => format!("ctxfold {}", self.name),
            Level::Plumbing => format!("ctxfold-{}", self.name),
        }
    }

    /// The command as its manual page and `ctxfold help` show it: named `ctxfold-<name>`, its
    /// usage spelled as it is run (`ctxfold fold`, never a `ctxfold-fold` that does not exist).
    pub fn page(&self) -> clap::Command {
        (self.command)().bin_name(self.invocation())
    }

    /// The command as a subcommand of `ctxfold` (`ctxfold-split` → `split`).
    pub fn subcommand(&self) -> clap::Command {
        (self.command)().name(&self.name)
    }
}

fn run_matches<C: Command>(matches: &ArgMatches, io: &mut Io<'_>) -> Result<Status> {
    let args = C::from_arg_matches(matches).map_err(|e| Error::usage(e.to_string()))?;
    args.run(io)
}

/// `-q/--quiet` and `-v/--verbose`, shared by the porcelain commands (read by [`run_process`]).
/// Global, so a command with actions takes them after its action too (`remote add -q …`).
#[derive(Debug, Clone, clap::Args)]
pub struct TalkArgs {
    /// Say nothing on stderr but warnings and errors
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more on stderr: the items behind each summary line
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// `--dry-run`, for a command that is a dry run unless `--apply`: people bring the flag from git,
/// rsync and restic, and it only says what the command does anyway. No field reads it; clap
/// refuses it together with `--apply`. Added with `#[command(arg = crate::cli::dry_run())]`.
pub fn dry_run() -> clap::Arg {
    clap::Arg::new("dry-run")
        .long("dry-run")
        .action(clap::ArgAction::SetTrue)
        .conflicts_with("apply")
        .help("Change nothing, only report (the default without --apply)")
}

/// `--store DIR`, shared by every command that reads or writes a store. Global, so a command with
/// actions takes it after its action too (`remote add NAME URL --store DIR`).
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The store [default: $CTXFOLD_STORE, else $XDG_DATA_HOME/ctxfold, else ~/.local/share/ctxfold]
    #[arg(long, global = true, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub store: Option<PathBuf>,
}

impl StoreArgs {
    pub fn path(&self) -> Result<PathBuf> {
        if let Some(dir) = &self.store {
            return Ok(dir.clone());
        }
        if let Some(dir) = env_path(global::STORE_VAR) {
            return Ok(dir);
        }
        match data_home() {
            Some(data) => Ok(data.join("ctxfold")),
            None => Err(Error::usage(
                "no store: pass --store or set CTXFOLD_STORE or HOME",
            )),
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

/// The user's data directory: `$XDG_DATA_HOME`, else `~/.local/share`.
pub fn data_home() -> Option<PathBuf> {
    env_path("XDG_DATA_HOME").or_else(|| env_path("HOME").map(|home| home.join(".local/share")))
}

/// A path from the environment; unset and empty are the same.
pub fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `main` of a plumbing binary: answer shell completion, or parse, run against the process's
/// streams, report, exit.
pub fn main<C: Command>() -> ExitCode {
    complete::answer(C::command);
    run_process(
        std::env::args_os().collect(),
        C::command(),
        run_matches::<C>,
    )
}

/// Parse `args` with `command`, run, and turn the outcome into stderr text and an exit code.
///
/// `args[0]` names the program as the user ran it, which prefixes every message and clap's usage
/// lines: `ctxfold-split` run directly, `ctxfold split` when the dispatcher runs it.
/// Allocate from one glibc malloc arena per core, not glibc's eight: every thread that allocates
/// gets an arena of its own up to that limit (a fold's workers, its pack writers' compressors, an
/// extraction's walk), and what is freed stays in its arena. The first fold of a 3.4 GB generated
/// corpus peaked at 233-275 MiB with eight per core, 207-223 MiB with one (2 cores), no slower.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt sets a tunable of the allocator (under its own lock); it takes no
        // pointer.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
    }
}

pub fn run_process(
    args: Vec<OsString>,
    command: clap::Command,
    run: fn(&ArgMatches, &mut Io<'_>) -> Result<Status>,
) -> ExitCode {
    let program = args
        .first()
        .and_then(|arg0| Path::new(arg0).file_name())
        .map_or_else(
            || command.get_name().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
    let command = command.bin_name(&program).display_name(&program);
    let matches = match command.try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => return clap_exit(&program, e),
    };
    // Transcripts hold secrets: nothing this process creates (gix and git included, whose files
    // follow the umask) is for anyone but its owner, whatever the user's umask.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    limit_malloc_arenas();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut err = io::stderr();
    let stdin = io::stdin();
    let mut stdin = stdin.lock();
    let err_is_terminal = err.is_terminal();
    let verbosity = verbosity(&matches);
    let mut io = Io::new(&mut out, &mut err, &mut stdin, &program, err_is_terminal)
        .with_verbosity(verbosity)
        .with_out_terminal(stdout.is_terminal());
    let result = run(&matches, &mut io);
    drop(io);
    // Flush what was written even after a failure; only a successful run reports a failed flush.
    let flushed = out.flush().map_err(crate::error::stdout_failed);
    exit_for(&program, result.and_then(|status| flushed.map(|()| status)))
}

/// The verbosity a command's `-q/--quiet` and `-v/--verbose` flags ask for (commands without them
/// talk normally).
fn verbosity(matches: &ArgMatches) -> Verbosity {
    let flag = |id| matches!(matches.try_get_one::<bool>(id), Ok(Some(true)));
    if flag("quiet") {
        Verbosity::Quiet
    } else if flag("verbose") {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    }
}

/// clap's own errors in the tool's style: `<program>: error: …` (then clap's usage lines), exit 2;
/// `--help` and `--version` on stdout, exit 0.
pub fn clap_exit(program: &str, e: clap::Error) -> ExitCode {
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let _ = write!(io::stderr(), "{program}: error: {text}");
    ExitCode::from(Status::Usage.code())
}

/// The one place an outcome becomes a message and an exit code.
pub fn exit_for(program: &str, result: Result<Status>) -> ExitCode {
    match result {
        Ok(status) => ExitCode::from(status.code()),
        Err(e) => {
            let status = e.status();
            if status != Status::Success {
                let _ = writeln!(io::stderr(), "{program}: error: {e}");
            }
            ExitCode::from(status.code())
        }
    }
}

/// Write a line of data to `out` (stdout), mapping failures (a full disk) to errors.
pub fn emit(out: &mut dyn Write, line: impl std::fmt::Display) -> Result<()> {
    writeln!(out, "{line}").map_err(crate::error::stdout_failed)
}

/// One line of a report: `human` for people, or under `--json` its `record` (a JSON Lines object
/// tagged `{"type": …}`).
pub fn emit_either(
    out: &mut dyn Write,
    json: bool,
    human: impl std::fmt::Display,
    record: serde_json::Value,
) -> Result<()> {
    match json {
        true => emit(out, record),
        false => emit(out, human),
    }
}
