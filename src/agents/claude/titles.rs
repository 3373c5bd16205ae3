//! What discovery reads of a Claude Code transcript beyond its first line: the title its resume
//! picker shows, the cwd (the first line is often a side record without one), and whether the
//! session is being written.
//!
//! The title, as 2.1.332's picker orders it: the latest `agent-name`, else the latest
//! `custom-title` (`/rename`, `--name`, `/branch`), else the latest `ai-title`, else a `summary`
//! line in the file's last 64 KiB (legacy; the picker reads summaries from the tail only), else
//! the latest prompt (`last-prompt`), else the first prompt a person typed, else the slash command
//! of the first command row. Texts are made one line (newlines become spaces), trimmed, and cut to
//! 200 characters with `…`, as Claude Code cuts them.
//!
//! Claude Code 1.0.x titled a conversation from another file: a `summary` line names the row its
//! conversation ends at (`leafUuid`), and that row may be in another transcript of the project (a
//! file may hold nothing but such lines). Where the picker's rules give a session no better title
//! than its first prompt, a `summary` in another file of its folder that names one of its rows
//! titles it (the one naming its latest row): [`across`].
//!
//! Active: Claude Code registers each running process in `<home>/sessions/<pid>.json` (with its
//! `sessionId`) and removes the file at exit; a session registered by a live process, or whose file
//! (or, for a subagent, whose parent's registration) changed in the last [`ACTIVE_WINDOW`], is
//! active. Any other is idle, and counts as archived: `fold --remove-source` may remove it.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Read};
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use memchr::memmem;
use serde::Deserialize;

use super::lines::{Head, Line, objects};
use crate::agents::json::{self, Scratch, lenient};
use crate::agents::lines::{MAX_META_LINE, for_each_line};
use crate::agents::{Across, Describe, Described, Titling};

/// A session whose file changed this recently counts as active.
pub const ACTIVE_WINDOW: Duration = Duration::from_secs(10 * 60);

/// How much of a file's end Claude Code's picker reads for `summary` lines.
const TAIL_BYTES: u64 = 64 * 1024;

/// How long a title may be, in characters, before it is cut (with `…`).
const TITLE_CHARS: usize = 200;

pub(super) struct Describer<'h> {
    home: &'h Path,
    live: OnceLock<HashSet<String>>,
}

impl<'h> Describer<'h> {
    pub(super) fn new(home: &'h Path) -> Self {
        Self {
            home,
            live: OnceLock::new(),
        }
    }

    fn active(&self, id: &str, path: &Path) -> bool {
        let live = self.live.get_or_init(|| live_sessions(self.home));
        // A subagent's file lies in `<parent id>/subagents/`: it is written while its parent runs.
        let parent = path
            .ancestors()
            .find(|dir| dir.file_name() == Some("subagents".as_ref()))
            .and_then(Path::parent)
            .and_then(Path::file_name)
            .and_then(|name| name.to_str());
        let registered = live.contains(id) || parent.is_some_and(|p| live.contains(p));
        let recent = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_none_or(|age| age < ACTIVE_WINDOW);
        registered || recent
    }
}

impl Describe for Describer<'_> {
    fn describe(&self, id: &str, path: &Path, first: &[u8], rest: &mut dyn BufRead) -> Described {
        let titled = title(first.chain(&b"\n"[..]).chain(rest));
        Described {
            title: titled.title,
            cwd: titled.cwd,
            active: Some(self.active(id, path)),
            across: titled.across,
            ..Described::default()
        }
    }
}

/// The titles the files of one folder give each other's sessions (see the module's rule).
pub(super) fn across(sessions: &mut [Titling<'_>]) {
    // Each row a summary names, with the summary and the file it is in (a later line wins).
    let mut given: HashMap<String, (usize, String)> = HashMap::new();
    for (at, session) in sessions.iter().enumerate() {
        for (leaf, title) in &session.across.titles {
            given.insert(leaf.clone(), (at, title.clone()));
        }
    }
    for (at, session) in sessions.iter_mut().enumerate() {
        let elsewhere: HashMap<&str, &str> = (given.iter())
            .filter(|(_, (giver, _))| *giver != at)
            .map(|(leaf, (_, title))| (leaf.as_str(), title.as_str()))
            .collect();
        if !session.across.plain || elsewhere.is_empty() {
            continue;
        }
        if let Some(title) = latest_named(session.path, &elsewhere) {
            *session.title = Some(title.to_string());
        }
    }
}

/// The title of the latest row of the file at `path` that `titles` names.
fn latest_named<'t>(path: &Path, titles: &HashMap<&str, &'t str>) -> Option<&'t str> {
    let mut input = crate::input::open(path).ok()?;
    let mut latest = None;
    let _ = for_each_line(&mut input, MAX_META_LINE, |line| {
        let named = titles
            .keys()
            .any(|leaf| memmem::find(line, leaf.as_bytes()).is_some());
        for object in objects(line).into_iter().filter(|_| named) {
            let mut scratch = Scratch::default();
            let uuid = json::parse::<Head<'_>>(object, &mut scratch).and_then(|h| h.value.uuid);
            if let Some(title) = uuid.and_then(|uuid| titles.get(uuid.as_ref())) {
                latest = Some(*title);
            }
        }
        true
    });
    latest
}

/// A reader that counts the bytes taken from it.
struct Counting<'c, R> {
    inner: R,
    read: &'c Cell<u64>,
}

impl<R: BufRead> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counting<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, n: usize) {
        self.read.set(self.read.get() + n as u64);
        self.inner.consume(n);
    }
}

/// What the title reader found.
#[derive(Default)]
struct Found {
    agent_name: Option<String>,
    custom_title: Option<String>,
    ai_title: Option<String>,
    /// The latest `summary`, and where its line starts.
    summary: Option<(String, u64)>,
    /// Every `summary`: the row it names, and its text.
    summaries: Vec<(String, String)>,
    last_prompt: Option<String>,
    first_prompt: Option<String>,
    command: Option<String>,
    cwd: Option<String>,
}

struct Titled {
    title: Option<String>,
    cwd: Option<String>,
    across: Across,
}

/// Markers of the lines worth parsing for a title or a cwd.
const MARKERS: &[&[u8]] = &[
    b"\"agent-name\"",
    b"\"custom-title\"",
    b"\"ai-title\"",
    b"\"summary\"",
    b"\"last-prompt\"",
];

#[derive(Deserialize, Default)]
#[serde(default)]
struct Cwd<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    cwd: Option<std::borrow::Cow<'a, str>>,
}

fn title(input: impl BufRead) -> Titled {
    let read = Cell::new(0);
    let mut input = Counting {
        inner: input,
        read: &read,
    };
    let mut found = Found::default();
    // Called once a line is consumed: `read` is then where it ended.
    let _ = for_each_line(&mut input, MAX_META_LINE, |line| {
        let start = read.get().saturating_sub(line.len() as u64 + 1);
        read_line(line, start, &mut found);
        true
    });
    let total = read.get();
    let picked = found
        .agent_name
        .or(found.custom_title)
        .or(found.ai_title)
        .or_else(|| {
            let tail = total.saturating_sub(TAIL_BYTES);
            found
                .summary
                .filter(|(_, start)| *start >= tail)
                .map(|(s, _)| s)
        })
        .or(found.last_prompt);
    let plain = picked.is_none();
    Titled {
        title: picked.or(found.first_prompt).or(found.command),
        cwd: found.cwd,
        across: Across {
            titles: found.summaries,
            plain,
        },
    }
}

fn read_line(line: &[u8], start: u64, found: &mut Found) {
    let marked = MARKERS.iter().any(|m| memmem::find(line, m).is_some());
    let prompt = found.first_prompt.is_none() && memmem::find(line, b"\"user\"").is_some();
    let cwd = found.cwd.is_none() && memmem::find(line, b"\"cwd\"").is_some();
    if !(marked || prompt || cwd) {
        return;
    }
    for object in objects(line) {
        let mut scratch = Scratch::default();
        if cwd
            && found.cwd.is_none()
            && let Some(parsed) = json::parse::<Cwd<'_>>(object, &mut scratch)
        {
            found.cwd = parsed.value.cwd.map(|c| c.into_owned());
        }
        let mut scratch = Scratch::default();
        let Some(parsed) = json::parse::<Line<'_>>(object, &mut scratch) else {
            continue;
        };
        let line = parsed.value;
        let set = |slot: &mut Option<String>, text: &Option<std::borrow::Cow<'_, str>>| {
            if let Some(text) = text.as_deref().and_then(one_line) {
                *slot = Some(text);
            }
        };
        match line.kind.as_deref() {
            Some("agent-name") => set(&mut found.agent_name, &line.agent_name),
            Some("custom-title") => set(&mut found.custom_title, &line.custom_title),
            Some("ai-title") => set(&mut found.ai_title, &line.ai_title),
            Some("summary") => {
                if let Some(summary) = line.summary.as_deref().and_then(one_line) {
                    if let Some(leaf) = &line.leaf_uuid {
                        found.summaries.push((leaf.to_string(), summary.clone()));
                    }
                    found.summary = Some((summary, start));
                }
            }
            Some("last-prompt") => set(&mut found.last_prompt, &line.last_prompt),
            Some("user") if found.first_prompt.is_none() => {
                if let Some(prompt) = line.prompt() {
                    if prompt.person {
                        found.first_prompt = one_line(&prompt.text);
                    } else if found.command.is_none() {
                        found.command = command_name(&prompt.text);
                    }
                }
            }
            _ => {}
        }
    }
}

/// `text` made one line (newlines become spaces), trimmed, and cut to [`TITLE_CHARS`] characters
/// with `…`; `None` when nothing is left.
pub fn one_line(text: &str) -> Option<String> {
    let text = text.replace('\n', " ");
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut chars = text.char_indices();
    match chars.nth(TITLE_CHARS) {
        Some((cut, _)) => Some(format!("{}…", text[..cut].trim_end())),
        None => Some(text.to_string()),
    }
}

/// The slash command of a command row (`<command-name>/compact</command-name>…`).
fn command_name(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("<command-name>")?;
    let (name, _) = rest.split_once("</command-name>")?;
    one_line(name)
}

/// The session ids of the Claude Code processes running on this machine: `<home>/sessions/<pid>.json`
/// whose pid is alive.
fn live_sessions(home: &Path) -> HashSet<String> {
    #[derive(Deserialize)]
    struct Registration {
        pid: i32,
        #[serde(rename = "sessionId")]
        session_id: String,
    }
    let mut live = HashSet::new();
    let Ok(entries) = std::fs::read_dir(home.join("sessions")) else {
        return live;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        let Ok(registration) = serde_json::from_slice::<Registration>(&text) else {
            continue;
        };
        if alive(registration.pid) {
            live.insert(registration.session_id);
        }
    }
    live
}

/// Whether process `pid` exists (one we may not signal exists too).
fn alive(pid: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn title_of(lines: &[&str]) -> Option<String> {
        title(lines.join("\n").as_bytes()).title
    }

    const FIRST: &str = r#"{"parentUuid":null,"type":"user","message":{"role":"user","content":"fix the\nbuild"},"uuid":"u1","cwd":"/w","sessionId":"s"}"#;
    const CAVEAT: &str = r#"{"type":"user","message":{"content":"<local-command-caveat>x</local-command-caveat>"},"isMeta":true,"uuid":"m","sessionId":"s"}"#;
    const COMMAND: &str = r#"{"type":"user","message":{"content":"<command-name>/compact</command-name>"},"uuid":"c","sessionId":"s"}"#;
    const RESULT: &str = r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"out"}]},"uuid":"r","sessionId":"s"}"#;
    const LAST: &str =
        r#"{"type":"last-prompt","lastPrompt":"and the tests","leafUuid":"u1","sessionId":"s"}"#;
    const SUMMARY: &str = r#"{"type":"summary","summary":"Build fix","leafUuid":"u1"}"#;
    const AI: &str = r#"{"type":"ai-title","aiTitle":"Fixing the build","sessionId":"s"}"#;
    const CUSTOM: &str = r#"{"type":"custom-title","customTitle":"Mine","sessionId":"s"}"#;
    const NAME: &str = r#"{"type":"agent-name","agentName":"Named","sessionId":"s"}"#;

    #[test]
    fn titles_follow_the_pickers_order() {
        assert_eq!(
            title_of(&[CAVEAT, RESULT, FIRST]),
            Some("fix the build".into())
        );
        assert_eq!(title_of(&[COMMAND, CAVEAT]), Some("/compact".into()));
        assert_eq!(title_of(&[FIRST, LAST]), Some("and the tests".into()));
        assert_eq!(title_of(&[FIRST, LAST, SUMMARY]), Some("Build fix".into()));
        assert_eq!(
            title_of(&[SUMMARY, FIRST, AI, LAST]),
            Some("Fixing the build".into())
        );
        assert_eq!(title_of(&[CUSTOM, FIRST, AI, LAST]), Some("Mine".into()));
        assert_eq!(title_of(&[NAME, CUSTOM, FIRST, AI]), Some("Named".into()));
        let renamed = CUSTOM.replace("Mine", "Later");
        assert_eq!(title_of(&[CUSTOM, FIRST, &renamed]), Some("Later".into()));
        assert_eq!(title_of(&[RESULT]), None);
        assert_eq!(title(FIRST.as_bytes()).cwd.as_deref(), Some("/w"));
    }

    #[test]
    fn a_summary_counts_only_in_the_files_last_64_kib() {
        let filler = format!(
            r#"{{"type":"api-request-blob","blob":"{}","sessionId":"s"}}"#,
            "x".repeat(70 * 1024)
        );
        assert_eq!(
            title_of(&[SUMMARY, FIRST, &filler]),
            Some("fix the build".into())
        );
        assert_eq!(
            title_of(&[&filler, SUMMARY, FIRST]),
            Some("Build fix".into())
        );
    }

    #[test]
    fn titles_are_one_line_cut_as_claude_code_cuts_them() {
        assert_eq!(one_line("  a\nb  "), Some("a b".into()));
        assert_eq!(one_line(" \n "), None);
        let long = one_line(&"é".repeat(250)).unwrap();
        assert_eq!(long.chars().count(), 201);
        assert!(long.ends_with('…'));
        assert_eq!(one_line(&"é".repeat(200)).unwrap().chars().count(), 200);
    }

    #[test]
    fn a_registered_live_process_or_a_recent_write_makes_a_session_active() {
        let home = tempfile::tempdir().unwrap();
        let sessions = home.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        let me = std::process::id();
        std::fs::write(
            sessions.join(format!("{me}.json")),
            format!(r#"{{"pid":{me},"sessionId":"live","cwd":"/w"}}"#),
        )
        .unwrap();
        // A registration whose process is gone (pids this high are never handed out).
        std::fs::write(
            sessions.join("999999999.json"),
            r#"{"pid":999999999,"sessionId":"dead"}"#,
        )
        .unwrap();
        let file = |name: &str, age: Duration| {
            let path = home.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let f = std::fs::File::create(&path).unwrap();
            f.set_modified(SystemTime::now() - age).unwrap();
            path
        };
        let old = Duration::from_secs(3600);
        let describer = Describer::new(home.path());
        let active = |id: &str, path: &Path| describer.active(id, path);
        assert!(active("live", &file("p/live.jsonl", old)));
        assert!(!active("dead", &file("p/dead.jsonl", old)));
        assert!(active("fresh", &file("p/fresh.jsonl", Duration::ZERO)));
        assert!(active(
            "agent-a1",
            &file("p/live/subagents/agent-a1.jsonl", old)
        ));
        assert!(!active(
            "agent-a2",
            &file("p/dead/subagents/agent-a2.jsonl", old)
        ));
    }
}
