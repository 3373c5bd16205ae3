//! `ctxfold show`: a session rendered for reading, its exact bytes, or its blocks as JSON.

use std::io::Write;

use crate::cli::pager::{self, PagerArgs};
use crate::cli::style::ColorArgs;
use crate::cli::{Command, Io, Status, StoreArgs, TalkArgs, emit};
use crate::commands::diff::common_line;
use crate::error::{Error, Result, stdout_failed};
use crate::history::named::{From, Named};
use crate::history::records;
use crate::history::relative::nearest;
use crate::history::render::Renderer;
use crate::ledger::{Source, Stream};
use crate::store::Store;

/// Show a session for reading: each turn's messages, tool calls and results
///
/// SESSION is a session's id or a unique prefix of it (a folded session's, else one found under
/// the agents' homes: $CODEX_HOME, $PI_CODING_AGENT_DIR), or a session file's path. It is read
/// from its file while the file is on disk (as it is now, grown or not), else from the store, where
/// it is verified as it streams: a session whose source was removed shows the same from the store.
///
/// A heading names the session, its title and cwd, and its nearest relative in the store (the
/// session it was forked or resumed from, or a fork of it: the folded session of its agent that
/// shares the longest history with it, as `ctxfold diff ID` finds it) with that common history.
/// Each turn (one per message from a person; turn 0 is what comes before the first) is shown
/// under a heading with its time: the person's message, the assistant's text and thinking, each
/// tool call with its command (`$ …`), patch or arguments, and its result with how it ended
/// (`exit N`, `error`, `ok`) and its length; a long output shows its first 10 and last 5 lines
/// with `… N lines …` between. Compactions and their summaries, and changes of model or thinking
/// level, are shown where they happen.
///
/// --raw writes the session's bytes exactly as they are (with --turn N, the lines of turn N).
/// --json writes one JSON object per block, as the seed ledger sees it: `{"type":"block","line",
/// "turn","blockId","kind","code","tool","call","exit","failed","sha256","text"}` (the blockId and
/// code are those recall prints), and one per line that names the model or thinking level (a
/// Codex turn repeats the model in use) or compacts the context (`{"type":"model"|
/// "thinking_level"|"compaction","line","turn",…}`).
///
/// Output streams as the session is read, whatever its size; on a terminal it goes through a pager
/// (see --no-pager) and is coloured (see --color).
#[derive(Debug, clap::Parser)]
#[command(name = "ctxfold-show", version, after_long_help = crate::cli::EXIT_STATUS)]
pub struct ShowArgs {
    /// The session: an id, a unique prefix of one, or a session file's path
    #[arg(value_name = "SESSION", add = crate::cli::complete::session_ids())]
    pub session: String,
    /// Only turn N (0: what comes before the first message from a person)
    #[arg(long, value_name = "N")]
    pub turn: Option<u64>,
    /// The session's bytes exactly as written
    #[arg(long, conflicts_with = "json")]
    pub raw: bool,
    /// One JSON object per block (JSON Lines)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub color: ColorArgs,
    #[command(flatten)]
    pub pager: PagerArgs,
    #[command(flatten)]
    pub talk: TalkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

impl Command for ShowArgs {
    fn run(self, io: &mut Io<'_>) -> Result<Status> {
        let store = open_if_any(&self.store)?;
        let named = Named::find(&self.session, store.as_ref())?;
        let (source, from) = named.source(store.as_ref())?;
        // Said on stderr, so that a session shows the same from its file and from the store.
        if from == From::Store {
            let gone = named
                .manifest
                .as_ref()
                .map(|m| m.session.rollout_path.as_str());
            io.note(format_args!(
                "{} is not on disk: showing the folded session",
                gone.unwrap_or("its file")
            ));
        }
        pager::page(io, &self.pager, |io| {
            let turns = if self.raw && self.turn.is_none() {
                copy(source.as_ref(), io.out)?;
                return Ok(Status::Success);
            } else if self.raw {
                self.raw_turn(source.as_ref(), io.out)?
            } else if self.json {
                self.records(source.as_ref(), io.out)?
            } else {
                self.header(io, &named, store.as_ref(), source.as_ref())?;
                self.rendered(source.as_ref(), io)?
            };
            match self.turn {
                Some(n) if n > turns => Err(Error::not_found(format!(
                    "session {} has no turn {n} (it has {turns})",
                    named.describe()
                ))),
                _ => Ok(Status::Success),
            }
        })
    }
}

/// The store, when there is one: a session on disk is shown without one.
pub fn open_if_any(args: &StoreArgs) -> Result<Option<Store>> {
    match args.open() {
        Ok(store) => Ok(Some(store)),
        Err(e) if e.status() == Status::Negative => Ok(None),
        Err(e) => Err(e),
    }
}

/// The source's bytes, as they are.
fn copy(source: &dyn Source, out: &mut dyn Write) -> Result<()> {
    let mut reader = source.open()?;
    loop {
        let buf = crate::error::IoContext::context(reader.fill_buf(), || {
            format!("read {}", source.describe())
        })?;
        if buf.is_empty() {
            return Ok(());
        }
        out.write_all(buf).map_err(stdout_failed)?;
        let n = buf.len();
        reader.consume(n);
    }
}

impl ShowArgs {
    /// Walk the session's lines with the turn each is in, up to the end of the turn asked for;
    /// returns the last turn seen.
    fn walk(
        &self,
        source: &dyn Source,
        mut each: impl FnMut(&crate::ledger::stream::Line<'_>, u64) -> Result<()>,
    ) -> Result<u64> {
        let mut stream = Stream::new(source)?;
        let mut turn = 0;
        while let Some(line) = stream.next_line()? {
            if Renderer::opens_turn(&line) {
                if self.turn == Some(turn) {
                    break;
                }
                turn += 1;
            }
            each(&line, turn)?;
        }
        Ok(turn)
    }

    fn raw_turn(&self, source: &dyn Source, out: &mut dyn Write) -> Result<u64> {
        self.walk(source, |line, turn| {
            if self.turn == Some(turn) {
                out.write_all(line.raw).map_err(stdout_failed)?;
            }
            Ok(())
        })
    }

    fn records(&self, source: &dyn Source, out: &mut dyn Write) -> Result<u64> {
        self.walk(source, |line, last| {
            if self.turn.is_some_and(|n| n != last) {
                return Ok(());
            }
            if let Some(agent) = line.agent {
                let turn_before = last - u64::from(Renderer::opens_turn(line));
                for mark in agent.format().marks(line.text()) {
                    emit(out, records::mark(line.number, turn_before, &mark))?;
                }
            }
            // A line's blocks are in the turn the line is in: a message from a person opens it.
            for block in &line.blocks {
                emit(out, records::block(line.number, last, block))?;
            }
            Ok(())
        })
    }

    /// The session's id, title and folder.
    fn header(
        &self,
        io: &mut Io<'_>,
        named: &Named,
        store: Option<&Store>,
        source: &dyn Source,
    ) -> Result<()> {
        let style = self.color.style(io.out_is_terminal());
        let heading = format!("session {}", named.id_or_describe());
        emit(
            io.out,
            style.paint(crate::cli::style::Role::Heading, heading),
        )?;
        if let Some(title) = &named.title {
            emit(io.out, format_args!("title:  {title}"))?;
        }
        if let Some(cwd) = &named.cwd {
            emit(io.out, format_args!("cwd:    {cwd}"))?;
        }
        // The session it was forked or resumed from, or a fork of it, as `diff ID` finds it.
        if let Some(store) = store
            && let Some((relative, common)) = nearest(store, source, named.id.as_deref())?
        {
            emit(
                io.out,
                format_args!(
                    "relative: {} ({})",
                    relative.session.id,
                    common_line(&common)
                ),
            )?;
        }
        emit(io.out, "")
    }

    fn rendered(&self, source: &dyn Source, io: &mut Io<'_>) -> Result<u64> {
        let mut renderer = Renderer::new(self.color.style(io.out_is_terminal()), self.turn);
        let out = &mut *io.out;
        self.walk(source, |line, _| renderer.line(line, out))
    }
}
