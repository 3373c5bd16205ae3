//! `ctxfold completions SHELL`: the completion scripts, on stdout.

use super::docs::{Shell, completions};
use crate::cli::{Command, EXIT_STATUS, Io, Status};
use crate::error::{Result, stdout_failed};

/// Print the shell completion script for ctxfold and its plumbing
///
/// For a shell's start-up file: `source <(ctxfold completions bash)` in ~/.bashrc,
/// `source <(ctxfold completions zsh)` in ~/.zshrc (after compinit), `ctxfold completions fish |
/// source` in ~/.config/fish/config.fish. `ctxfold install-docs` instead puts one file per
/// program where bash-completion, zsh and fish load it on demand.
///
/// The scripts ask the program itself for the candidates as you type (clap_complete's dynamic
/// completion: `COMPLETE=<shell> ctxfold -- <words>`), so they never go stale as commands change:
/// `restore <TAB>` offers the ids of the sessions in the store ($CTXFOLD_STORE or the default
/// one; a --store on the same line is not seen), `help <TAB>` the command names.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-completions", version, after_long_help = EXIT_STATUS)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

impl Command for CompletionsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        for (_, script) in completions(self.shell) {
            io.out.write_all(&script).map_err(stdout_failed)?;
        }
        Ok(Status::Success)
    }
}
