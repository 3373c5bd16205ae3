//! The `ctxfold` dispatcher, as git's: its own options parsed with its clap definition
//! ([`commands::dispatcher`]; those it passes on to the command: [`cli::global`]), then a porcelain command run in-process, or else `ctxfold-<name>`
//! executed from the exec path ([`ExecPath`]) with the child's exit status passed through.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::exec_path::{self, ExecPath};
use crate::cli::{self, Level, Status};
use crate::commands::{self, help};
use crate::error::{Error, Result, stdout_failed};

const PROGRAM: &str = "ctxfold";

/// Run the dispatcher with the process's arguments.
pub fn main() -> ExitCode {
    cli::complete::answer(commands::dispatcher_with_commands);
    match dispatch(std::env::args_os().collect()) {
        Ok(code) => code,
        Err(e) => cli::exit_for(PROGRAM, Err(e)),
    }
}

fn dispatch(args: Vec<OsString>) -> Result<ExitCode> {
    let matches = match commands::dispatcher().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return Ok(cli::clap_exit(PROGRAM, e)),
    };
    // `--exec-path=DIR` sets the exec path, `--exec-path` prints it: `--exec-path=DIR --exec-path`
    // prints DIR, as git's does.
    let mut print_exec_path = false;
    for mut occurrence in matches
        .get_occurrences::<PathBuf>("exec-path")
        .into_iter()
        .flatten()
    {
        match occurrence.next() {
            // SAFETY: the dispatcher is still single-threaded. As git's `--exec-path=` does, the
            // option becomes the variable, which the commands run here and every program run
            // from here read.
            Some(dir) => unsafe { std::env::set_var(exec_path::VAR, dir) },
            None => print_exec_path = true,
        }
    }
    if print_exec_path {
        let dir = ExecPath::from_env().plumbing_dir();
        writeln!(std::io::stdout(), "{}", dir.display()).map_err(stdout_failed)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut words: Vec<OsString> = match matches.subcommand() {
        Some((name, rest)) => std::iter::once(OsString::from(name))
            .chain(rest.get_many::<OsString>("").into_iter().flatten().cloned())
            .collect(),
        None => Vec::new(),
    };
    // `ctxfold -h` is `ctxfold help`, and `ctxfold --help fold` is `ctxfold help fold`, as git's.
    if matches.get_flag("help") {
        words.insert(0, "help".into());
    }
    if words.is_empty() {
        let _ = help::write_command_list(&mut std::io::stderr(), false);
        return Ok(ExitCode::from(Status::Usage.code()));
    }
    let name = words[0].to_string_lossy().into_owned();
    let spec = commands::find(&name);
    let takes = |id: &str| {
        (spec.as_ref()).is_some_and(|s| (s.command)().get_arguments().any(|a| a.get_id() == id))
    };
    cli::global::pass_on(&matches, &takes, &mut words);
    // Every command is told the name it was run by (argv[0]), which its messages and usage spell.
    words[0] = format!("{PROGRAM} {name}").into();
    if let Some(spec) = spec.as_ref().filter(|s| s.level == Level::Porcelain) {
        return Ok(cli::run_process(words, (spec.command)(), spec.run));
    }
    let exec_path = ExecPath::from_env();
    let Some(program) = exec_path.find(&format!("ctxfold-{name}")) else {
        return Err(help::unknown_command(&name));
    };
    let mut child = std::process::Command::new(&program);
    // Our plumbing reads argv[0] for its name; a program of someone else's is run as git runs one.
    if spec.is_some() {
        child.arg0(&words[0]);
    }
    let error = child
        .args(&words[1..])
        .env(exec_path::VAR, exec_path.plumbing_dir())
        .exec();
    Err(Error::io("run", &program, error))
}
