//! `ctxfold help`: the commands, and a command's manual page.

use std::io::Write;

use clap_complete::{ArgValueCandidates, CompletionCandidate};

use super::{dispatcher, dispatcher_with_commands, docs, find, registry};
use crate::cli::exec_path::{ExecPath, search_path};
use crate::cli::{Command, EXIT_STATUS, Io, Level, Status};
use crate::error::{Error, Result, stdout_failed};

/// Show a command's manual page, or list the commands
///
/// Without COMMAND, lists the commands for people; with -a, the plumbing too and the
/// `ctxfold-<name>` programs found on the exec path and $PATH. With COMMAND, shows its manual page
/// with man when stdout is a terminal, else prints the same text as its --help. `ctxfold -h` and
/// `ctxfold --help COMMAND` do the same.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-help", version, after_long_help = EXIT_STATUS)]
pub struct HelpArgs {
    /// List the plumbing and the programs on the exec path too
    #[arg(short, long)]
    pub all: bool,
    /// The command whose manual to show
    #[arg(value_name = "COMMAND", add = ArgValueCandidates::new(command_names))]
    pub command: Option<String>,
}

impl Command for HelpArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let Some(name) = self.command else {
            write_command_list(io.out, self.all).map_err(stdout_failed)?;
            return Ok(Status::Success);
        };
        let name = name.strip_prefix("ctxfold-").unwrap_or(&name);
        let page = match find(name) {
            Some(spec) => spec.page(),
            None if name == "ctxfold" => dispatcher_with_commands(),
            None => return Err(unknown_command(name)),
        };
        if io.out_is_terminal() && show_man_page(&page)? {
            return Ok(Status::Success);
        }
        write!(io.out, "{}", page.clone().render_long_help()).map_err(stdout_failed)?;
        Ok(Status::Success)
    }
}

/// The usage line and the commands for people (`all`: every command, and what the exec path adds).
pub fn write_command_list(out: &mut dyn Write, all: bool) -> std::io::Result<()> {
    let registry = registry();
    writeln!(out, "{}\n", dispatcher().render_usage())?;
    writeln!(out, "Commands for people:")?;
    for spec in registry.iter().filter(|s| s.level == Level::Porcelain) {
        writeln!(out, "   {:<16}{}", spec.name, spec.summary())?;
    }
    if !all {
        writeln!(
            out,
            "\n'ctxfold help -a' lists the plumbing too; 'ctxfold help <command>' shows its manual."
        )?;
        return Ok(());
    }
    writeln!(out, "\nPlumbing, for scripts (ctxfold-<name>):")?;
    for spec in registry.iter().filter(|s| s.level == Level::Plumbing) {
        writeln!(out, "   {:<16}{}", spec.name, spec.summary())?;
    }
    let extensions: Vec<String> = ExecPath::from_env()
        .commands()
        .into_iter()
        .filter(|name| !registry.iter().any(|s| &s.name == name))
        .collect();
    if !extensions.is_empty() {
        writeln!(out, "\nFound on the exec path and $PATH:")?;
        for name in extensions {
            writeln!(out, "   {name}")?;
        }
    }
    Ok(())
}

/// `name` is no command: say so, with the closest names there are.
pub fn unknown_command(name: &str) -> Error {
    let mut close: Vec<(f64, String)> = every_command_name()
        .into_iter()
        .map(|known| (strsim::jaro_winkler(name, &known), known))
        .filter(|(score, known)| *score > 0.8 || known.starts_with(name))
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    close.dedup_by(|a, b| a.1 == b.1);
    let mut message = format!("'{name}' is not a ctxfold command; see 'ctxfold help -a'");
    if !close.is_empty() {
        let names: Vec<&str> = close.iter().take(3).map(|(_, k)| k.as_str()).collect();
        message.push_str(&format!(" (did you mean {}?)", names.join(", ")));
    }
    Error::usage(message)
}

/// Every name `ctxfold <name>` runs: the registry's, their aliases, the exec path's programs.
fn every_command_name() -> Vec<String> {
    let mut names: Vec<String> = registry().iter().flat_map(|s| s.names()).collect();
    names.extend(ExecPath::from_env().commands());
    names.sort();
    names.dedup();
    names
}

/// `help <TAB>`: every command, with its summary where the registry has one.
fn command_names() -> Vec<CompletionCandidate> {
    let summaries: Vec<(String, String)> = registry()
        .iter()
        .map(|s| (s.name.clone(), s.summary()))
        .collect();
    every_command_name()
        .into_iter()
        .map(|name| {
            let summary = summaries.iter().find(|(n, _)| *n == name);
            CompletionCandidate::new(&name).help(summary.map(|(_, s)| s.clone().into()))
        })
        .collect()
}

/// Show the page with `man` when it is installed; false when it is not.
fn show_man_page(cmd: &clap::Command) -> Result<bool> {
    let Some(man) = search_path("man") else {
        return Ok(false);
    };
    let page = docs::render_man(cmd.clone());
    let mut file = tempfile::Builder::new()
        .suffix(".1")
        .tempfile()
        .map_err(|e| Error::system("create a temp file", e))?;
    file.write_all(&page)
        .map_err(|e| Error::system("write a temp file", e))?;
    let status = std::process::Command::new(man)
        .arg("-l")
        .arg(file.path())
        .status()
        .map_err(|e| Error::system("run man", e))?;
    Ok(status.success())
}
