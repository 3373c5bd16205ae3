//! How two sessions relate (`ctxfold diff`): the history they share, then what each has after
//! the point where they part, rendered turn by turn as `show` renders it, the turns paired in
//! order.
//!
//! History is compared as the agent means it, not byte for byte. A fork or a resume copies a
//! session's lines into a new file, and the agent may rewrite them there (Claude Code gives each
//! row the new `sessionId`; Codex stamps each line with the time of the copy), open the new file
//! with a line of its own (Codex's `session_meta`, Pi's header) or leave side records out (Claude
//! Code's `file-history-snapshot`): each agent says what a line is apart from its file
//! ([`Likeness`]). Two lines are the same entry when they are byte for byte, or when their
//! likenesses are and neither is aside; Claude Code's rows and Pi's entries keep their identity
//! (`uuid`, `id`) in what is compared. Lines aside are passed over on either side where that lets
//! the entries after them meet, and the common history ends at the last entry both have.
//!
//! Both sessions stream side by side: memory is a few lines while they agree (the lines aside
//! read ahead), a turn of each after.

use std::collections::VecDeque;

use serde::Serialize;

use super::render::{Renderer, time_of};
use crate::agents::Likeness;
use crate::cli::style::Style;
use crate::error::Result;
use crate::ledger::stream::{Line, Stream};
use crate::ledger::{Block, BlockKind, Source};
use crate::time::Instant;

/// How many lines aside are read ahead on each side, looking for the entry after them.
const AHEAD: usize = 64;

/// Characters of the prompt that names the turn where the sessions part.
const PROMPT_CHARS: usize = 72;

/// The history both sessions begin with, through the last entry they share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Common {
    /// A's lines through it (lines aside among them included).
    pub lines: u64,
    pub bytes: u64,
    /// B's lines through it: fewer or more than A's where a copy left lines out or added its
    /// own.
    pub b_lines: u64,
    pub b_bytes: u64,
    /// The turn the last of them is in (0 when there are none, or none from a person).
    pub turn: u64,
    /// That turn as a person knows it: the first line of the message that opened it, and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Instant>,
}

/// What one session has after the point where the two part.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct After {
    pub lines: u64,
    pub bytes: u64,
    /// The turns that begin after it (a message from a person each).
    pub turns: u64,
}

/// One turn's worth of a session after the point where the two part, rendered.
pub struct Chunk {
    /// The turn it is (the first may be the one they part in, continued).
    pub turn: u64,
    pub text: String,
}

/// Two sessions read side by side.
pub struct Fork<'s> {
    a: Side<'s>,
    b: Side<'s>,
    common: Common,
}

impl<'s> Fork<'s> {
    /// Read `a` and `b` up to the point where they part.
    pub fn new(a: &'s dyn Source, b: &'s dyn Source) -> Result<Self> {
        let mut a = Side::new(a)?;
        let mut b = Side::new(b)?;
        let mut common = Common::default();
        while let Some((i, j)) = meeting(&mut a, &mut b)? {
            let same_bytes = a.ahead[i].raw == b.ahead[j].raw;
            let last_a = a.common(i)?;
            let last_b = b.common(j)?;
            // Sessions that only open alike (an agent's opening lines, the same but for the time
            // they were written) share no history until a message from a person is among it.
            if !same_bytes && a.state.renderer.turn() == 0 {
                continue;
            }
            a.state.settle();
            b.state.settle();
            common = Common {
                lines: last_a.0,
                bytes: last_a.1,
                b_lines: last_b.0,
                b_bytes: last_b.1,
                turn: a.state.renderer.turn(),
                prompt: a.state.opener.clone().map(|(prompt, _)| prompt),
                at: a.state.opener.as_ref().and_then(|(_, at)| *at),
            };
        }
        // The lines not settled as common, and those read ahead, are the first after the point
        // (none for a side that ended).
        a.part()?;
        b.part()?;
        Ok(Self { a, b, common })
    }

    pub fn common(&self) -> &Common {
        &self.common
    }

    /// The next turn after the point where they part, from each side that has it (`None` for a
    /// side whose next turn is a later one, or that has ended), or `None` when both have ended.
    pub fn next_turns(&mut self) -> Result<Option<(Option<Chunk>, Option<Chunk>)>> {
        self.a.peek()?;
        self.b.peek()?;
        let turn = |side: &Side<'_>| side.peeked.as_ref().map(|c| c.turn);
        let Some(next) = [turn(&self.a), turn(&self.b)].into_iter().flatten().min() else {
            return Ok(None);
        };
        let take = |side: &mut Side<'_>| match turn(side) == Some(next) {
            true => side.peeked.take(),
            false => None,
        };
        Ok(Some((take(&mut self.a), take(&mut self.b))))
    }

    /// What each has after the point, once `next_turns` has said `None`.
    pub fn after(&self) -> (After, After) {
        (self.a.state.after, self.b.state.after)
    }
}

/// Where the two sides meet next: the entry `i` lines ahead in A that is the entry `j` lines
/// ahead in B, the lines before each aside; the fewest passed over first. `None`: they part.
fn meeting(a: &mut Side<'_>, b: &mut Side<'_>) -> Result<Option<(usize, usize)>> {
    a.fill(1)?;
    b.fill(1)?;
    match (a.ahead.front(), b.ahead.front()) {
        (Some(x), Some(y)) if x.raw == y.raw => return Ok(Some((0, 0))),
        (Some(_), Some(_)) => {}
        _ => return Ok(None),
    }
    a.read_aside()?;
    b.read_aside()?;
    let (n, m) = (a.ahead.len(), b.ahead.len());
    for passed in 0..n + m - 1 {
        for i in passed.saturating_sub(m - 1)..=passed.min(n - 1) {
            let (x, y) = (&a.ahead[i], &b.ahead[passed - i]);
            if x.meets(y) {
                return Ok(Some((i, passed - i)));
            }
        }
    }
    Ok(None)
}

/// A line read ahead, held until it is known to be common or after the point.
struct Held {
    number: u64,
    offset: u64,
    raw: Vec<u8>,
    agent: Option<crate::agents::Agent>,
    blocks: Vec<Block>,
    likeness: std::cell::OnceCell<Likeness>,
}

impl Held {
    fn of(line: Line<'_>) -> Self {
        Self {
            number: line.number,
            offset: line.offset,
            raw: line.raw.to_vec(),
            agent: line.agent,
            blocks: line.blocks,
            likeness: std::cell::OnceCell::new(),
        }
    }

    fn line(&mut self) -> Line<'_> {
        Line {
            number: self.number,
            offset: self.offset,
            raw: &self.raw,
            agent: self.agent,
            blocks: std::mem::take(&mut self.blocks),
        }
    }

    /// What it is apart from its file, as its agent says (worked out when first asked).
    fn likeness(&self) -> &Likeness {
        self.likeness.get_or_init(|| {
            let text = self.raw.strip_suffix(b"\n").unwrap_or(&self.raw);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            self.agent
                .map(|agent| agent.format().likeness(text))
                .unwrap_or_default()
        })
    }

    /// Whether it is the same entry as `other` (see the module's rule).
    fn meets(&self, other: &Held) -> bool {
        if self.raw == other.raw {
            return true;
        }
        let (mine, theirs) = (self.likeness(), other.likeness());
        !mine.aside && !theirs.aside && mine.key.is_some() && mine.key == theirs.key
    }
}

struct Side<'s> {
    stream: Stream<'s>,
    /// Lines read and not yet known to be common or after the point: lines aside, then at most
    /// one entry.
    ahead: VecDeque<Held>,
    state: State,
    /// Its next turn, read ahead to pair it with the other side's.
    peeked: Option<Chunk>,
}

/// A side's rendering: the turn being gathered, and the next one's start when its opening line
/// has been read already; the message from a person that opened the turn it is in; the lines
/// met in the other session but not settled as common history yet, rendered.
struct State {
    renderer: Renderer,
    current: Option<Chunk>,
    ready: Option<Chunk>,
    after: After,
    opener: Option<(String, Option<Instant>)>,
    unsettled: (After, Vec<u8>),
}

impl<'s> Side<'s> {
    fn new(source: &'s dyn Source) -> Result<Self> {
        Ok(Self {
            stream: Stream::new(source)?,
            ahead: VecDeque::new(),
            peeked: None,
            state: State {
                renderer: Renderer::new(Style::PLAIN, None),
                current: None,
                ready: None,
                after: After::default(),
                opener: None,
                unsettled: Default::default(),
            },
        })
    }

    /// Read ahead until `n` lines are held, or the session ends.
    fn fill(&mut self, n: usize) -> Result<()> {
        while self.ahead.len() < n {
            match self.stream.next_line()? {
                Some(line) => self.ahead.push_back(Held::of(line)),
                None => break,
            }
        }
        Ok(())
    }

    /// Read ahead past the lines aside, to the entry after them (within [`AHEAD`] lines).
    fn read_aside(&mut self) -> Result<()> {
        while self.ahead.back().is_some_and(|h| h.likeness().aside) && self.ahead.len() < AHEAD {
            let held = self.ahead.len();
            self.fill(held + 1)?;
            if self.ahead.len() == held {
                break;
            }
        }
        Ok(())
    }

    /// The lines held through the `i`th, met in the other session: unsettled until
    /// [`State::settle`]. Returns the line number and the end offset of the last.
    fn common(&mut self, i: usize) -> Result<(u64, u64)> {
        let mut end = (0, 0);
        for mut held in self.ahead.drain(..=i) {
            let line = held.line();
            end = (line.number, line.offset + line.raw.len() as u64);
            self.state.opens(&line);
            let (unsettled, text) = &mut self.state.unsettled;
            unsettled.lines += 1;
            unsettled.bytes += line.raw.len() as u64;
            self.state.renderer.line(&line, text)?;
        }
        Ok(end)
    }

    /// The lines unsettled and those held are the first after the point.
    fn part(&mut self) -> Result<()> {
        let (unsettled, text) = std::mem::take(&mut self.state.unsettled);
        self.state.after.lines += unsettled.lines;
        self.state.after.bytes += unsettled.bytes;
        if !text.is_empty() {
            self.state.current = Some(Chunk {
                turn: self.state.renderer.turn(),
                text: String::from_utf8_lossy(&text).into_owned(),
            });
        }
        while let Some(mut held) = self.ahead.pop_front() {
            self.state.take(&held.line())?;
        }
        Ok(())
    }

    /// Read its next turn ahead, unless it is read already or there is none.
    fn peek(&mut self) -> Result<()> {
        while self.peeked.is_none() {
            if let Some(chunk) = self.state.ready.take() {
                self.peeked = Some(chunk);
            } else if let Some(line) = self.stream.next_line()? {
                self.state.take(&line)?;
            } else {
                self.peeked = self.state.current.take();
                break;
            }
        }
        Ok(())
    }
}

impl State {
    /// The lines met so far are common history.
    fn settle(&mut self) {
        self.unsettled = Default::default();
    }

    /// Note the message from a person that `line` opens a turn with, if it does.
    fn opens(&mut self, line: &Line<'_>) {
        let Some(user) = line.blocks.iter().rfind(|b| b.kind == BlockKind::User) else {
            return;
        };
        let first = user.text.lines().map(str::trim).find(|l| !l.is_empty());
        let first = first.unwrap_or_default();
        let prompt = match first.char_indices().nth(PROMPT_CHARS) {
            Some((cut, _)) => format!("{}…", &first[..cut]),
            None => first.to_string(),
        };
        self.opener = Some((prompt, time_of(line)));
    }

    /// A line after the point: a turn that opens closes the one gathered.
    fn take(&mut self, line: &Line<'_>) -> Result<()> {
        let opens = Renderer::opens_turn(line);
        if opens {
            self.after.turns += 1;
            self.ready = self.current.take();
        }
        self.after.lines += 1;
        self.after.bytes += line.raw.len() as u64;
        let mut text = Vec::new();
        self.renderer.line(line, &mut text)?;
        let chunk = self.current.get_or_insert_with(|| Chunk {
            turn: 0,
            text: String::new(),
        });
        chunk.turn = self.renderer.turn();
        chunk.text.push_str(&String::from_utf8_lossy(&text));
        Ok(())
    }
}

/// How two sessions relate, once both are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Relation {
    /// The same lines.
    Same,
    /// The second is the first and more (a session appended to since: `status`'s `grown`).
    Grown,
    /// The first is the second and more.
    Shrunk,
    /// Both have lines the other has not after their common history (a fork, or a change).
    Parted,
}

impl Relation {
    pub fn of(a: After, b: After) -> Self {
        match (a.lines, b.lines) {
            (0, 0) => Relation::Same,
            (0, _) => Relation::Grown,
            (_, 0) => Relation::Shrunk,
            _ => Relation::Parted,
        }
    }
}

/// A pair of turns compared: each line of their renderings, `-` only in the first, `+` only in
/// the second, ` ` in both, with `context` lines of each change around it (the rest left out);
/// empty when they render the same.
pub fn changes(a: Option<&Chunk>, b: Option<&Chunk>, context: usize) -> Vec<(char, String)> {
    fn text(chunk: Option<&Chunk>) -> &str {
        chunk.map(|c| c.text.as_str()).unwrap_or_default()
    }
    let diff = similar::TextDiff::from_lines(text(a), text(b));
    let mut lines = Vec::new();
    for group in diff.grouped_ops(context) {
        for op in &group {
            for change in diff.iter_changes(op) {
                let tag = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                let line = change.value().strip_suffix('\n').unwrap_or(change.value());
                lines.push((tag, line.to_string()));
            }
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::FileSource;

    fn session(dir: &std::path::Path, name: &str, lines: &[&str]) -> FileSource {
        let path = dir.join(name);
        std::fs::write(&path, lines.concat()).unwrap();
        FileSource(path)
    }

    const HEADER: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-20T10:00:00.000Z\",\"cwd\":\"/x\"}\n";

    fn user(id: &str, text: &str) -> String {
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":null,\"timestamp\":\"2026-01-20T10:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\",\"timestamp\":1}}}}\n"
        )
    }

    #[test]
    fn forks_part_where_their_lines_do_and_each_side_goes_on_by_turns() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two, three) = (user("a", "one"), user("b", "two"), user("c", "three"));
        let base = session(dir.path(), "a.jsonl", &[HEADER, &one, &two]);
        let fork = session(dir.path(), "b.jsonl", &[HEADER, &one, &three, &two]);
        let mut diff = Fork::new(&base, &fork).unwrap();
        let common = diff.common();
        assert_eq!(common.lines, 2);
        assert_eq!(common.bytes, (HEADER.len() + one.len()) as u64);
        assert_eq!(common.turn, 1);
        let (a, b) = diff.next_turns().unwrap().unwrap();
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!((a.turn, b.turn), (2, 2));
        let changes = changes(Some(&a), Some(&b), 3);
        assert!(changes.contains(&('-', "    two".into())), "{changes:?}");
        assert!(changes.contains(&('+', "    three".into())), "{changes:?}");
        let (a, b) = diff.next_turns().unwrap().unwrap();
        assert!(a.is_none());
        assert!(b.unwrap().text.contains("    two"));
        assert!(diff.next_turns().unwrap().is_none());
        let (after_a, after_b) = diff.after();
        assert_eq!((after_a.lines, after_a.turns), (1, 1));
        assert_eq!(
            (after_b.lines, after_b.turns, after_b.bytes),
            (2, 2, (three.len() + two.len()) as u64)
        );
        assert_eq!(Relation::of(after_a, after_b), Relation::Parted);

        // A session and itself grown.
        let grown = session(dir.path(), "c.jsonl", &[HEADER, &one, &two, &three]);
        let mut diff = Fork::new(&base, &grown).unwrap();
        assert_eq!(diff.common().lines, 3);
        while diff.next_turns().unwrap().is_some() {}
        assert_eq!(
            Relation::of(diff.after().0, diff.after().1),
            Relation::Grown
        );
        let mut same = Fork::new(&base, &base).unwrap();
        assert!(same.next_turns().unwrap().is_none());
        assert_eq!(Relation::of(same.after().0, same.after().1), Relation::Same);
    }
}
