//! `ctxfold key`: this machine's age identity, which encrypted remotes are encrypted to.

use std::path::PathBuf;

use crate::cli::{Command, Io, Status, TalkArgs, emit};
use crate::error::Result;
use crate::keys;

/// Make or show this machine's age identity, for encrypted remotes
///
/// An encrypted remote (`ctxfold remote add NAME URL --encrypt`) is encrypted with age (X25519)
/// to this machine's identity and to the other recipients it names. `ctxfold key new` makes the
/// identity, at $XDG_CONFIG_HOME/ctxfold/identity.txt (~/.config/ctxfold/identity.txt without
/// XDG_CONFIG_HOME; --identity names another file), private (0600), never inside a store or its
/// mirror, and prints its recipient (`age1…`, a public key: give it to whoever adds this machine to
/// a remote, `ctxfold remote recipients add NAME age1…`). An identity already there is kept:
/// `--force` replaces it, and what only it could decrypt is lost then. `ctxfold key show` prints the
/// recipient again.
///
/// The file is a standard age identity file, as age-keygen writes it: `age -d -i FILE` and
/// `rage -d -i FILE` read it. Back it up: without it (or another recipient's identity) an encrypted
/// remote cannot be read by anyone.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-key", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct KeyArgs {
    #[command(subcommand)]
    pub action: Action,
    /// The identity file [default: $XDG_CONFIG_HOME/ctxfold/identity.txt]
    #[arg(long, global = true, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    pub identity: Option<PathBuf>,
    #[command(flatten)]
    pub talk: TalkArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Make this machine's identity and print its recipient
    New {
        /// Replace an identity that is there already (what only it decrypts is lost)
        #[arg(long)]
        force: bool,
    },
    /// Print this machine's recipient (the public key, `age1…`)
    Show,
}

impl Command for KeyArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let path = match self.identity {
            Some(path) => path,
            None => keys::default_path()?,
        };
        match self.action {
            Action::New { force } => {
                let recipient = keys::create(&path, force)?;
                io.note(format_args!("wrote {}", path.display()));
                emit(io.out, recipient)?;
            }
            Action::Show => {
                for identity in keys::load(&path)? {
                    emit(io.out, identity.to_public())?;
                }
            }
        }
        Ok(Status::Success)
    }
}
