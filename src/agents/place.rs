//! Where `restore` puts a folded session when it is not told (`--to`): computed, never taken. A
//! manifest's `rollout_path` was written on some machine, maybe another, maybe by someone else; it
//! is read only for the session's place relative to its agent's home (Codex
//! `sessions/YYYY/MM/DD/rollout-….jsonl`, Pi `sessions/--<cwd>--/<time>_<id>.jsonl`, Claude Code
//! `projects/<project>/<id>.jsonl`, …), and only
//! when it ends exactly in one of those shapes, with no `.`, `..` or empty component anywhere and
//! the session's own id in the file name. That place is then re-rooted under this machine's home
//! of that agent, which must exist: restore creates folders inside the agent's session tree only.
//!
//! Not for: writing the file (`store::reconstruct::restore_file`), or what each agent's shapes are
//! (each agent's `Format::place`).

use std::fmt;
use std::path::PathBuf;

use super::{Agent, Homes};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::manifest::Session;

/// A session's place: its agent, and its path under that agent's home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub agent: Agent,
    pub rel: PathBuf,
}

/// Why restore will not place a session without `--to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    pub rollout_path: String,
    pub why: Why,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    NotAbsolute,
    /// An empty, `.` or `..` component, or one holding a control character.
    Component(String),
    /// No agent keeps this session at a path ending so (or the file name names another session).
    Shape,
}

impl fmt::Display for Unplaced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rollout_path {:?} ", self.rollout_path)?;
        match &self.why {
            Why::NotAbsolute => f.write_str("is not an absolute path"),
            Why::Component(c) => write!(f, "has a {c:?} component"),
            Why::Shape => write!(f, "is not where {} keeps this session", Agent::names_or()),
        }
    }
}

/// The place of `session`, from its `rollout_path` when that has exactly an agent's shape.
pub fn place(session: &Session) -> std::result::Result<Place, Unplaced> {
    let unplaced = |why| Unplaced {
        rollout_path: session.rollout_path.clone(),
        why,
    };
    let rest = session
        .rollout_path
        .strip_prefix('/')
        .ok_or_else(|| unplaced(Why::NotAbsolute))?;
    let parts: Vec<&str> = rest.split('/').collect();
    if let Some(bad) = parts
        .iter()
        .find(|p| p.is_empty() || **p == "." || **p == ".." || p.chars().any(char::is_control))
    {
        return Err(unplaced(Why::Component(bad.to_string())));
    }
    Agent::ALL
        .into_iter()
        .find_map(|agent| {
            let rel = agent.format().place(&parts, &session.id)?;
            Some(Place { agent, rel })
        })
        .ok_or_else(|| unplaced(Why::Shape))
}

/// A manifest of a store whose session restore will not place without `--to`.
#[derive(Debug, Clone)]
pub struct UnplacedManifest {
    pub path: PathBuf,
    pub session: String,
    pub unplaced: Unplaced,
}

/// Every readable manifest of `store` (generations and conflicts included) whose session restore
/// will not place without `--to`. (An unreadable one, or one with an unsafe id, is fsck's.)
pub fn unplaced_manifests(store: &Store) -> Result<Vec<UnplacedManifest>> {
    let mut found = Vec::new();
    for path in store.manifest_files()? {
        let Ok(manifest) = store.load_manifest_at(&path) else {
            continue;
        };
        if let Err(unplaced) = place(&manifest.session) {
            found.push(UnplacedManifest {
                path,
                session: manifest.session.id,
                unplaced,
            });
        }
    }
    Ok(found)
}

/// Where restore writes `session` on this machine when not told: its place under this machine's
/// home of its agent. The home must exist (restore creates folders inside its session tree, never
/// the home itself: a missing one is more likely a mistyped variable than a wish).
pub fn default_target(session: &Session, homes: &Homes) -> Result<PathBuf> {
    let place = place(session).map_err(|unplaced| {
        Error::refused(format!(
            "{unplaced}: restore places a session only under this machine's agent homes; use --to PATH"
        ))
    })?;
    let home = homes.of(place.agent);
    if !home.is_dir() {
        let (variable, _) = place.agent.format().home();
        return Err(Error::refused(format!(
            "{} does not exist (the {} home: run {} once, or set {variable}); or use --to PATH",
            home.display(),
            place.agent.format().name(),
            place.agent.format().name(),
        )));
    }
    Ok(home.join(place.rel))
}

/// The agent that named `session`'s file (its rollout_path's last component), wherever it is: the
/// one whose way of naming files names the session's id.
pub fn named_by(session: &Session) -> Option<Agent> {
    let name = session.rollout_path.rsplit('/').next()?;
    let stem = name.strip_suffix(".zst").unwrap_or(name);
    let stem = stem.strip_suffix(".jsonl").unwrap_or(stem);
    Agent::ALL
        .into_iter()
        .find(|agent| agent.format().id_from_name(stem) == Some(session.id.as_str()))
}

/// When `session` started, as its agent's file name says: Codex and Pi both name a session's file
/// after the time it started, and that is all a manifest records of it. Pi writes UTC and says so
/// (`…-397Z_<id>`): `2026-11-30T23:21:14Z`. Codex writes the local time of the machine it ran on,
/// a zone nobody recorded: `2026-05-11T11:26:55`, without one, as RFC 3339 cannot say "local".
pub fn started(session: &Session) -> Option<String> {
    const STAMP: &str = "9999-99-99T99-99-99";
    named_by(session)?;
    let name = session.rollout_path.rsplit('/').next()?;
    let at = (0..=name.len().checked_sub(STAMP.len())?).find(|&i| {
        name.get(i..i + STAMP.len())
            .is_some_and(|t| shaped(t, STAMP))
    })?;
    let (date, time) = name[at..at + STAMP.len()].split_once('T')?;
    let after = &name[at + STAMP.len()..];
    let utc = after.get(..5).is_some_and(|ms| shaped(ms, "-999Z"));
    let zone = if utc { "Z" } else { "" };
    Some(format!("{date}T{}{zone}", time.replace('-', ":")))
}

/// Whether `text` has `shape`: `9` stands for an ASCII digit, `x` for a hex digit, anything else
/// for itself.
pub fn shaped(text: &str, shape: &str) -> bool {
    text.len() == shape.len()
        && text.bytes().zip(shape.bytes()).all(|(t, s)| match s {
            b'9' => t.is_ascii_digit(),
            b'x' => t.is_ascii_hexdigit(),
            _ => t == s,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn session(id: &str, rollout_path: &str) -> Session {
        Session {
            id: id.into(),
            title: None,
            cwd: None,
            rollout_path: rollout_path.into(),
            archived: false,
            mtime: None,
        }
    }

    const CODEX_ID: &str = "019e1625-789d-76c0-80ab-3724b5ddb799";

    #[test]
    fn honest_paths_are_placed_under_their_agents_home() {
        let codex = format!(
            "/home/a/.codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-{CODEX_ID}.jsonl"
        );
        let placed = place(&session(CODEX_ID, &codex)).unwrap();
        assert_eq!(placed.agent, Agent::Codex);
        assert_eq!(
            placed.rel,
            Path::new(&codex[15..]),
            "the path under the home"
        );
        let pi =
            "/Users/b/.pi/agent/sessions/--Users-b-x--/2025-12-09T00-52-54-397Z_d97339c6.jsonl";
        let placed = place(&session("d97339c6", pi)).unwrap();
        assert_eq!(placed.agent, Agent::Pi);
        assert_eq!(
            placed.rel,
            Path::new("sessions/--Users-b-x--/2025-12-09T00-52-54-397Z_d97339c6.jsonl")
        );
    }

    #[test]
    fn anything_else_is_refused_with_its_reason() {
        let name = format!("rollout-2026-05-11T11-26-55-{CODEX_ID}.jsonl");
        let why = |id: &str, path: &str| place(&session(id, path)).map(|_| ()).unwrap_err().why;
        for (path, expected) in [
            (format!("sessions/2026/05/11/{name}"), Why::NotAbsolute),
            (
                format!("/h/.codex/sessions/../archived_sessions/{name}"),
                Why::Component("..".into()),
            ),
            (
                format!("/h/.codex/./archived_sessions/{name}"),
                Why::Component(".".into()),
            ),
            (
                format!("/h/.codex//archived_sessions/{name}"),
                Why::Component("".into()),
            ),
            (
                "/root/.config/autostart-pwned/evil.desktop".into(),
                Why::Shape,
            ),
            ("/etc/cron.d/evil".into(), Why::Shape),
            ("/tmp/notes.jsonl".into(), Why::Shape),
        ] {
            assert_eq!(why(CODEX_ID, &path), expected, "{path}");
        }
        // Another session's file name.
        let other = format!("/h/.codex/archived_sessions/{name}");
        assert_eq!(
            why("019e1625-789d-76c0-80ab-000000000000", &other),
            Why::Shape
        );
        assert_eq!(
            place(&session(CODEX_ID, "/etc/cron.d/evil"))
                .unwrap_err()
                .to_string(),
            r#"rollout_path "/etc/cron.d/evil" is not where Codex, Pi or Claude Code keeps this session"#
        );
    }

    #[test]
    fn a_placed_session_started_when_its_file_name_says() {
        let codex = session(
            "019e1234-0000-7000-8000-000000000001",
            "/h/.codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-019e1234-0000-7000-8000-000000000001.jsonl",
        );
        assert_eq!(started(&codex).as_deref(), Some("2026-05-11T11:26:55"));
        let pi = session(
            "01a22ec3-34e4-7265-bb6b-1383eb635647",
            "/h/.pi/agent/sessions/--x--/2026-11-30T23-21-14-726Z_01a22ec3-34e4-7265-bb6b-1383eb635647.jsonl",
        );
        assert_eq!(started(&pi).as_deref(), Some("2026-11-30T23:21:14Z"));
        assert_eq!(named_by(&pi), Some(Agent::Pi));
        // A file folded by path says nothing of when it started, whatever its name.
        let file = session("s", "/tmp/2026-11-30T23-21-14-s.jsonl");
        assert_eq!(started(&file), None);
    }

    #[test]
    fn shapes_match_digits_hex_and_literals() {
        assert!(shaped("2026-05-11", "9999-99-99"));
        assert!(!shaped("2026-5-11", "9999-99-99"));
        assert!(shaped("0a9F", "xxxx") && !shaped("0a9g", "xxxx"));
    }
}
