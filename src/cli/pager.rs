//! Long output through a pager when a person reads it on a terminal, as git pages `git log`:
//! `$CTXFOLD_PAGER`, else `$PAGER`, else `less`, run by `sh -c`, with `LESS=FRX` unless `LESS` is
//! set (quit at once when the text fits on one screen, keep colours, leave the text on the
//! screen). An empty pager, or `cat`, is none; a pager that cannot start is none either.

use std::io::{BufWriter, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::error::{Result, stdout_failed};

pub struct Pager {
    child: Child,
    input: BufWriter<ChildStdin>,
}

impl Pager {
    /// The pager for stdout when it is a `terminal`, or `None`: not a terminal, no pager wanted,
    /// or none could start.
    pub fn start(terminal: bool) -> Option<Pager> {
        if !terminal {
            return None;
        }
        let command = ["CTXFOLD_PAGER", "PAGER"]
            .iter()
            .find_map(|name| std::env::var(name).ok())
            .unwrap_or_else(|| "less".into());
        if command.trim().is_empty() || command.trim() == "cat" {
            return None;
        }
        let mut shell = Command::new("sh");
        shell.args(["-c", &command]).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            shell.env("LESS", "FRX");
        }
        let mut child = shell.spawn().ok()?;
        let input = BufWriter::new(child.stdin.take()?);
        Some(Pager { child, input })
    }

    /// Where the output goes: the pager's input.
    pub fn input(&mut self) -> &mut dyn Write {
        &mut self.input
    }

    /// Close the pager's input and wait until the person quits it. A pager quit early (a broken
    /// pipe) is no failure.
    pub fn finish(self) -> Result<()> {
        let Pager { mut child, input } = self;
        // Flushed, then closed (dropped): the pager sees the end of its input.
        let flushed = input
            .into_inner()
            .map(drop)
            .map_err(|e| stdout_failed(e.into_error()));
        let waited = child.wait();
        match flushed {
            Err(e) if !e.is_broken_pipe() => return Err(e),
            _ => {}
        }
        waited.map_err(stdout_failed)?;
        Ok(())
    }
}
