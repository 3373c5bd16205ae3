//! The one error type of the library, and the one table that turns an outcome into an exit status.
//!
//! An [`Error`] is a typed value: its [`Cause`] says what went wrong (an object missing, a manifest
//! invalid, a write to a named target failing, …) and carries what a caller needs to act on it (the
//! digest, the path, the operation, the io error). Library functions never print and never exit;
//! only `main` (see [`crate::cli`]) prints an error, as one line, and exits with its
//! [`Status`]. Commands that end without an error (a negative answer already explained) return a
//! `Status` themselves.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::digest::Digest;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a command ended: the exit status table every man page documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// 0: done.
    Success,
    /// 1: a negative answer: not found (a session, a block, a file), differs, no match.
    Negative,
    /// 2: the command line asks for something impossible.
    Usage,
    /// 3: refused: the input is not what the command takes, or the state needs a flag
    /// (`--overwrite`, `--allow-active`) or another try (a source that changed while read).
    Refused,
    /// 4: corruption found: an object missing or damaged, a manifest invalid, a reconstruction that
    /// does not match.
    Corrupt,
    /// 5: the system failed: I/O, permission, no space.
    System,
    /// 130: interrupted (Ctrl-C), as shells report a program that SIGINT stopped.
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Success => 0,
            Status::Negative => 1,
            Status::Usage => 2,
            Status::Refused => 3,
            Status::Corrupt => 4,
            Status::System => 5,
            Status::Interrupted => 130,
        }
    }

    /// The status of a run whose items ended as `self` and `other`: the more serious one.
    pub fn worst(self, other: Status) -> Status {
        self.max(other)
    }
}

/// The exit-status table every man page carries.
pub const EXIT_STATUS: &str = "Exit status: 0 success; 1 a negative answer (not found, differs, no match); \
2 bad usage; 3 refused (input that is not what the command takes, or a state that needs a flag such as \
--overwrite, or a source that changed while it was read); 4 corruption found (an object missing or damaged, \
a manifest invalid, a reconstruction that does not match); 5 a system failure (I/O, permission, no space); \
130 interrupted by Ctrl-C (what was committed before stands). A closed stdout (`ctxfold … | head`) ends the command quietly with 0.";

/// What went wrong.
#[derive(Debug)]
pub enum Cause {
    /// The command line asks for something impossible.
    Usage(String),
    /// What was asked for does not exist (a session, a block, a file named on the command line).
    NotFound(String),
    /// Two things that should agree do not (a span's text and its sha256, a file and its session).
    Differs(String),
    /// Input that is not what the command takes: `what` names it (a file, `stdin line 3`).
    BadInput { what: String, why: String },
    /// The state forbids it without a flag or another try.
    Refused(String),
    /// The session already has a manifest recording other bytes.
    ManifestExists { id: String },
    /// A file changed while it was read.
    SessionChanged { what: String, change: String },
    /// An object a manifest (or a request) names is not in the store.
    ObjectMissing { digest: Digest },
    /// An object's bytes are not what its name says.
    ObjectCorrupt { digest: Digest, why: String },
    /// A manifest that cannot be trusted: `what` names it (a file, `manifests/<id>.json` of a remote).
    ManifestInvalid { what: String, why: String },
    /// Other corruption found (a reconstruction that does not match, a damaged pack).
    Corrupt(String),
    /// The operating system refused `op` on `path`.
    Io {
        op: String,
        path: Option<PathBuf>,
        source: io::Error,
    },
    /// Writing to a named target (`stdout`, a restore target) failed.
    Write { target: String, source: io::Error },
}

/// A [`Cause`] with the context it was met in (`restore 019c…`).
pub struct Error(Box<Inner>);

struct Inner {
    cause: Cause,
    /// Outermost first.
    context: Vec<String>,
}

impl Error {
    pub fn new(cause: Cause) -> Self {
        Self(Box::new(Inner {
            cause,
            context: Vec::new(),
        }))
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Cause::Usage(message.into()))
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(Cause::NotFound(message.into()))
    }

    pub fn differs(message: impl Into<String>) -> Self {
        Self::new(Cause::Differs(message.into()))
    }

    pub fn bad_input(what: impl fmt::Display, why: impl Into<String>) -> Self {
        Self::new(Cause::BadInput {
            what: what.to_string(),
            why: why.into(),
        })
    }

    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(Cause::Refused(message.into()))
    }

    pub fn manifest_exists(id: impl Into<String>) -> Self {
        Self::new(Cause::ManifestExists { id: id.into() })
    }

    pub fn session_changed(what: impl fmt::Display, change: impl Into<String>) -> Self {
        Self::new(Cause::SessionChanged {
            what: what.to_string(),
            change: change.into(),
        })
    }

    pub fn object_missing(digest: Digest) -> Self {
        Self::new(Cause::ObjectMissing { digest })
    }

    pub fn object_corrupt(digest: Digest, why: impl Into<String>) -> Self {
        Self::new(Cause::ObjectCorrupt {
            digest,
            why: why.into(),
        })
    }

    pub fn manifest_invalid(what: impl fmt::Display, why: impl Into<String>) -> Self {
        Self::new(Cause::ManifestInvalid {
            what: what.to_string(),
            why: why.into(),
        })
    }

    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(Cause::Corrupt(message.into()))
    }

    /// The system refused `op` on `path`.
    pub fn io(op: impl Into<String>, path: &Path, source: io::Error) -> Self {
        Self::new(Cause::Io {
            op: op.into(),
            path: Some(path.to_path_buf()),
            source,
        })
    }

    /// The system refused `op`, which names no single path (`sync the filesystem`, `run git`).
    pub fn system(op: impl Into<String>, source: io::Error) -> Self {
        Self::new(Cause::Io {
            op: op.into(),
            path: None,
            source,
        })
    }

    /// Writing to `target` failed.
    pub fn write(target: impl fmt::Display, source: io::Error) -> Self {
        Self::new(Cause::Write {
            target: target.to_string(),
            source,
        })
    }

    pub fn cause(&self) -> &Cause {
        &self.0.cause
    }

    /// True when the reader of our stdout went away (`ctxfold ls | head`): not an error.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(&self.0.cause, Cause::Write { target, source }
            if target == STDOUT && source.kind() == io::ErrorKind::BrokenPipe)
    }

    /// True when the disk (or the user's quota) had no room for a write: every write after it
    /// would fail the same way, so a run stops rather than fail each thing it has left.
    pub fn is_out_of_space(&self) -> bool {
        match &self.0.cause {
            Cause::Io { source, .. } | Cause::Write { source, .. } => out_of_space(source),
            _ => false,
        }
    }

    /// The documented table: which status this error ends a command with.
    pub fn status(&self) -> Status {
        match &self.0.cause {
            _ if self.is_broken_pipe() => Status::Success,
            Cause::Usage(_) => Status::Usage,
            Cause::NotFound(_) | Cause::Differs(_) => Status::Negative,
            // A file named on the command line that is not there is a negative answer too.
            Cause::Io { source, .. } if source.kind() == io::ErrorKind::NotFound => {
                Status::Negative
            }
            Cause::BadInput { .. }
            | Cause::Refused(_)
            | Cause::ManifestExists { .. }
            | Cause::SessionChanged { .. } => Status::Refused,
            Cause::ObjectMissing { .. }
            | Cause::ObjectCorrupt { .. }
            | Cause::ManifestInvalid { .. }
            | Cause::Corrupt(_) => Status::Corrupt,
            Cause::Io { .. } | Cause::Write { .. } => Status::System,
        }
    }

    /// Say what was being done when this happened (`restore x: …`).
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.0.context.insert(0, prefix.to_string());
        self
    }

    /// Name the writer a [`sink_failed`] error was about (`stdout`, the restore target).
    pub fn on_target(mut self, target: impl fmt::Display) -> Self {
        if let Cause::Write { target: named, .. } = &mut self.0.cause
            && named == SINK
        {
            *named = target.to_string();
        }
        self
    }

    /// Carry this error through an `io::Read` or `io::Write` implementation; [`IoContext`] takes it
    /// out again with its cause intact.
    pub fn into_io(self) -> io::Error {
        io::Error::other(self)
    }

    /// The message without its context (what fsck prints beside the file it names itself).
    pub fn without_context(&self) -> String {
        self.0.cause.to_string()
    }
}

/// The target name of the process's standard output.
pub const STDOUT: &str = "stdout";

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Usage(m)
            | Cause::NotFound(m)
            | Cause::Differs(m)
            | Cause::Refused(m)
            | Cause::Corrupt(m) => f.write_str(m),
            Cause::BadInput { what, why } | Cause::ManifestInvalid { what, why } => {
                write!(f, "{what}: {why}")
            }
            Cause::ManifestExists { id } => write!(
                f,
                "session {id:?} is already folded; nothing committed (--overwrite replaces it)"
            ),
            Cause::SessionChanged { what, change } => {
                write!(f, "{what} changed while it was read ({change})")
            }
            Cause::ObjectMissing { digest } => write!(f, "object {digest} is missing"),
            Cause::ObjectCorrupt { digest, why } => write!(f, "object {digest} is corrupt: {why}"),
            Cause::Io {
                op,
                path: Some(path),
                source,
            } => write!(f, "{op} {}: {}", path.display(), one_line(source)),
            Cause::Io {
                op,
                path: None,
                source,
            } => write!(f, "{op}: {}", one_line(source)),
            Cause::Write { target, source } => write!(f, "write to {target}: {}", one_line(source)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for prefix in &self.0.context {
            write!(f, "{prefix}: ")?;
        }
        write!(f, "{}", self.0.cause)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {self}", self.status())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.cause {
            Cause::Io { source, .. } | Cause::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An error kept to be said again: by every later call of a writer it stopped, by what it left
/// undone. Its message, and whether it was a full disk (which callers tell apart, to stop rather
/// than go on failing).
pub struct Remembered {
    message: String,
    out_of_space: bool,
}

impl Remembered {
    pub fn of(e: &Error) -> Self {
        Self {
            message: e.to_string(),
            out_of_space: e.is_out_of_space(),
        }
    }

    /// It, as the reason `op` failed.
    pub fn again(&self, op: &str) -> Error {
        let kind = match self.out_of_space {
            true => io::ErrorKind::StorageFull,
            false => io::ErrorKind::Other,
        };
        Error::system(op, io::Error::new(kind, self.message.clone()))
    }
}

/// Whether `e` (or our error it carries) says the disk or the quota is full.
fn out_of_space(e: &io::Error) -> bool {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<Error>()) {
        Some(ours) => ours.is_out_of_space(),
        None => matches!(
            e.kind(),
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
        ),
    }
}

/// An io error's text without the "(os error N)" noise and on one line.
pub(crate) fn one_line(e: &io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    text.replace('\n', " ")
}

/// Attach what was being done, and to which path, to an io error.
pub trait IoContext<T> {
    /// The system refused `op` on `path`.
    fn with_path(self, op: &str, path: &Path) -> Result<T>;
    /// The system refused what `op` says (for work that names no single path).
    fn context(self, op: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn with_path(self, op: &str, path: &Path) -> Result<T> {
        self.map_err(|e| carried(e).unwrap_or_else(|e| Error::io(op, path, e)))
    }

    fn context(self, op: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| carried(e).unwrap_or_else(|e| Error::system(op(), e)))
    }
}

/// Our error carried through an `io::Read` or `io::Write` (see [`Error::into_io`]), or the io error.
fn carried(e: io::Error) -> std::result::Result<Error, io::Error> {
    if !e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        return Err(e);
    }
    let inner = e.into_inner().expect("checked above");
    Ok(*inner.downcast::<Error>().expect("checked above"))
}

/// Writing to stdout: a broken pipe ends the command quietly, anything else (a full disk) is an error.
pub fn stdout_failed(e: io::Error) -> Error {
    Error::write(STDOUT, e)
}

/// What a writer handed in by the caller is called until the caller names it ([`Error::on_target`]).
const SINK: &str = "the output";

/// Writing to a writer the caller handed in failed; the caller names it with [`Error::on_target`].
pub fn sink_failed(e: io::Error) -> Error {
    Error::write(SINK, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_table() {
        assert_eq!(Error::usage("x").status().code(), 2);
        assert_eq!(Error::not_found("x").status().code(), 1);
        assert_eq!(Error::refused("x").status().code(), 3);
        assert_eq!(Error::object_missing(Digest::of(b"")).status().code(), 4);
        let full = io::Error::new(io::ErrorKind::StorageFull, "No space left on device");
        assert_eq!(Error::write("/x", full).status().code(), 5);
        let quota = io::Error::from_raw_os_error(122);
        assert!(Error::io("write", Path::new("/x"), quota).is_out_of_space());
        let full = Error::io("write", Path::new("/x"), io::Error::from_raw_os_error(28));
        assert!(full.is_out_of_space());
        assert!(Error::system("copy", full.into_io()).is_out_of_space());
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(!Error::io("write", Path::new("/x"), denied).is_out_of_space());
        assert!(!Error::corrupt("x").is_out_of_space());
        let full = Error::io("write", Path::new("/x"), io::Error::from_raw_os_error(28));
        let again = Remembered::of(&full).again("write a pack");
        assert!(again.is_out_of_space() && again.status() == Status::System);
        assert_eq!(again.to_string(), format!("write a pack: {full}"));
        assert!(
            !Remembered::of(&Error::corrupt("x"))
                .again("y")
                .is_out_of_space()
        );
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert_eq!(stdout_failed(pipe).status(), Status::Success);
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert_eq!(Error::write("/x", pipe).status(), Status::System);
        assert_eq!(Status::Refused.worst(Status::Negative), Status::Refused);
    }

    #[test]
    fn messages_are_one_line_with_context_and_without_os_error_numbers() {
        let e = Error::io("open", Path::new("/x"), io::Error::from_raw_os_error(2));
        assert_eq!(e.to_string(), "open /x: No such file or directory");
        let e = Error::object_missing(Digest::of(b"")).context("restore s");
        assert!(e.to_string().starts_with("restore s: object e3b0"), "{e}");
        assert!(e.without_context().starts_with("object e3b0"));
        let full = io::Error::from_raw_os_error(28);
        assert_eq!(
            Error::write("/tmp/t.jsonl", full).to_string(),
            "write to /tmp/t.jsonl: No space left on device"
        );
    }
}
