//! The real `git` binary, for everything that talks to a remote (as jj does): fetch, push,
//! ls-remote and the remotes' configuration. Whatever the user set up for git (credential
//! helpers, `~/.ssh/config`, `GIT_SSH_COMMAND`, `insteadOf` rewrites) applies unchanged.
//!
//! Failures become one-line errors carrying git's own last line of complaint.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use gix::ObjectId;

use super::BRANCH;
use crate::error::{Error, IoContext, Result};

/// `git --git-dir=<dir> <args>`, capturing its output.
fn run<I, S>(git_dir: &Path, args: I) -> Result<Output>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context(|| "run git (is it installed and on PATH?)".into())
}

/// Run git and require success; `what` names the step in the error.
pub(super) fn run_ok<I, S>(git_dir: &Path, what: &str, args: I) -> Result<Vec<u8>>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let output = run(git_dir, args)?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    Err(failure(what, &output))
}

fn failure(what: &str, output: &Output) -> Error {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let status = output
        .status
        .code()
        .map_or_else(|| "a signal".to_string(), |c| c.to_string());
    let said = reason(&stderr);
    // The kind decides the exit status: out of space is the system's failure, as everywhere.
    let error = match said.contains(NO_SPACE) {
        true => std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!("out of space: git exited with {status}: {said}"),
        ),
        false => std::io::Error::other(format!("git exited with {status}: {said}")),
    };
    Error::system(what, error)
}

/// What git's own complaint is, from all it printed: the line that says the disk is full, else
/// its first `fatal:` or `error:` line (git follows it with advice, "Please make sure you have
/// the correct access rights / and the repository exists."), else its last line.
fn reason(stderr: &str) -> &str {
    let lines = || stderr.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| l.contains(NO_SPACE))
        .or_else(|| lines().find(|l| l.starts_with("fatal:") || l.starts_with("error:")))
        .or_else(|| lines().next_back())
        .unwrap_or("no message")
}

/// How git (and the C library under it) says a write found the disk full.
const NO_SPACE: &str = "No space left on device";

/// The version of the `git` binary, as (major, minor).
pub fn version() -> Result<(u32, u32)> {
    let printed = run_ok(Path::new("."), "ask git its version", ["version"])?;
    let printed = String::from_utf8_lossy(&printed);
    let mut numbers = (printed.trim().strip_prefix("git version "))
        .unwrap_or_default()
        .split('.')
        .map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => Err(Error::system(
            "ask git its version",
            std::io::Error::other(format!("it said {:?}", printed.trim())),
        )),
    }
}

/// A configured remote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Remote {
    pub name: String,
    pub url: String,
}

pub fn remote_add(git_dir: &Path, name: &str, url: &str) -> Result<()> {
    let url = local_path_made_absolute(url);
    run_ok(
        git_dir,
        &format!("add remote {name}"),
        ["remote", "add", "--", name, &url],
    )?;
    Ok(())
}

/// `url` as the mirror must keep it: a relative local path taken from the current folder, as
/// `git clone` records one (git reads it from wherever it runs later: another folder, the mirror);
/// anything else as given. Told apart as git tells them: a URL has `://`, `host:path` has its
/// colon before any slash.
fn local_path_made_absolute(url: &str) -> String {
    let scp_like = url
        .find(':')
        .is_some_and(|colon| !url[..colon].contains('/'));
    if url.contains("://") || scp_like || Path::new(url).is_absolute() {
        return url.to_string();
    }
    crate::sources::absolute_utf8(Path::new(url)).unwrap_or_else(|_| url.to_string())
}

pub fn remote_remove(git_dir: &Path, name: &str) -> Result<()> {
    run_ok(
        git_dir,
        &format!("remove remote {name}"),
        ["remote", "remove", name],
    )?;
    Ok(())
}

/// The values of a git configuration key that may be set several times (none: empty).
pub fn config_values(git_dir: &Path, key: &str) -> Result<Vec<String>> {
    let output = run(git_dir, ["config", "--get-all", key])?;
    match output.status.code() {
        Some(0) => Ok(String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_string)
            .collect()),
        // git's "the key is not set".
        Some(1) => Ok(Vec::new()),
        _ => Err(failure(&format!("read {key}"), &output)),
    }
}

/// Set a git configuration key to `values`, one entry each (none: unset it).
pub fn set_config_values(git_dir: &Path, key: &str, values: &[String]) -> Result<()> {
    let output = run(git_dir, ["config", "--unset-all", key])?;
    // git's "the key was not set" is 5.
    if !matches!(output.status.code(), Some(0 | 5)) {
        return Err(failure(&format!("unset {key}"), &output));
    }
    for value in values {
        run_ok(
            git_dir,
            &format!("set {key}"),
            ["config", "--add", key, value],
        )?;
    }
    Ok(())
}

/// The configured remotes with their fetch URLs, in git's order.
pub fn remotes(git_dir: &Path) -> Result<Vec<Remote>> {
    let names = run_ok(git_dir, "list remotes", ["remote"])?;
    let mut found = Vec::new();
    for name in String::from_utf8_lossy(&names)
        .lines()
        .filter(|l| !l.is_empty())
    {
        let url = run_ok(
            git_dir,
            &format!("read the URL of remote {name}"),
            ["remote", "get-url", name],
        )?;
        let url = String::from_utf8_lossy(&url).trim_end().to_string();
        found.push(Remote {
            name: name.to_string(),
            url,
        });
    }
    Ok(found)
}

/// The remote-tracking ref a fetch of `remote` updates.
pub fn tracking_ref(remote: &str) -> String {
    format!("refs/remotes/{remote}/ctxfold")
}

/// Fetch the remote's ctxfold branch into its tracking ref. `false` when the remote has no such
/// branch yet (a new, empty remote).
pub fn fetch(git_dir: &Path, remote: &str) -> Result<bool> {
    // `--exit-code` makes "no such ref" exit 2 instead of looking like success.
    let output = run(git_dir, ["ls-remote", "--exit-code", remote, BRANCH])?;
    match output.status.code() {
        Some(0) => {}
        Some(2) => return Ok(false),
        _ => return Err(failure(&format!("look up {BRANCH} on {remote}"), &output)),
    }
    let refspec = format!("+{BRANCH}:{}", tracking_ref(remote));
    run_ok(
        git_dir,
        &format!("fetch from {remote}"),
        [
            "-c",
            KEEP_PACKS,
            "fetch",
            "--quiet",
            "--no-tags",
            remote,
            &refspec,
        ],
    )?;
    Ok(true)
}

/// What a push of one commit over another sends.
#[derive(Debug, Default)]
pub struct ToSend {
    /// Every object but the commits and the root tree, with its path.
    pub files: Vec<(ObjectId, String)>,
    /// Objects the mirror lacks (blobs a partial mirror dropped; see `partial`), without a path.
    pub missing: Vec<ObjectId>,
}

/// What a push of `ours` to a remote whose branch is at `theirs` sends (every object reachable
/// from `ours` and not from `theirs`): git's own answer, `rev-list --objects`, told not to fetch
/// what the mirror dropped but to name it.
pub fn files_to_send(git_dir: &Path, ours: ObjectId, theirs: Option<ObjectId>) -> Result<ToSend> {
    let mut args = vec![
        "rev-list".to_string(),
        "--objects".into(),
        "--missing=print".into(),
        ours.to_string(),
    ];
    if let Some(theirs) = theirs {
        args.extend(["--not".into(), theirs.to_string()]);
    }
    let listed = run_ok(git_dir, "list what a push sends", &args)?;
    let id = |hex: &str| {
        ObjectId::from_hex(hex.as_bytes())
            .map_err(|e| Error::system("read git rev-list", std::io::Error::other(e)))
    };
    let mut sent = ToSend::default();
    for line in String::from_utf8_lossy(&listed).lines() {
        if let Some(hex) = line.strip_prefix('?') {
            sent.missing.push(id(hex)?);
            continue;
        }
        // Commits come without a path, the root tree with an empty one.
        let Some((hex, path)) = line.split_once(' ') else {
            continue;
        };
        if path.is_empty() {
            continue;
        }
        sent.files.push((id(hex)?, path.to_string()));
    }
    Ok(sent)
}

/// Push `commit` to the remote's ctxfold branch. git refuses anything but a fast-forward, so a
/// remote that moved on since the fetch is never overwritten.
pub fn push(git_dir: &Path, remote: &str, commit: ObjectId) -> Result<()> {
    let refspec = format!("{commit}:{BRANCH}");
    run_ok(
        git_dir,
        &format!("push to {remote} (if it moved on meanwhile, sync again)"),
        ["-c", NO_DELTAS_OVER, "push", "--quiet", remote, &refspec],
    )?;
    Ok(())
}

/// Blobs over 1 MiB are packed without looking for deltas: they are zstd (packs, objects) or
/// encrypted, in which no delta finds anything, and the search over them took most of a sync's
/// time (8 s of a 68 MB store's repack, against 1.5 s without it). Manifests, which delta well, stay
/// under it.
pub(super) const NO_DELTAS_OVER: &str = "core.bigFileThreshold=1m";

/// A fetch keeps what it gets as the pack it came in, however few its objects (git unpacks fewer
/// than 100 into loose objects, compressing each again: a fetch of an encrypted remote is few
/// large blobs, and unpacking 60 MB of them took 7 s of a 20 s clone).
const KEEP_PACKS: &str = "transfer.unpackLimit=1";

/// Pack the mirror whenever a sync left loose objects or a fetch added a pack, as `git repack
/// --geometric` does: loose objects and the smaller packs are rolled into one, so that each pack
/// holds at least twice the objects of the next smaller one. The packs stay few (logarithmic in the
/// objects) and each object is rewritten a logarithmic number of times, where packing everything
/// again every few syncs rewrote the whole mirror. Loose objects left to wait cost more than their
/// bytes: a page each and a folder per 256, and manifests kept loose get no deltas against their
/// forks (bench/forks: a first sync of 182 sessions left 190 loose objects, 2.8 MB of mirror beside
/// a 1.5 MB store; packed, 1.2 MB, in 0.1 s).
pub fn pack(git_dir: &Path) -> Result<()> {
    let counted = run_ok(
        git_dir,
        "count the mirror's objects",
        ["count-objects", "-v"],
    )?;
    let field = |name: &str| {
        String::from_utf8_lossy(&counted)
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    if field("count:") == 0 && field("packs:") <= 1 {
        return Ok(());
    }
    // git cannot roll a partial repository's packs geometrically ("cannot use internal rev list
    // with --stdin-packs"): there, loose objects are packed and `partial::shed` rolls the rest.
    let roll = match super::partial::is_partial(git_dir)? {
        true => None,
        false => Some("--geometric=2"),
    };
    let args = ["-c", NO_DELTAS_OVER, "repack", "-d", "-q"];
    run_ok(git_dir, "pack the mirror", args.into_iter().chain(roll))?;
    Ok(())
}

/// The bytes of blob `id` as the `git` binary reads them: in a partial mirror (see `partial`), one
/// it dropped is fetched back from a promisor remote on the way, which gix does not do.
pub fn cat_blob(git_dir: &Path, id: ObjectId) -> Result<Vec<u8>> {
    run_ok(
        git_dir,
        &format!("read blob {id} (fetched from the remote when the mirror dropped it)"),
        ["cat-file", "blob", &id.to_string()],
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{local_path_made_absolute, reason};

    #[test]
    fn gits_reason_is_its_complaint_not_its_advice() {
        let missing = "fatal: '/r.git' does not appear to be a git repository\n\
                       fatal: Could not read from remote repository.\n\n\
                       Please make sure you have the correct access rights\n\
                       and the repository exists.\n";
        assert_eq!(
            reason(missing),
            "fatal: '/r.git' does not appear to be a git repository"
        );
        let full = "error: unable to write file x: No space left on device\n\
                    fatal: fetch-pack: invalid index-pack output\n";
        assert_eq!(
            reason(full),
            "error: unable to write file x: No space left on device"
        );
        assert_eq!(reason("hint: a\nsomething odd\n"), "something odd");
        assert_eq!(reason(""), "no message");
    }

    #[test]
    fn only_relative_local_paths_are_made_absolute() {
        let here = std::env::current_dir().unwrap();
        for (given, kept) in [
            ("https://example.com/r.git", true),
            ("ssh://git@example.com/r.git", true),
            ("file:///srv/r.git", true),
            ("git@example.com:me/r.git", true),
            ("host:r.git", true),
            ("/srv/r.git", true),
        ] {
            assert_eq!(local_path_made_absolute(given) == given, kept, "{given}");
        }
        for relative in ["r.git", "../r.git", "./dir/r.git", "dir/a:b.git"] {
            assert_eq!(
                Path::new(&local_path_made_absolute(relative)),
                std::path::absolute(here.join(relative)).unwrap(),
                "{relative}"
            );
        }
    }
}
