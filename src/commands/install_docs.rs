//! `ctxfold install-docs`: the man pages and completion scripts written where man and the shells
//! look for them.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::docs::{self, Shell};
use crate::cli::{Command, EXIT_STATUS, Io, Status, TalkArgs, data_home, env_path};
use crate::error::{Error, IoContext, Result};
use crate::files::atomic::Pending;

/// Install the manual pages and shell completions where man and the shells find them
///
/// Writes every manual page into DATA/man/man1, and the completion scripts of ctxfold and of each
/// plumbing binary into DATA/bash-completion/completions, DATA/zsh/site-functions and
/// DATA/fish/vendor_completions.d, one file per program, which bash-completion, zsh's compinit and
/// fish load when that program is first completed. DATA is PREFIX/share with --prefix (/usr/local,
/// or a package's staging root), else the per-user $XDG_DATA_HOME, ~/.local/share by default (and
/// bash's scripts go to $BASH_COMPLETION_USER_DIR/completions when that is set, as bash-completion
/// then looks nowhere else for a user's scripts).
///
/// man finds DATA/man when DATA/../bin is on $PATH (~/.local/bin, /usr/local/bin) or DATA/man is on
/// $MANPATH; zsh finds DATA/zsh/site-functions when it is on $fpath, as /usr/local/share/zsh/
/// site-functions is by default (for the per-user one, add `fpath=(~/.local/share/zsh/site-functions
/// $fpath)` before compinit in ~/.zshrc). A note says so when it looks needed. Files are replaced
/// atomically and are readable by all (0644), and the folders it creates too (0755), whatever the
/// umask; run it again after upgrading ctxfold.
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-install-docs", version, after_long_help = EXIT_STATUS)]
pub struct InstallDocsArgs {
    /// Install under PREFIX/share instead of the per-user directories
    #[arg(long, value_name = "PREFIX", value_hint = clap::ValueHint::DirPath)]
    pub prefix: Option<PathBuf>,
    #[command(flatten)]
    pub talk: TalkArgs,
}

impl Command for InstallDocsArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let data = match &self.prefix {
            Some(prefix) => prefix.join("share"),
            None => data_home().ok_or_else(|| {
                Error::usage("no per-user data directory: pass --prefix or set HOME")
            })?,
        };
        let man = data.join("man/man1");
        install(io, "man pages", &man, docs::man_pages())?;
        for shell in Shell::ALL {
            let dir = match shell {
                Shell::Bash => match env_path("BASH_COMPLETION_USER_DIR") {
                    Some(dir) if self.prefix.is_none() => dir.join("completions"),
                    _ => data.join("bash-completion/completions"),
                },
                Shell::Zsh => data.join("zsh/site-functions"),
                Shell::Fish => data.join("fish/vendor_completions.d"),
            };
            let what = format!("{} completions", shell.name());
            install(io, &what, &dir, docs::completions(shell))?;
            if shell == Shell::Zsh && self.prefix.is_none() && login_shell_is("zsh") {
                io.note(format_args!(
                    "zsh loads these once {} is on $fpath: add `fpath=({0} $fpath)` before compinit in ~/.zshrc",
                    dir.display()
                ));
            }
        }
        if !man_looks_in(&data) {
            io.note(format_args!(
                "man looks in {0}/man when {1} is on $PATH or {0}/man on $MANPATH: add `export PATH={1}:$PATH` (or `export MANPATH={0}/man:`) to your shell's start-up file",
                data.display(),
                data.with_file_name("bin").display()
            ));
        }
        Ok(Status::Success)
    }
}

/// Write `files` into `dir`, each atomically and readable by all.
fn install(io: &mut Io<'_>, what: &str, dir: &Path, files: Vec<(String, Vec<u8>)>) -> Result<()> {
    create_shared_dir(dir)?;
    for (name, bytes) in &files {
        let target = dir.join(name);
        let mut pending = Pending::new_in(dir, ".ctxfold-")?;
        pending
            .file()
            .set_permissions(fs::Permissions::from_mode(0o644))
            .with_path("chmod", pending.path())?;
        std::io::Write::write_all(&mut pending, bytes).with_path("write", pending.path())?;
        pending.commit(&target, true)?;
        io.detail(target.display());
    }
    io.note(format_args!(
        "installed {} {what} in {}",
        files.len(),
        dir.display()
    ));
    Ok(())
}

/// Create `dir` and its missing parents readable by all (0755), whatever the umask, which every
/// command narrows to 0077 for the store's sake: the store is private, documentation is for every
/// user. Folders that exist are left as they are.
fn create_shared_dir(dir: &Path) -> Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.exists()).collect();
    for dir in missing.into_iter().rev() {
        match fs::create_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            created => created.with_path("create", dir)?,
        }
        fs::set_permissions(dir, fs::Permissions::from_mode(0o755)).with_path("chmod", dir)?;
    }
    Ok(())
}

fn login_shell_is(name: &str) -> bool {
    env_path("SHELL").is_some_and(|shell| shell.file_name().is_some_and(|n| n == name))
}

/// Whether man will search `data`/man: man-db and the BSDs' man search each `$PATH` entry's
/// `../share/man`, and `$MANPATH` adds directories of its own.
fn man_looks_in(data: &Path) -> bool {
    let on = |var: &str, dir: &Path| {
        std::env::var_os(var).is_some_and(|v| std::env::split_paths(&v).any(|d| d == dir))
    };
    on("MANPATH", &data.join("man")) || on("PATH", &data.with_file_name("bin"))
}
