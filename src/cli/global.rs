//! The options `ctxfold` takes before the command, as git takes `-C` and `--git-dir` there:
//! `--store DIR`, `-q`, `-v`, `--no-pager`, `--color WHEN`. Their definitions on the dispatcher,
//! and how each reaches the command: the store as `$CTXFOLD_STORE` (as `--git-dir` becomes
//! `$GIT_DIR`), so that every program the command runs finds it too; the others as the command's
//! own options, given to a command that takes them and ignored by one that does not (as git's
//! `--no-pager` is by a command that never pages).
//!
//! Not for: `--exec-path` and `--help`, which the dispatcher answers itself.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches};

/// The variable the store option becomes, which `StoreArgs` reads after its own `--store`.
pub const STORE_VAR: &str = "CTXFOLD_STORE";

/// The flags passed on as they are: the dispatcher's id, the command's id, as spelled.
const FLAGS: [(&str, &str, &str); 3] = [
    ("quiet", "quiet", "--quiet"),
    ("verbose", "verbose", "--verbose"),
    ("no-pager", "no_pager", "--no-pager"),
];

/// `cmd` with the options taken before the command.
pub fn define(cmd: clap::Command) -> clap::Command {
    let flag = |id: &'static str, help: &'static str| {
        Arg::new(id).long(id).action(ArgAction::SetTrue).help(help)
    };
    cmd.arg(
        Arg::new("store")
            .long("store")
            .value_name("DIR")
            .value_parser(clap::value_parser!(PathBuf))
            .value_hint(clap::ValueHint::DirPath)
            .help("The store, for the command and every program it runs (as $CTXFOLD_STORE)"),
    )
    .arg(
        flag(
            "quiet",
            "-q for the command: only warnings and errors on stderr",
        )
        .short('q')
        .conflicts_with("verbose"),
    )
    .arg(flag("verbose", "-v for the command: say more on stderr").short('v'))
    .arg(flag("no-pager", "--no-pager for a command that pages"))
    .arg(
        Arg::new("color")
            .long("color")
            .value_name("WHEN")
            .value_parser(["auto", "always", "never"])
            .help("--color WHEN for a command that colours its output"),
    )
}

/// Hand the options given before the command to it: the store to the environment, the others
/// into `words` (the command's name, then its arguments) where `takes` says the command has them.
pub fn pass_on(matches: &ArgMatches, takes: &dyn Fn(&str) -> bool, words: &mut Vec<OsString>) {
    if let Some(store) = matches.get_one::<PathBuf>("store") {
        // SAFETY: the dispatcher is still single-threaded (see `dispatch`'s `--exec-path=`).
        unsafe { std::env::set_var(STORE_VAR, store) };
    }
    let mut given: Vec<OsString> = FLAGS
        .iter()
        .filter(|(id, command_id, _)| matches.get_flag(id) && takes(command_id))
        .map(|(_, _, spelled)| OsString::from(spelled))
        .collect();
    if let Some(when) = matches
        .get_one::<String>("color")
        .filter(|_| takes("color"))
    {
        given.push(format!("--color={when}").into());
    }
    words.splice(1..1, given);
}
