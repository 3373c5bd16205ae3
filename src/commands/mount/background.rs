//! `ctxfold mount --background`: the same mount served by a daemon of its own, started in a new
//! process group (Ctrl-C in the terminal does not reach it), its messages appended to a log file;
//! this process returns once the daemon says the mount answers, or fails with what it said.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::MountArgs;
use crate::cli::human::path;
use crate::cli::{Io, Status};
use crate::error::{Error, IoContext, Result};
use crate::store::Store;

/// How long a daemon may take to mount (reading every manifest of a large store first).
const READY_WITHIN: Duration = Duration::from_secs(120);

/// What every mount says once it answers.
const READY: &str = "to stop)";

pub fn start(io: &mut Io<'_>, store: &Store, args: &MountArgs) -> Result<Status> {
    let log = match &args.log {
        Some(log) => log.clone(),
        None => default_log()?,
    };
    if let Some(parent) = log.parent().filter(|p| !p.as_os_str().is_empty()) {
        crate::files::create_private_dir(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(&log)
        .with_path("open", &log)?;
    let from = file.seek(SeekFrom::End(0)).with_path("read", &log)?;
    let exe = std::env::current_exe().map_err(|e| Error::system("find ctxfold itself", e))?;
    let mut command = std::process::Command::new(exe);
    command.arg("mount");
    match &args.dir {
        Some(dir) => command.arg(std::path::absolute(dir).with_path("resolve", dir)?),
        None => command.arg("--agents"),
    };
    if args.no_passthrough {
        command.arg("--no-passthrough");
    }
    command.arg("--copies").arg(args.copies.to_string());
    command
        .arg("--store")
        .arg(std::path::absolute(store.root()).with_path("resolve", store.root())?)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file.try_clone().with_path("open", &log)?);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command
        .spawn()
        .map_err(|e| Error::system("start the mount's daemon", e))?;
    let started = Instant::now();
    loop {
        let said = said_since(&mut file, from, &log)?;
        if said.contains(READY) {
            for line in said.lines() {
                io.note(line.strip_prefix("ctxfold: ").unwrap_or(line));
            }
            io.note(format_args!(
                "served by pid {} in the background; it writes to {}",
                child.id(),
                path(&log)
            ));
            return Ok(Status::Success);
        }
        if let Some(status) = child.try_wait().map_err(|e| Error::system("wait", e))? {
            let said = said_since(&mut file, from, &log)?;
            let last = said.lines().last().unwrap_or("it said nothing");
            let last = last.strip_prefix("ctxfold: error: ").unwrap_or(last);
            return Err(Error::refused(format!(
                "the mount's daemon ended ({status}): {last}"
            )));
        }
        if started.elapsed() > READY_WITHIN {
            return Err(Error::refused(format!(
                "the mount's daemon (pid {}) did not answer within {} s; see {}",
                child.id(),
                READY_WITHIN.as_secs(),
                path(&log)
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn said_since(file: &mut std::fs::File, from: u64, log: &Path) -> Result<String> {
    let mut said = String::new();
    file.seek(SeekFrom::Start(from)).with_path("read", log)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).with_path("read", log)?;
    said.push_str(&String::from_utf8_lossy(&bytes));
    Ok(said)
}

/// `$XDG_STATE_HOME/ctxfold/mount.log`, else `~/.local/state/ctxfold/mount.log`.
fn default_log() -> Result<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let state = match (var("XDG_STATE_HOME"), var("HOME")) {
        (Some(state), _) => PathBuf::from(state),
        (None, Some(home)) => PathBuf::from(home).join(".local/state"),
        (None, None) => {
            return Err(Error::usage(
                "HOME is not set: name the log file with --log",
            ));
        }
    };
    Ok(state.join("ctxfold/mount.log"))
}
