//! `ctxfold mount` and `ctxfold unmount`: the store's sessions as a read-only filesystem.

use std::path::PathBuf;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::cli::human::{count, path};
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs};
use crate::error::{Error, Result};
use crate::mount;

/// How long a stopped mount waits for the files still open through it to be closed.
const OPEN_FILES_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Show the folded sessions as files in a read-only folder, until Ctrl-C or `ctxfold unmount`
///
/// Mounts a read-only filesystem (FUSE) at DIR, an existing folder, and serves it in the
/// foreground until Ctrl-C, SIGTERM, or `ctxfold unmount DIR` (or `umount DIR`); it unmounts on
/// the way out. A mount left by a daemon that was killed is cleared by the next mount of the same
/// folder, or by `ctxfold unmount`.
///
/// DIR/by-id/<id>.jsonl is every folded session, DIR/by-id/<id>@<N>.jsonl its generation N (N = 1
/// the newest, as `restore ID@N`); DIR/codex/, DIR/pi/ and DIR/claude/ lay the sessions out as each
/// agent's home does (sessions/YYYY/MM/DD/rollout-….jsonl and archived_sessions/ under Codex's,
/// sessions/--<cwd>--/<time>_<id>.jsonl under Pi's, projects/<project>/<id>.jsonl under Claude
/// Code's), each at the place `ctxfold restore` computes for it, as an agent's picker would look
/// for them (an agent itself writes to its home: this mount is read-only). A session restore will
/// not place without --to
/// is under by-id/ only. Sizes are the sessions' own; a file's mtime is the one fold saw, else its
/// manifest's.
///
/// What is shown is the store as it was when the mount started (mount again to see later folds).
/// A read decodes only the objects that hold the range asked for, each checked before a byte is
/// served (a packed object by its block's checksum, a loose one by its sha256), and a file read
/// from start to end is checked whole against its sha256; a damaged object gives an I/O error
/// (EIO) for the reads that need it, never wrong bytes, and a line on stderr naming the session
/// and the damage. Nothing through the mount changes the store: writes are refused (EROFS).
///
/// Needs /dev/fuse, and the right to mount (root, or a fuse3 install's fusermount3 for other
/// users).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-mount", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct MountArgs {
    /// The folder to mount the sessions at (it must exist)
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: PathBuf,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for MountArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = self.store.open()?;
        let mounting = mount::mount(&store, &self.dir)?;
        for problem in &mounting.problems {
            io.warn(format_args!("left out: {problem}"));
        }
        io.note(format_args!(
            "mounted {} at {} (Ctrl-C or 'ctxfold unmount {}' to stop)",
            count(mounting.sessions as u64, "session"),
            path(&self.dir),
            path(&self.dir)
        ));
        let mut signals =
            Signals::new([SIGINT, SIGTERM]).map_err(|e| Error::system("watch for Ctrl-C", e))?;
        let signals_handle = signals.handle();
        let said = format!("{}: unmounted {}", io.program(), path(&self.dir));
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
        io.note(format_args!("unmounted {}", path(&self.dir)));
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
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-unmount", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct UnmountArgs {
    /// Where the sessions are mounted
    #[arg(value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    pub dir: PathBuf,
    #[command(flatten)]
    pub talk: TalkArgs,
}

impl Command for UnmountArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        mount::unmount(&self.dir)?;
        io.note(format_args!("unmounted {}", path(&self.dir)));
        Ok(Status::Success)
    }
}
