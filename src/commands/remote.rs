//! `ctxfold remote`: the git remotes a store syncs with (the mirror repository's own remotes).

use std::path::{Path, PathBuf};

use age::x25519::Recipient;

use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::mirror::GitArgs;
use crate::error::{Error, Result};
use crate::keys;
use crate::mirror::seal::canonical;
use crate::mirror::seal::remote::{configure, configured, identities, rekey};
use crate::mirror::{Mirror, git};

/// Add, remove or list the git remotes the store syncs with
///
/// The remotes are the mirror repository's own (`<store>/mirror.git`): `ctxfold remote add NAME
/// URL` runs `git remote add NAME URL` there, so any URL git accepts works (a path, ssh, https) and
/// git configuration applies as usual (`git --git-dir <store>/mirror.git config ...`).
///
/// `ctxfold remote` alone prints the remotes' names, one a line, as git's does; `ctxfold remote -v`
/// and `ctxfold remote list` print each name, a tab and its URL (one line a remote: sync fetches
/// from and pushes to that URL, unless git's own remote.<name>.pushurl says otherwise), and for an
/// encrypted remote a tab and `encrypted` (with --json, `"encrypted"` and its `"recipients"`).
///
/// `ctxfold remote add NAME URL --encrypt` makes an encrypted remote, the way a remote on a git
/// host is meant to be used: everything sync pushes there (packs, objects, manifests, seed
/// batches, the seed catalog, dictionaries) is encrypted with age to this machine's identity (see
/// ctxfold-key) and to each --recipient and each recipient of --recipients-file (a second machine,
/// a team member, a paper backup key). What the host sees: opaque blobs, their sizes and times, the
/// recipients' public keys, and file names keyed with a secret only the recipients can read (the
/// same file keeps its name, so pushes stay incremental; no name says anything of a session, a
/// hash, a title or a folder). Without --encrypt a remote is plain, as git's: the host reads every
/// session (a private server of your own), and sync refuses to push sessions that hold credentials
/// there (see ctxfold-sync). `ctxfold clone` recognises an encrypted remote by itself. A remote that
/// holds sessions in clear is not encrypted in place (its history would keep them): to move to an
/// encrypted one, make a new empty repository, `ctxfold remote remove NAME`, `ctxfold remote add
/// NAME NEW-URL --encrypt` and sync, then delete the old repository.
///
/// `ctxfold remote recipients add NAME age1…` re-encrypts what the remote holds to the recipients
/// and the new one, in one commit pushed there; `remove` does likewise without it, under a new
/// secret (so the files get new names). Removal cannot undo what the removed key already pulled, nor
/// what the remote's history keeps: older commits stay encrypted to it, as git and the host keep
/// them. `ctxfold remote recipients list NAME` prints them, one a line.
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
        /// Any URL or path git can fetch from and push to (a relative path is kept as the absolute
        /// one it names from here)
        url: String,
        /// Encrypt everything pushed there, to this machine's identity and the recipients named
        #[arg(long)]
        encrypt: bool,
        /// Another recipient (`age1…`) to encrypt to, as many times as needed
        #[arg(long = "recipient", value_name = "RECIPIENT", requires = "encrypt")]
        recipients: Vec<String>,
        /// A file of recipients, one a line (`#` comments), as age -R reads them
        #[arg(long, value_name = "FILE", requires = "encrypt", value_hint = clap::ValueHint::FilePath)]
        recipients_file: Vec<PathBuf>,
    },
    /// The recipients of an encrypted remote: list them, add or remove one (re-encrypting what the
    /// remote holds)
    Recipients {
        #[command(subcommand)]
        action: Recipients,
    },
    /// Remove a remote (alias: rm, as git's)
    #[command(alias = "rm")]
    Remove {
        /// Its name
        name: String,
    },
    /// List the remotes: name, a tab, URL, and a tab and `encrypted` for an encrypted one (with
    /// --json, JSON Lines {"name","url","encrypted","recipients"})
    List {
        /// JSON Lines
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum Recipients {
    /// Print the recipients this machine encrypts the remote to, one a line
    List {
        /// The remote
        name: String,
    },
    /// Add a recipient: what the remote holds is re-encrypted for it, in one commit pushed there
    Add {
        /// The remote
        name: String,
        /// The recipient (`age1…`)
        recipient: String,
        /// The age identity file that decrypts the remote [default: this machine's]
        #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
        identity: Option<PathBuf>,
    },
    /// Remove a recipient: what the remote holds is re-encrypted without it, under a new secret
    Remove {
        /// The remote
        name: String,
        /// The recipient (`age1…`)
        recipient: String,
        /// The age identity file that decrypts the remote [default: this machine's]
        #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
        identity: Option<PathBuf>,
    },
}

impl Command for RemoteArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let listing = match &self.action {
            Some(Action::List { json: true }) => Listing::Json,
            Some(Action::List { json: false }) => Listing::Urls,
            None if self.talk.verbose => Listing::Urls,
            None => Listing::Names,
            Some(Action::Add {
                name,
                url,
                encrypt,
                recipients,
                recipients_file,
            }) => {
                // Every recipient read before anything is written: a bad one changes nothing.
                let encrypted_to = match encrypt {
                    true => Some(encrypted_to(recipients, recipients_file)?),
                    false => None,
                };
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
                if let Some(recipients) = encrypted_to {
                    configure(mirror.git_dir(), name, &recipients)?;
                }
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
            Some(Action::Recipients { action }) => return self.recipients(io, action),
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

    fn recipients(&self, io: &mut Io<'_>, action: &Recipients) -> Result<Status> {
        let mirror = self.mirror()?;
        let git_dir = mirror.git_dir().to_path_buf();
        let name = match action {
            Recipients::List { name }
            | Recipients::Add { name, .. }
            | Recipients::Remove { name, .. } => name,
        };
        let now = configured(&git_dir, name)?;
        if now.is_empty() {
            return Err(Error::refused(format!(
                "{name:?} is no encrypted remote here (`ctxfold remote add {name} URL --encrypt`)"
            )));
        }
        let (recipient, identity, adding) = match action {
            Recipients::List { .. } => {
                for recipient in now {
                    emit(io.out, recipient)?;
                }
                return Ok(Status::Success);
            }
            Recipients::Add {
                recipient,
                identity,
                ..
            } => (recipient, identity, true),
            Recipients::Remove {
                recipient,
                identity,
                ..
            } => (recipient, identity, false),
        };
        let recipient = keys::parse_recipient(recipient)?;
        let listed = now.contains(&recipient);
        let new: Vec<Recipient> = match (adding, listed) {
            (true, true) => {
                return Err(Error::refused(format!(
                    "{recipient} is a recipient of {name} already"
                )));
            }
            (false, false) => {
                return Err(Error::not_found(format!(
                    "{recipient} is no recipient of {name}"
                )));
            }
            (true, false) => now.into_iter().chain([recipient.clone()]).collect(),
            (false, true) => now.into_iter().filter(|r| r != &recipient).collect(),
        };
        if new.is_empty() {
            return Err(Error::refused(format!(
                "{recipient} is the only recipient of {name}: add another first"
            )));
        }
        let wait = || io.note(crate::mirror::lock::WAITING);
        match rekey(&git_dir, name, new, !adding, identity.as_deref(), wait)? {
            Some(commit) => io.note(format_args!("re-encrypted {name} and pushed {commit}")),
            None => io.note(format_args!(
                "{name} holds nothing yet: recipients changed here"
            )),
        }
        Ok(Status::Success)
    }
}

/// This machine's recipient and the ones named: the recipients of a new encrypted remote.
fn encrypted_to(named: &[String], files: &[PathBuf]) -> Result<Vec<Recipient>> {
    let path = keys::default_path()?;
    if !path.exists() {
        return Err(Error::refused(format!(
            "no age identity at {}: `ctxfold key new` makes one, then add the remote again",
            path.display()
        )));
    }
    let ours = identities(None)?;
    let mut recipients: Vec<Recipient> = ours.iter().map(|i| i.to_public()).collect();
    for text in named {
        recipients.push(keys::parse_recipient(text)?);
    }
    for file in files {
        recipients.extend(keys::read_recipients_file(file)?);
    }
    Ok(canonical(recipients))
}

/// A remote as `list --json` prints it.
#[derive(serde::Serialize)]
struct Listed<'a> {
    name: &'a str,
    url: &'a str,
    encrypted: bool,
    /// Empty for a plain remote.
    recipients: Vec<String>,
}

/// What a listing prints of each remote.
enum Listing {
    Names,
    Urls,
    Json,
}

fn list(io: &mut Io<'_>, git_dir: &Path, listing: Listing) -> Result<()> {
    for remote in git::remotes(git_dir)? {
        let recipients = match listing {
            Listing::Names => Vec::new(),
            _ => configured(git_dir, &remote.name)?,
        };
        match listing {
            Listing::Names => emit(io.out, &remote.name)?,
            Listing::Urls => emit(
                io.out,
                format_args!(
                    "{}\t{}{}",
                    remote.name,
                    remote.url,
                    if recipients.is_empty() {
                        ""
                    } else {
                        "\tencrypted"
                    }
                ),
            )?,
            Listing::Json => {
                let listed = Listed {
                    name: &remote.name,
                    url: &remote.url,
                    encrypted: !recipients.is_empty(),
                    recipients: recipients.iter().map(|r| r.to_string()).collect(),
                };
                emit(
                    io.out,
                    serde_json::to_string(&listed).expect("remotes serialize"),
                )?
            }
        }
    }
    Ok(())
}
