//! A session rendered for reading, line by line as its ledger streams (`ctxfold show`, and each
//! side of `ctxfold diff`): each turn under a heading, the person's message, the assistant's text
//! and thinking, each tool call with its command, patch or arguments and its result (exit code,
//! the first and last lines of a long output with `… N lines …` between), compactions and their
//! summaries, model changes. Built on the ledger's blocks, so what is shown is what the seed index
//! and `recall` see; turns count as they count there (one per message from a person; turn 0 is
//! what comes before the first).
//!
//! Not for: the JSON form of the blocks (`ctxfold show --json` writes the blocks themselves).

use std::collections::HashMap;
use std::io::Write;

use crate::agents::Mark;
use crate::cli::style::{Role, Style};
use crate::error::{Result, stdout_failed};
use crate::ledger::stream::Line;
use crate::ledger::{Block, BlockKind};
use crate::seeds::lexicon::commands::command_of;
use crate::time::Instant;

/// Lines of a long text kept from its start and from its end.
const HEAD: usize = 10;
const TAIL: usize = 5;
/// Characters of a line kept (tool output can be one line of megabytes).
const LINE_CHARS: usize = 400;
/// Characters of a tool call's arguments shown on its line.
const ARGS_CHARS: usize = 200;
/// Indentation of a block's text under its label.
const INDENT: &str = "    ";

/// The state of a rendering: the turn, what the model and thinking level are (to show changes
/// only), and which turn's heading is out.
pub struct Renderer {
    style: Style,
    /// Only this turn is shown, when set.
    only: Option<u64>,
    turn: u64,
    headed: Option<u64>,
    settings: HashMap<&'static str, String>,
}

impl Renderer {
    pub fn new(style: Style, only: Option<u64>) -> Self {
        Self {
            style,
            only,
            turn: 0,
            headed: None,
            settings: HashMap::new(),
        }
    }

    /// The turn the rendering is in (the number of messages from a person so far).
    pub fn turn(&self) -> u64 {
        self.turn
    }

    /// Whether `line` opens a turn (holds a message from a person).
    pub fn opens_turn(line: &Line<'_>) -> bool {
        line.blocks.iter().any(|b| b.kind == BlockKind::User)
    }

    /// Render `line` into `out` (nothing, when its turn is not the one shown).
    pub fn line(&mut self, line: &Line<'_>, out: &mut dyn Write) -> Result<()> {
        let marks = match line.agent {
            Some(agent) => agent.format().marks(line.text()),
            None => Vec::new(),
        };
        for mark in &marks {
            self.mark(line, mark, out)?;
        }
        for block in &line.blocks {
            if block.kind == BlockKind::User {
                self.turn += 1;
            }
            self.block(line, block, out)?;
        }
        Ok(())
    }

    fn shown(&self) -> bool {
        self.only.is_none_or(|n| n == self.turn)
    }

    /// The turn's heading, once, before the first thing shown in it.
    fn heading(&mut self, line: &Line<'_>, out: &mut dyn Write) -> Result<()> {
        if self.headed == Some(self.turn) {
            return Ok(());
        }
        self.headed = Some(self.turn);
        let when = time_of(line)
            .map(|at| format!("  {}", at.seconds()))
            .unwrap_or_default();
        let heading = format!("turn {}{when}", self.turn);
        write_line(
            out,
            &format!("{}", self.style.paint(Role::Heading, heading)),
        )
    }

    fn mark(&mut self, line: &Line<'_>, mark: &Mark, out: &mut dyn Write) -> Result<()> {
        let (setting, value) = match mark {
            Mark::Model(model) => ("model", model.clone()),
            Mark::Thinking(level) => ("thinking level", level.clone()),
            Mark::Compaction { tokens_before } => {
                if !self.shown() {
                    return Ok(());
                }
                self.heading(line, out)?;
                let tokens = tokens_before
                    .map(|t| format!(" ({t} tokens before)"))
                    .unwrap_or_default();
                let text = format!("  compaction{tokens}");
                return write_line(out, &format!("{}", self.style.paint(Role::Heading, text)));
            }
        };
        // A line that repeats the setting in use (every Codex turn names its model) says nothing.
        if self.settings.get(setting) == Some(&value) {
            return Ok(());
        }
        self.settings.insert(setting, value.clone());
        if !self.shown() {
            return Ok(());
        }
        self.heading(line, out)?;
        let text = format!("  {setting}: {value}");
        write_line(out, &format!("{}", self.style.paint(Role::Dim, text)))
    }

    fn block(&mut self, line: &Line<'_>, block: &Block, out: &mut dyn Write) -> Result<()> {
        if !self.shown() {
            return Ok(());
        }
        self.heading(line, out)?;
        let style = self.style;
        let label = |role: Role, text: String| format!("  {}", style.paint(role, text));
        match block.kind {
            BlockKind::User => {
                write_line(out, &label(Role::User, "user:".into()))?;
                self.text(out, &block.text, Role::User, false)
            }
            BlockKind::Context => {
                let lines = crate::blocks::block::log_lines(&block.text);
                let first = block.text.lines().next().unwrap_or_default();
                let text = format!("context: {} ({lines} lines)", clip(first, 80));
                write_line(out, &label(Role::Dim, text))
            }
            BlockKind::Thinking => {
                write_line(out, &label(Role::Dim, "thinking:".into()))?;
                self.text(out, &block.text, Role::Dim, true)
            }
            BlockKind::Text => {
                write_line(out, &label(Role::User, "assistant:".into()))?;
                self.text(out, &block.text, Role::User, false)
            }
            BlockKind::Summary => {
                write_line(out, &label(Role::Heading, "summary:".into()))?;
                self.text(out, &block.text, Role::User, false)
            }
            BlockKind::ToolCall => self.call(out, block),
            BlockKind::ToolResult => self.result(out, block),
        }
    }

    /// A tool call: a shell command as `$ command`, a tool that takes one text (a patch) with
    /// that text below it, any other with its arguments on its line.
    fn call(&mut self, out: &mut dyn Write, block: &Block) -> Result<()> {
        let Some(call) = &block.call else {
            return write_line(out, &format!("  tool: {}", clip(&block.text, ARGS_CHARS)));
        };
        let style = self.style;
        let outcome = block
            .outcome
            .map(|o| format!(" ({})", outcome_words(o)))
            .unwrap_or_default();
        if let Some(command) = command_of(&call.name, &call.args) {
            let mut lines = command.lines();
            let first = lines.next().unwrap_or_default();
            let head = format!("tool {}: $ {}{outcome}", call.name, clip(first, LINE_CHARS));
            write_line(out, &format!("  {}", style.paint(Role::Tool, head)))?;
            for rest in lines {
                write_line(out, &format!("{INDENT}{}", clip(rest, LINE_CHARS)))?;
            }
            return Ok(());
        }
        let single_text = call
            .args
            .as_object()
            .filter(|args| args.len() == 1)
            .and_then(|args| args.values().next()?.as_str());
        match single_text {
            Some(text) if text.contains('\n') => {
                let head = format!("tool {}:{outcome}", call.name);
                write_line(out, &format!("  {}", style.paint(Role::Tool, head)))?;
                self.text(out, text, Role::Tool, true)
            }
            _ => {
                let args = serde_json::to_string(&call.args).unwrap_or_default();
                let head = format!("tool {}: {}{outcome}", call.name, clip(&args, ARGS_CHARS));
                write_line(out, &format!("  {}", style.paint(Role::Tool, head)))
            }
        }
    }

    /// A tool's result: how it ended and how long it is, then its text (long ones cut).
    fn result(&mut self, out: &mut dyn Write, block: &Block) -> Result<()> {
        let text = block.shown_text();
        let lines = crate::blocks::block::log_lines(text);
        let tool = block.tool.as_deref().unwrap_or("tool");
        let (role, ended) = match block.outcome {
            Some(outcome) if outcome.failed => (Role::Bad, format!("{}, ", outcome_words(outcome))),
            Some(outcome) => (Role::Good, format!("{}, ", outcome_words(outcome))),
            None => (Role::Tool, String::new()),
        };
        let image = if block.has_image { ", an image" } else { "" };
        let plural = if lines == 1 { "" } else { "s" };
        let head = format!("result {tool}: {ended}{lines} line{plural}{image}");
        write_line(out, &format!("  {}", self.style.paint(role, head)))?;
        self.text(out, text, Role::Dim, true)
    }

    /// `text` indented, each line in `role` (plain for `Role::User` outside a person's words);
    /// `cut`: a long text shows its first and last lines only.
    fn text(&self, out: &mut dyn Write, text: &str, role: Role, cut: bool) -> Result<()> {
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        let elide = cut && total > HEAD + TAIL + 1;
        for (at, line) in lines.iter().enumerate() {
            if elide && at == HEAD {
                let note = format!("… {} lines …", total - HEAD - TAIL);
                write_line(
                    out,
                    &format!("{INDENT}{}", self.style.paint(Role::Dim, note)),
                )?;
            }
            if elide && (HEAD..total - TAIL).contains(&at) {
                continue;
            }
            let shown = clip(line, LINE_CHARS);
            let painted = match role {
                Role::Dim | Role::Tool => self.style.paint(role, shown).to_string(),
                _ => shown.into_owned(),
            };
            write_line(out, &format!("{INDENT}{painted}"))?;
        }
        Ok(())
    }
}

/// When `line` was written, as its agent dates it.
pub fn time_of(line: &Line<'_>) -> Option<Instant> {
    let agent = line.agent?;
    let (entry, _) = agent.format().skeleton(line.text(), 1, &HashMap::new())?;
    Instant::parse(&entry.timestamp)
}

/// `exit 1`, `error`, `ok`.
fn outcome_words(outcome: crate::ledger::Outcome) -> String {
    match (outcome.exit, outcome.failed) {
        (Some(code), _) => format!("exit {code}"),
        (None, true) => "error".into(),
        (None, false) => "ok".into(),
    }
}

/// `text` cut to `max` characters, with `…` and how much more there was.
fn clip(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => text.into(),
        Some((at, _)) => format!("{}… ({} more bytes)", &text[..at], text.len() - at).into(),
    }
}

fn write_line(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .map_err(stdout_failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_keep_their_first_and_last_lines() {
        let renderer = Renderer::new(Style::PLAIN, None);
        let text: Vec<String> = (1..=40).map(|i| format!("line {i}")).collect();
        let mut out = Vec::new();
        renderer
            .text(&mut out, &text.join("\n"), Role::Dim, true)
            .unwrap();
        let shown = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = shown.lines().map(str::trim).collect();
        assert_eq!(lines.len(), HEAD + 1 + TAIL);
        assert_eq!(lines[0], "line 1");
        assert_eq!(lines[HEAD], "… 25 lines …");
        assert_eq!(lines.last(), Some(&"line 40"));
        assert_eq!(clip("éééé", 2), "éé… (4 more bytes)");
    }
}
