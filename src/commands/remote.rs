//! `ctxfold remote`: the git remotes a store syncs with (the mirror repository's own remotes).

use std::path::Path;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::mirror::GitArgs;
use crate::error::{Error, Result};
use crate::mirror::{Mirror, git};

/// Add, remove or list the git remotes the store syncs with
///
/// The remotes are the mirror repository's own (`<store>/mirror.git`): `ctxfold remote add NAME
/// URL` runs `git remote add NAME URL` there, so any URL git accepts works (a path, ssh, https) and
/// git configuration applies as usual (`git --git-dir <store>/mirror.git config ...`).
///
/// `ctxfold remote` alone prints the remotes' names, one a line, as git's does; `ctxfold remote -v`
/// and `ctxfold remote list` print each name, a tab and its URL (one line a remote: sync fetches
/// from and pushes to that URL, unless git's own remote.<name>.pushurl says otherwise).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-remote", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub git: GitArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
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
    },
    /// Remove a remote (alias: rm, as git's)
    #[command(alias = "rm")]
    Remove {
        /// Its name
        name: String,
    },
    /// List the remotes: name, a tab, URL (with --json, JSON Lines {"name","url"})
    List {
        /// JSON Lines
        #[arg(long)]
        json: bool,
    },
}

impl Command for RemoteArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let listing = match &self.action {
            Some(Action::List { json: true }) => Listing::Json,
            Some(Action::List { json: false }) => Listing::Urls,
            None if self.talk.verbose => Listing::Urls,
            None => Listing::Names,
            Some(Action::Add { name, url }) => {
                let mirror = self.mirror()?;
                // Refused as git refuses it, before git's own failure says "system failure".
                if let Some(taken) = git::remotes(mirror.git_dir())?
                    .iter()
                    .find(|r| &r.name == name)
                {
                    return Err(Error::refused(format!(
                        "remote {name:?} exists already ({}): `ctxfold remote remove {name}` first",
                        taken.url
                    )));
                }
                git::remote_add(mirror.git_dir(), name, url)?;
                return Ok(Status::Success);
            }
            Some(Action::Remove { name }) => {
                let mirror = self.mirror()?;
                if !git::remotes(mirror.git_dir())?
                    .iter()
                    .any(|r| &r.name == name)
                {
                    return Err(Error::not_found(format!("no remote {name:?}")));
                }
                git::remote_remove(mirror.git_dir(), name)?;
                return Ok(Status::Success);
            }
        };
        // A listing changes nothing: no store or mirror repository is created to say there is
        // no remote.
        let dir = self.git.dir(&self.store.open()?);
        if dir.exists() {
            list(io, Mirror::open(&dir)?.git_dir(), listing)?;
        }
        Ok(Status::Success)
    }
}

impl RemoteArgs {
    /// The mirror repository whose remotes change, created (with the store) when missing.
    fn mirror(&self) -> Result<Mirror> {
        Mirror::open_or_init(&self.git.dir(&self.store.init()?))
    }
}

/// What a listing prints of each remote.
enum Listing {
    Names,
    Urls,
    Json,
}

fn list(io: &mut Io<'_>, git_dir: &Path, listing: Listing) -> Result<()> {
    for remote in git::remotes(git_dir)? {
        match listing {
            Listing::Names => emit(io.out, &remote.name)?,
            Listing::Urls => emit(io.out, format_args!("{}\t{}", remote.name, remote.url))?,
            Listing::Json => emit(
                io.out,
                serde_json::to_string(&remote).expect("remotes serialize"),
            )?,
        }
    }
    Ok(())
}
