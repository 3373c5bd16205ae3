//! How two sessions relate (`ctxfold diff`): the history they share (the lines both begin with,
//! byte for byte, as a fork, a resume or a growing file keeps them), then what each has after the
//! point where they part, rendered turn by turn as `show` renders it, the turns paired in order.
//! Both sessions stream side by side: memory is a line while they agree, a turn of each after.

use std::io::Sink;

use serde::Serialize;

use super::render::Renderer;
use crate::cli::style::Style;
use crate::error::Result;
use crate::ledger::Source;
use crate::ledger::stream::{Line, Stream};

/// The history both sessions begin with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Common {
    /// Whole lines, identical in both.
    pub lines: u64,
    pub bytes: u64,
    /// The turn the last of them is in (0 when there are none, or none from a person).
    pub turn: u64,
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
        loop {
            let line_a = a.stream.next_line()?;
            let line_b = b.stream.next_line()?;
            match (line_a, line_b) {
                (Some(line_a), Some(line_b)) if line_a.raw == line_b.raw => {
                    a.state.common(&line_a)?;
                    b.state.common(&line_b)?;
                    common.lines += 1;
                    common.bytes += line_a.raw.len() as u64;
                    common.turn = a.state.renderer.turn();
                }
                (line_a, line_b) => {
                    // The first lines after the point (none for a side that ended).
                    if let Some(line) = line_a {
                        a.state.take(&line)?;
                    }
                    if let Some(line) = line_b {
                        b.state.take(&line)?;
                    }
                    return Ok(Self { a, b, common });
                }
            }
        }
    }

    pub fn common(&self) -> Common {
        self.common
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

struct Side<'s> {
    stream: Stream<'s>,
    state: State,
    /// Its next turn, read ahead to pair it with the other side's.
    peeked: Option<Chunk>,
}

/// A side's rendering: the turn being gathered, and the next one's start when its opening line
/// has been read already.
struct State {
    renderer: Renderer,
    current: Option<Chunk>,
    ready: Option<Chunk>,
    after: After,
}

impl<'s> Side<'s> {
    fn new(source: &'s dyn Source) -> Result<Self> {
        Ok(Self {
            stream: Stream::new(source)?,
            peeked: None,
            state: State {
                renderer: Renderer::new(Style::PLAIN, None),
                current: None,
                ready: None,
                after: After::default(),
            },
        })
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
    fn common(&mut self, line: &Line<'_>) -> Result<()> {
        self.renderer.line(line, &mut Sink::default())
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
