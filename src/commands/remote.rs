//! `ctxfold remote`: the git remotes a store syncs with (the mirror repository's own remotes).

use crate::cli::{Command, Io, Status, StoreArgs, emit};
use crate::commands::mirror::GitArgs;
use crate::error::{Error, Result};
use crate::mirror::{Mirror, git};

/// Add, remove or list the git remotes the store syncs with
///
/// The remotes are the mirror repository's own (`<store>/mirror.git`): `ctxfold remote add NAME
/// URL` runs `git remote add NAME URL` there, so any URL git accepts works (a path, ssh, https) and
/// git configuration applies as usual (`git --git-dir <store>/mirror.git config ...`).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-remote", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub action: Action,
}

/// Which store and mirror repository; taken after the action (`remote add NAME URL --store DIR`).
#[derive(Debug, clap::Args)]
pub struct Where {
    #[command(flatten)]
    pub git: GitArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Add a remote
    Add {
        /// Its name, as in `ctxfold sync NAME`
        name: String,
        /// Any URL or path git can fetch from and push to
        url: String,
        #[command(flatten)]
        at: Where,
    },
    /// Remove a remote
    Remove {
        /// Its name
        name: String,
        #[command(flatten)]
        at: Where,
    },
    /// List the remotes: name, a tab, URL (with --json, JSON Lines {"name","url"})
    List {
        /// JSON Lines
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        at: Where,
    },
}

impl Command for RemoteArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let (Action::Add { at, .. } | Action::Remove { at, .. } | Action::List { at, .. }) =
            &self.action;
        let store = at.store.init()?;
        let mirror = Mirror::open_or_init(&at.git.dir(&store))?;
        let dir = mirror.git_dir();
        match &self.action {
            Action::Add { name, url, .. } => git::remote_add(dir, name, url)?,
            Action::Remove { name, .. } => {
                if !git::remotes(dir)?.iter().any(|r| &r.name == name) {
                    return Err(Error::not_found(format!("no remote {name:?}")));
                }
                git::remote_remove(dir, name)?
            }
            Action::List { json, .. } => {
                for remote in git::remotes(dir)? {
                    if *json {
                        emit(
                            io.out,
                            serde_json::to_string(&remote).expect("remotes serialize"),
                        )?;
                    } else {
                        emit(io.out, format_args!("{}\t{}", remote.name, remote.url))?;
                    }
                }
            }
        }
        Ok(Status::Success)
    }
}
