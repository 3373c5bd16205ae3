//! The one error type of the library and the one table that turns it into an exit code.
//!
//! Library functions never print and never exit: they return an [`Error`] whose message is a single
//! line naming the file or object and what is wrong. Only the binaries' `main` (see [`crate::cli`])
//! prints it and exits with [`Error::exit_code`].

use std::fmt;
use std::io;
use std::path::Path;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure this is; it decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The command line asks for something impossible (exit 2).
    Usage,
    /// A negative answer: not found, mismatch, corruption, bad input data, refusal (exit 1).
    Failed,
    /// The operating system said no (exit 1, or 0 for a broken pipe on stdout).
    Io,
}

#[derive(Debug)]
pub struct Error {
    kind: Kind,
    message: String,
    source: Option<io::Error>,
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Self {
        Self { kind: Kind::Usage, message: message.into(), source: None }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Self { kind: Kind::Failed, message: message.into(), source: None }
    }

    pub fn io(message: impl Into<String>, source: io::Error) -> Self {
        Self { kind: Kind::Io, message: message.into(), source: Some(source) }
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// True when the reader of our stdout went away (`ctxfold ls | head`): not an error.
    pub fn is_broken_pipe(&self) -> bool {
        self.source.as_ref().is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    }

    /// The documented table: 0 success, 1 a negative answer or a failure, 2 bad usage.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            Kind::Usage => 2,
            Kind::Failed | Kind::Io if self.is_broken_pipe() => 0,
            Kind::Failed | Kind::Io => 1,
        }
    }

    /// Prefix the message with more context (`restore x: …`).
    pub fn context(mut self, prefix: impl fmt::Display) -> Self {
        self.message = format!("{prefix}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(source) => write!(f, "{}: {}", self.message, one_line(source)),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as _)
    }
}

/// An io error's text without the "(os error N)" noise and on one line.
fn one_line(e: &io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(at) => text[..at].to_string(),
        None => text,
    };
    text.replace('\n', " ")
}

/// Attach what was being done, and to which path, to an io error.
pub trait IoContext<T> {
    fn with_path(self, doing: &str, path: &Path) -> Result<T>;
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn with_path(self, doing: &str, path: &Path) -> Result<T> {
        self.map_err(|e| Error::io(format!("{doing} {}", path.display()), e))
    }

    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::io(what(), e))
    }
}

/// Writing to stdout: a broken pipe ends the command quietly, anything else (a full disk) is an error.
pub fn write_failed(e: io::Error) -> Error {
    Error::io("write to stdout", e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_table() {
        assert_eq!(Error::usage("x").exit_code(), 2);
        assert_eq!(Error::failed("x").exit_code(), 1);
        let other = io::Error::new(io::ErrorKind::StorageFull, "No space left on device");
        assert_eq!(Error::io("write", other).exit_code(), 1);
        let pipe = io::Error::from(io::ErrorKind::BrokenPipe);
        assert_eq!(Error::io("write", pipe).exit_code(), 0);
    }

    #[test]
    fn io_errors_print_on_one_line_without_os_error_numbers() {
        let e = Error::io("open /x", io::Error::from_raw_os_error(2));
        assert_eq!(e.to_string(), "open /x: No such file or directory");
    }
}
