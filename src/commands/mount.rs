//! `ctxfold mount` and `ctxfold unmount`: the store's sessions as a read-only filesystem.

use std::path::PathBuf;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::cli::human::{count, path};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs};
use crate::error::{Error, Result};
use crate::mount;

mod background;

/// How long a stopped mount waits for the files still open through it to be closed.
const OPEN_FILES_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Show the folded sessions as files: in a read-only folder, or at their places under the agents
///
/// `ctxfold mount DIR` mounts a read-only filesystem (FUSE) at DIR, an existing folder.
/// DIR/by-id/<id>.jsonl is every folded session, DIR/by-id/<id>@<N>.jsonl its generation N (N = 1
/// the newest, as `restore ID@N`); DIR/codex/, DIR/pi/ and DIR/claude/ lay the sessions out as each
/// agent's home does (sessions/YYYY/MM/DD/rollout-….jsonl and archived_sessions/ under Codex's,
/// sessions/--<cwd>--/<time>_<id>.jsonl under Pi's, projects/<project>/<id>.jsonl under Claude
/// Code's), each at the place `ctxfold restore` computes for it. A session restore will not place
/// without --to is under by-id/ only. What is shown is the store as it was when the mount started.
/// Writes are refused (EROFS).
///
/// `ctxfold mount --agents` mounts over each agent's own session folder on this machine
/// (~/.codex, which holds Codex's sessions/ and archived_sessions/, since archiving is a rename
/// between the two; ~/.pi/agent/sessions; ~/.claude/projects; each moved by the agent's own
/// variable, as fold finds them). The real files there are passed through untouched (by the
/// kernel itself where it offers FUSE passthrough), new files are real files, and every folded
/// session whose file is missing is shown at the place restore would write it to, so that an
/// unmodified agent lists, opens and resumes it. The first open of such a session for writing
/// (an agent resuming it appends), a truncate, a rename or a change of its mode or times first
/// restores it into the real folder, verified and atomic as `ctxfold restore` does; from then on
/// it is an ordinary file, which the next `fold --apply` folds as growth. Removing a session shown
/// only from the store hides it from this mount, and deletes nothing (`ctxfold rm` deletes);
/// removing a real file that is folded (`fold --remove-source` through the mount) leaves the
/// folded session in its place. Folds and removals made while it runs are seen within a second.
/// A session shown from the store has the sticky bit, meaningless on a file (`ls -l` shows
/// -rw------T); fold, ls and status read through the mount as through the folder below: they skip
/// those. When no mount runs, the folders are exactly as they were.
///
/// A mount serves in the foreground until Ctrl-C, SIGTERM, or `ctxfold unmount` (or `umount`);
/// it unmounts on the way out. --background returns once the mount answers and says the pid of the
/// daemon that serves it (its messages go to the log file named). A mount left by a daemon that
/// was killed is cleared by the next mount of the same folder, or by `ctxfold unmount`.
///
/// Every read from the store decodes only the objects that hold the range asked for, each checked
/// before a byte is served (a packed object by its block's checksum, a loose one by its sha256),
/// and a file read from start to end is checked whole against its sha256. A session read whole is
/// kept decoded, as it was served, in an unnamed file (beside the store; under --agents in the
/// agent's folder, where it becomes the real file if the session is written to), up to --copies
/// of them for each folder mounted, the least recently opened let go first, nothing left behind
/// when the mount stops; where the kernel offers FUSE passthrough, the next opens of the session
/// are passed through to that copy and read by the kernel at the disk's own speed (a file the
/// daemon serves is read from the kernel's cache at well under half of it). A damaged object gives
/// an I/O error (EIO) for the reads that need it, never wrong bytes, and a line on stderr naming
/// the session and the damage. Nothing through a mount changes the store. Sizes are the sessions'
/// own; a file's mtime is the one fold saw, else its manifest's.
///
/// Needs /dev/fuse, and the right to mount (root, or a fuse3 install's fusermount3 for other
/// users); passthrough needs root and Linux 6.9 or later, and without it the daemon reads and
/// writes the real files itself.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-mount", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct MountArgs {
    /// The folder to mount the sessions at (it must exist)
    #[arg(
        value_name = "DIR",
        value_hint = clap::ValueHint::DirPath,
        required_unless_present = "agents",
        conflicts_with = "agents"
    )]
    pub dir: Option<PathBuf>,
    /// Mount over each agent's own session folder: its real files, plus the folded sessions whose
    /// files are missing
    #[arg(long)]
    pub agents: bool,
    /// Serve the real files under --agents through ctxfold itself, not the kernel's passthrough
    #[arg(long, requires = "agents")]
    pub no_passthrough: bool,
    /// Keep decoded copies of the sessions read whole, up to SIZE of them for each folder mounted
    /// (0: none), and pass later reads of them through to the copies, at the disk's own speed
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = crate::cli::human::parse_size)]
    pub copies: u64,
    /// Return once mounted, leaving a daemon serving the mount
    #[arg(long)]
    pub background: bool,
    /// Where a --background daemon writes what it says [default:
    /// $XDG_STATE_HOME/ctxfold/mount.log, else ~/.local/state/ctxfold/mount.log]
    #[arg(long, value_name = "FILE", requires = "background", value_hint = clap::ValueHint::FilePath)]
    pub log: Option<PathBuf>,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for MountArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        if self.background {
            return background::start(io, &store, &self);
        }
        let mounting = match &self.dir {
            Some(dir) => {
                let mounting = mount::mount(&store, dir, self.copies)?;
                io.note(format_args!(
                    "mounted {} at {} (Ctrl-C or 'ctxfold unmount {}' to stop)",
                    count(mounting.sessions as u64, "session"),
                    path(dir),
                    path(dir)
                ));
                mounting
            }
            None => {
                let homes = crate::agents::Homes::from_env()?;
                let (mounting, agents) =
                    mount::mount_agents(&store, &homes, !self.no_passthrough, self.copies)?;
                for agent in agents {
                    match agent {
                        mount::AgentMount::Mounted { agent, dir } => io.note(format_args!(
                            "mounted {}'s sessions at {}",
                            agent.format().name(),
                            path(&dir)
                        )),
                        mount::AgentMount::NoHome { agent, home } => io.note(format_args!(
                            "{} has no home here ({} is missing): not mounted",
                            agent.format().name(),
                            path(&home)
                        )),
                    }
                }
                if mounting.dirs().is_empty() {
                    return Err(Error::not_found(format!(
                        "no agent's home is on this machine ({} looked for)",
                        crate::agents::Agent::names_or()
                    )));
                }
                io.note(format_args!(
                    "mounted {} over the agents' folders (Ctrl-C or 'ctxfold unmount' to stop)",
                    count(mounting.sessions as u64, "folded session")
                ));
                mounting
            }
        };
        for problem in &mounting.problems {
            io.warn(format_args!("left out: {problem}"));
        }
        let mut signals =
            Signals::new([SIGINT, SIGTERM]).map_err(|e| Error::system("watch for Ctrl-C", e))?;
        let signals_handle = signals.handle();
        let dirs = mounting.dirs();
        let shown = dirs.iter().map(|d| path(d)).collect::<Vec<_>>().join(", ");
        let said = format!("{}: unmounted {shown}", io.program());
        mounting.serve(|unmount| {
            std::thread::spawn(move || {
                if signals.forever().next().is_some() {
                    unmount();
                    // The mount is gone from the folder; files still open through it would keep
                    // the daemon serving them: a stop asked for is a stop.
                    std::thread::sleep(OPEN_FILES_GRACE);
                    eprintln!("{said} (files open through it were cut off)");
                    std::process::exit(0);
                }
            });
        })?;
        signals_handle.close();
        io.note(format_args!("unmounted {shown}"));
        Ok(Status::Success)
    }
}

/// Say where `store` is mounted, if it is (ls, status and fsck do).
pub fn note_mounts(io: &mut Io<'_>, store: &crate::store::Store) {
    for mounted in mount::mounts_of(store) {
        io.note(format_args!(
            "mounted at {} ('ctxfold unmount {}' stops it)",
            path(&mounted.dir),
            path(&mounted.dir)
        ));
    }
}

/// Unmount a `ctxfold mount`, or clear one whose daemon was killed
///
/// Without DIR, unmounts every mount of the store (`mount DIR` and `mount --agents` alike). The
/// unmount is lazy (as `umount -l`): the folder is free at once.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-unmount", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct UnmountArgs {
    /// Where the sessions are mounted [default: every mount of the store]
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for UnmountArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let dirs = match self.dir {
            Some(dir) => vec![dir],
            None => {
                let store = self.store.open()?;
                let mounted: Vec<PathBuf> = mount::mounts_of(&store)
                    .into_iter()
                    .map(|m| m.dir)
                    .collect();
                if mounted.is_empty() {
                    return Err(Error::refused(format!(
                        "the store {} is not mounted",
                        path(store.root())
                    )));
                }
                mounted
            }
        };
        for dir in dirs {
            mount::unmount(&dir)?;
            io.note(format_args!("unmounted {}", path(&dir)));
        }
        Ok(Status::Success)
    }
}
