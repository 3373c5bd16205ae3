//! A session's ends, as a listing needs them: its agent and opening (id, cwd) from its first line,
//! its start (the timestamp of its first line that has one) and its last activity (that of its
//! last line that has one). Read from the store without the session's large strings
//! (`store::skim`), or from the tail of the file on disk: a few kilobytes whatever the session's
//! size (a Codex `.jsonl.zst` archive, which cannot be read from
//! its end, is streamed through).

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use crate::agents::{Agent, Meta};
use crate::error::{IoContext, Result};
use crate::ledger::detect;
use crate::store::Store;
use crate::store::manifest::Manifest;
use crate::store::skim;
use crate::time::Instant;

/// How many of the last lines are looked at for a timestamp.
const TAIL_LINES: usize = 16;
/// How many bytes may be read for them (a line of megabytes has its timestamp elsewhere).
const LIMIT: usize = 8 << 20;
/// How much of a file's end is read at a time.
const CHUNK: u64 = 64 << 10;

/// What a session's first line says: its agent and opening.
pub fn opening(store: &Store, manifest: &Manifest) -> Result<Option<(Agent, Meta)>> {
    let first = skim::first_lines(store, manifest, 1, LIMIT)?;
    Ok(first.first().and_then(|line| Agent::of_first_line(line)))
}

/// When a folded session started: the timestamp of its first line that has one (a Claude Code
/// transcript may open with side records that have none), read from the store.
pub fn folded_start(store: &Store, manifest: &Manifest) -> Result<Option<Instant>> {
    let lines = skim::first_lines(store, manifest, TAIL_LINES, LIMIT)?;
    let agent = lines.first().and_then(|line| detect(line));
    Ok(first_dated(agent, &lines))
}

/// The last activity of a folded session, read from the store.
pub fn folded_activity(
    store: &Store,
    manifest: &Manifest,
    agent: Option<Agent>,
) -> Result<Option<Instant>> {
    let lines = skim::last_lines(store, manifest, TAIL_LINES, LIMIT)?;
    Ok(first_dated(agent, &lines))
}

/// The last activity of the session file at `path`.
pub fn file_activity(path: &Path, agent: Option<Agent>) -> Result<Option<Instant>> {
    let lines = if crate::input::is_zstd(path) {
        streamed_tail(path)?
    } else {
        file_tail(path)?
    };
    Ok(first_dated(agent, &lines))
}

/// The timestamp of the first of `lines` that has one (for the last activity, the last line
/// first), as its agent reads it.
fn first_dated(agent: Option<Agent>, lines: &[Vec<u8>]) -> Option<Instant> {
    let no_ids = HashMap::new();
    lines.iter().find_map(|line| {
        let agent = agent.or_else(|| detect(line))?;
        let (entry, _) = agent.format().skeleton(line, 1, &no_ids)?;
        Instant::parse(&entry.timestamp)
    })
}

/// The last lines of a plain file, the last first, read backwards from its end.
fn file_tail(path: &Path) -> Result<Vec<Vec<u8>>> {
    let mut file = crate::input::open_file(path)?;
    let size = file.metadata().with_path("stat", path)?.len();
    let mut tail: Vec<u8> = Vec::new();
    let mut start = size;
    while start > 0 {
        let from = start.saturating_sub(CHUNK);
        let mut chunk = vec![0; (start - from) as usize];
        file.seek(SeekFrom::Start(from)).with_path("read", path)?;
        file.read_exact(&mut chunk).with_path("read", path)?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        start = from;
        let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
        if memchr::memchr_iter(b'\n', body).count() >= TAIL_LINES || tail.len() > LIMIT {
            break;
        }
    }
    let body = tail.strip_suffix(b"\n").unwrap_or(&tail);
    let mut lines: Vec<Vec<u8>> = body.rsplit(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if start > 0 {
        lines.pop(); // cut off at its start
    }
    lines.truncate(TAIL_LINES);
    Ok(lines)
}

/// The last lines of a compressed file, the last first, streamed through.
fn streamed_tail(path: &Path) -> Result<Vec<Vec<u8>>> {
    let mut input = crate::input::open(path)?;
    let mut last: VecDeque<Vec<u8>> = VecDeque::new();
    loop {
        let mut line = Vec::new();
        if input.read_until(b'\n', &mut line).with_path("read", path)? == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if last.len() == TAIL_LINES {
            last.pop_front();
        }
        last.push_back(line);
    }
    Ok(last.into_iter().rev().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_with_a_timestamp_is_the_last_activity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut text = String::from(
            r#"{"timestamp":"2026-05-11T10:00:00.000Z","type":"session_meta","payload":{"id":"x"}}"#,
        );
        text.push('\n');
        for i in 0..5000 {
            text.push_str(&format!(
                "{{\"timestamp\":\"2026-05-11T10:{:02}:00.000Z\",\"type\":\"event_msg\",\"payload\":{{}}}}\n",
                i % 60
            ));
        }
        text.push_str("not json\n");
        std::fs::write(&path, &text).unwrap();
        let expected = Instant::parse("2026-05-11T10:19:00Z");
        assert_eq!(file_activity(&path, Some(Agent::Codex)).unwrap(), expected);
        assert_eq!(file_activity(&path, None).unwrap(), expected);
        let packed = dir.path().join("s.jsonl.zst");
        std::fs::write(&packed, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
        assert_eq!(file_activity(&packed, None).unwrap(), expected);
        std::fs::write(&path, "").unwrap();
        assert_eq!(file_activity(&path, None).unwrap(), None);
    }
}
