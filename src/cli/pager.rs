//! Paging, as git pages: a command whose output a person reads page by page (`log`, `show`,
//! `diff`) streams it into a pager's stdin when stdout is a terminal.
//!
//! The pager is `$CTXFOLD_PAGER`, else `$PAGER`, else `less`, run by `sh -c` (so `less -S` works);
//! set to `cat` or to nothing, or `--no-pager`, means none. `less` gets `LESS=FRX` (quit when the
//! text fits the screen, pass colours, leave the screen as it was) and `lv` gets `LV=-c` when
//! those are unset, as git does. A pager that quits early closes the pipe: the command stops
//! quietly with status 0. Ctrl-C belongs to the pager while it runs (the command waits for it,
//! so the shell never gets the terminal back from under it).

use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::Io;
use crate::error::{Error, Result, Status, stdout_failed};

/// `--no-pager`, for the commands that page.
#[derive(Debug, Clone, clap::Args)]
pub struct PagerArgs {
    /// Do not pipe the output into a pager [default: $CTXFOLD_PAGER, else $PAGER, else less, when
    /// stdout is a terminal]
    #[arg(long)]
    pub no_pager: bool,
}

/// A pager to run: a shell command, and what is added to its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub command: OsString,
    pub env: Vec<(&'static str, &'static str)>,
}

/// The pager to run, if any, from whether stdout is a terminal, `--no-pager` and the environment
/// (`var` reads a variable; an empty value is a value).
pub fn choose(
    out_is_terminal: bool,
    no_pager: bool,
    var: impl Fn(&str) -> Option<OsString>,
) -> Option<Choice> {
    if no_pager || !out_is_terminal {
        return None;
    }
    let command = var("CTXFOLD_PAGER")
        .or_else(|| var("PAGER"))
        .unwrap_or_else(|| "less".into());
    let spelled = command.to_string_lossy();
    if matches!(spelled.trim(), "" | "cat") {
        return None;
    }
    let mut env = Vec::new();
    for (name, value) in [("LESS", "FRX"), ("LV", "-c")] {
        if var(name).is_none() {
            env.push((name, value));
        }
    }
    Some(Choice { command, env })
}

/// Run `body` with its data going through the pager the environment chooses (or straight to
/// stdout when there is none), then wait for the pager to quit.
pub fn page(
    io: &mut Io<'_>,
    args: &PagerArgs,
    body: impl FnOnce(&mut Io<'_>) -> Result<Status>,
) -> Result<Status> {
    let Some(choice) = choose(io.out_is_terminal(), args.no_pager, |name| {
        std::env::var_os(name)
    }) else {
        return body(io);
    };
    io.out.flush().map_err(stdout_failed)?;
    let mut pager = Pager::start(&choice)?;
    let mut pipe = BufWriter::with_capacity(64 * 1024, pager.stdin.take().expect("piped"));
    let result = body(&mut io.redirect(&mut pipe, true));
    // Close the pipe (the pager sees the end), then let the pager run until the person quits it.
    let flushed = pipe.flush().map_err(stdout_failed);
    drop(pipe);
    let waited = pager.wait();
    let status = result.and_then(|status| flushed.map(|()| status))?;
    waited.map(|()| status)
}

/// A running pager, Ctrl-C left to it.
struct Pager {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    command: OsString,
    /// The handler that keeps Ctrl-C from ending the command while the pager runs.
    handler: Option<signal_hook::SigId>,
}

impl Pager {
    fn start(choice: &Choice) -> Result<Self> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&choice.command)
            .envs(choice.env.iter().copied())
            .stdin(Stdio::piped())
            .spawn()
            .map_err(|e| Error::system(format!("run the pager {:?}", choice.command), e))?;
        let stdin = child.stdin.take();
        // A handler, not SIG_IGN: the pager (already started) keeps its own way with Ctrl-C.
        let handler = signal_hook::flag::register(
            signal_hook::consts::SIGINT,
            Arc::new(AtomicBool::new(false)),
        )
        .ok();
        Ok(Self {
            child,
            stdin,
            command: choice.command.clone(),
            handler,
        })
    }

    /// Wait for the pager to quit; a pager the shell could not run is an error.
    fn wait(mut self) -> Result<()> {
        let status = self
            .child
            .wait()
            .map_err(|e| Error::system(format!("wait for the pager {:?}", self.command), e))?;
        if let Some(id) = self.handler.take() {
            signal_hook::low_level::unregister(id);
        }
        match status.code() {
            Some(126 | 127) => Err(Error::system(
                format!(
                    "run the pager {:?} (set CTXFOLD_PAGER, or --no-pager)",
                    self.command
                ),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    fn command(terminal: bool, no_pager: bool, vars: &[(&str, &str)]) -> Option<String> {
        choose(terminal, no_pager, with(vars)).map(|c| c.command.to_string_lossy().into_owned())
    }

    #[test]
    fn pagers_are_chosen_as_git_chooses_them() {
        assert_eq!(command(true, false, &[]).as_deref(), Some("less"));
        assert_eq!(
            command(true, false, &[("PAGER", "more")]).as_deref(),
            Some("more")
        );
        assert_eq!(
            command(
                true,
                false,
                &[("PAGER", "more"), ("CTXFOLD_PAGER", "less -S")]
            )
            .as_deref(),
            Some("less -S")
        );
        // Not on a terminal, asked not to, `cat`, or set to nothing: no pager.
        assert_eq!(command(false, false, &[]), None);
        assert_eq!(command(true, true, &[]), None);
        assert_eq!(command(true, false, &[("PAGER", "cat")]), None);
        assert_eq!(command(true, false, &[("PAGER", "")]), None);
        // An empty CTXFOLD_PAGER turns paging off even when PAGER is set.
        assert_eq!(
            command(true, false, &[("CTXFOLD_PAGER", ""), ("PAGER", "less")]),
            None
        );
    }

    #[test]
    fn less_gets_frx_unless_the_user_set_less() {
        let env = |vars: &[(&str, &str)]| choose(true, false, with(vars)).unwrap().env;
        assert_eq!(env(&[]), vec![("LESS", "FRX"), ("LV", "-c")]);
        assert_eq!(env(&[("LESS", "-S")]), vec![("LV", "-c")]);
        assert_eq!(env(&[("LESS", ""), ("LV", "")]), vec![]);
    }
}
