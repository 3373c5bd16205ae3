//! Man pages and shell completions, generated from the clap definitions in the registry.
//!
//! The files are checked in under `man/` and `completions/`; `tests/generated_docs.rs` regenerates
//! them in memory and fails on any drift.

use std::io::Write;

use clap_complete::Shell;
use clap_mangen::Man;

use super::{EXIT_STATUS, Level, Spec};
use crate::commands;

/// The `ctxfold` dispatcher's own definition, with every command as a subcommand (for its man page
/// and its completions; dispatching itself does not parse through this).
pub fn dispatcher_command() -> clap::Command {
    let mut cmd = clap::Command::new("ctxfold")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Keep, shrink, search and sync the history of AI coding-agent sessions")
        .long_about(
            "ctxfold keeps Codex and Pi session transcripts in a deduplicating, content-addressed, \
             zstd-compressed store from which every file comes back byte for byte.\n\n\
             `ctxfold <command>` runs a porcelain command built into the dispatcher, or else executes \
             `ctxfold-<command>` from the exec path: --exec-path=DIR or $CTXFOLD_EXEC_PATH, then \
             <dir of ctxfold>/../libexec/ctxfold, then the directory of ctxfold itself, then $PATH, \
             so `ctxfold-foo` anywhere on $PATH is `ctxfold foo`.",
        )
        .after_long_help(EXIT_STATUS)
        .disable_help_subcommand(true)
        .subcommand_required(true)
        .arg(
            clap::Arg::new("exec-path")
                .long("exec-path")
                .value_name("DIR")
                .num_args(0..=1)
                .require_equals(true)
                .value_hint(clap::ValueHint::DirPath)
                .help("Without a value, print where plumbing is found; with one, look there first"),
        )
        .subcommand(
            clap::Command::new("help")
                .about("Show the manual page of a command (or its long help where man is missing)")
                .arg(clap::Arg::new("all").short('a').long("all").action(clap::ArgAction::SetTrue).help("List every command"))
                .arg(clap::Arg::new("command").value_name("COMMAND")),
        );
    for spec in commands::registry() {
        cmd = cmd.subcommand(subcommand(&spec));
    }
    cmd
}

/// A registry entry as a subcommand of `ctxfold` (`ctxfold-split` → `split`).
pub fn subcommand(spec: &Spec) -> clap::Command {
    (spec.command)().name(spec.name.clone()).bin_name(format!("ctxfold {}", spec.name))
}

/// Every man page: `(file name, roff)`.
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let mut pages = vec![("ctxfold.1".to_string(), render_man(dispatcher_command()))];
    for spec in commands::registry() {
        pages.push((format!("ctxfold-{}.1", spec.name), render_man((spec.command)())));
    }
    pages
}

pub fn render_man(cmd: clap::Command) -> Vec<u8> {
    let mut cmd = cmd;
    cmd.build();
    let man = Man::new(cmd.clone()).date("").source(format!("ctxfold {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    man.render_title(&mut out).expect("render to memory");
    man.render_name_section(&mut out).expect("render to memory");
    man.render_synopsis_section(&mut out).expect("render to memory");
    man.render_description_section(&mut out).expect("render to memory");
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).expect("render to memory");
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out).expect("render to memory");
    }
    let exit = cmd.get_after_long_help().map(|h| h.to_string()).unwrap_or_else(|| EXIT_STATUS.to_string());
    writeln!(out, ".SH \"EXIT STATUS\"").expect("render to memory");
    for paragraph in exit.split("\n\n") {
        writeln!(out, ".PP\n{}", roff_text(paragraph)).expect("render to memory");
    }
    out
}

/// Plain text made safe for roff: backslashes escaped, no line starting with a control character.
fn roff_text(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.replace('\\', "\\e");
            if line.starts_with(['.', '\'']) { format!("\\&{line}") } else { line }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every completion script: `(file name, script)` for bash, zsh and fish, for `ctxfold` and for
/// each plumbing binary (which people also call directly).
pub fn completions() -> Vec<(String, Vec<u8>)> {
    let mut commands = vec![dispatcher_command()];
    commands.extend(commands::registry().iter().filter(|s| s.level == Level::Plumbing).map(|s| (s.command)()));
    let mut files = Vec::new();
    for cmd in commands {
        let name = cmd.get_name().to_string();
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd.clone(), &name, &mut script);
            let file = match shell {
                Shell::Bash => format!("{name}.bash"),
                Shell::Zsh => format!("_{name}"),
                _ => format!("{name}.fish"),
            };
            files.push((file, script));
        }
    }
    files
}
