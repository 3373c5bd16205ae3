//! Codex rollouts: where Codex keeps them and what names them, what their first line says, their
//! titles, their place for restore, and how they read as a ledger.
//!
//! `$CODEX_HOME` (default `~/.codex`) holds `sessions/YYYY/MM/DD/rollout-<local time>-<thread
//! uuid>.jsonl` (active; the folders are the date of the file name) and
//! `archived_sessions/rollout-….jsonl` (archived, flat; Codex compresses old ones to
//! `rollout-….jsonl.zst`, whose decompressed bytes are the session).

mod blocks;
mod lines;
mod marks;
mod titles;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;

use super::json::{self, Scratch};
use super::place::shaped;
use super::{Describe, Format, Mark, Meta, Tree};
use crate::blocks::{Block, Entry};

/// Codex CLI rollouts.
pub struct Codex;

const SESSIONS: &str = "sessions";
const ARCHIVED: &str = "archived_sessions";

/// The local time in a rollout's name (`2026-05-11T11-26-55`); the folders repeat its date.
const TIME_SHAPE: &str = "9999-99-99T99-99-99";
const UUID_SHAPE: &str = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

/// A rollout's file name, `rollout-<time>-<thread uuid>.jsonl` (or `.jsonl.zst`).
struct Name<'n> {
    /// `YYYY`, `MM`, `DD` of the time.
    date: [&'n str; 3],
    id: &'n str,
    compressed: bool,
}

impl<'n> Name<'n> {
    fn parse(name: &'n str) -> Option<Self> {
        let (stem, compressed) = match name.strip_suffix(".jsonl.zst") {
            Some(stem) => (stem, true),
            None => (name.strip_suffix(".jsonl")?, false),
        };
        let (date, id) = parse_stem(stem)?;
        Some(Self {
            date,
            id,
            compressed,
        })
    }
}

/// The date and thread id of a rollout's name without its extension.
fn parse_stem(stem: &str) -> Option<([&str; 3], &str)> {
    let rest = stem.strip_prefix("rollout-")?;
    let time = rest.get(..TIME_SHAPE.len())?;
    let id = rest.get(TIME_SHAPE.len()..)?.strip_prefix('-')?;
    (shaped(time, TIME_SHAPE) && shaped(id, UUID_SHAPE)).then(|| {
        let date = [&time[0..4], &time[5..7], &time[8..10]];
        (date, id)
    })
}

fn is_rollout_name(rel: &Path) -> bool {
    rel.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        n.starts_with("rollout-") && (n.ends_with(".jsonl") || n.ends_with(".jsonl.zst"))
    })
}

impl Format for Codex {
    fn name(&self) -> &'static str {
        "Codex"
    }

    fn home(&self) -> (&'static str, &'static str) {
        ("CODEX_HOME", ".codex")
    }

    fn trees(&self) -> &'static [Tree] {
        &[
            Tree {
                dir: SESSIONS,
                archived: false,
                depth: None,
                holds: is_rollout_name,
            },
            Tree {
                dir: ARCHIVED,
                archived: true,
                depth: Some(1),
                holds: is_rollout_name,
            },
        ]
    }

    fn meta(&self, first: &[u8]) -> Option<Meta> {
        let mut scratch = Scratch::default();
        let head = json::parse::<lines::Head<'_>>(first, &mut scratch)?.value;
        (head.kind.as_deref() == Some("session_meta"))
            .then(|| head.payload.unwrap_or_default().meta())
    }

    fn id_from_name<'n>(&self, stem: &'n str) -> Option<&'n str> {
        parse_stem(stem).map(|(_, id)| id)
    }

    fn describer<'h>(&self, home: &'h Path, _: super::Titles) -> Box<dyn Describe + 'h> {
        Box::new(titles::Titles::new(home))
    }

    /// `…/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, the folders the date of the name, or
    /// `…/archived_sessions/rollout-<time>-<id>.jsonl` (a `.jsonl.zst` there is put back as the
    /// plain file Codex reads first).
    fn place(&self, parts: &[&str], id: &str) -> Option<PathBuf> {
        match parts {
            [.., tree, year, month, day, file] if *tree == SESSIONS => {
                let name = Name::parse(file).filter(|n| !n.compressed && n.id == id)?;
                let date = [*year, *month, *day];
                (name.date == date).then(|| [SESSIONS, *year, *month, *day, *file].iter().collect())
            }
            [.., tree, file] if *tree == ARCHIVED => {
                let name = Name::parse(file).filter(|n| n.id == id)?;
                let plain = file.strip_suffix(".zst").filter(|_| name.compressed);
                Some(Path::new(ARCHIVED).join(plain.unwrap_or(file)))
            }
            _ => None,
        }
    }

    fn skeleton(
        &self,
        line: &[u8],
        index: usize,
        _ids: &HashMap<String, usize>,
    ) -> Option<(Entry, Option<Meta>)> {
        blocks::skeleton(line, index)
    }

    fn blocks(&self) -> Box<dyn super::Blocks> {
        Box::<blocks::Blocks>::default()
    }

    fn resume_blocks(&self, saved: serde_json::Value) -> Option<Box<dyn super::Blocks>> {
        super::resumed::<blocks::Blocks>(saved)
    }

    fn edited(&self, _line: &[u8], _content: &RawValue, _edit_id: &str) -> Vec<Block> {
        // Rollouts have no edits: the skeleton never makes one.
        Vec::new()
    }

    fn marks(&self, line: &[u8]) -> Vec<Mark> {
        marks::of(line)
    }

    /// A fork writes its own `session_meta` first, then the lines it copies, each stamped with
    /// the time it was copied (and newer builds number them: `ordinal`).
    fn likeness(&self, line: &[u8]) -> super::Likeness {
        super::Likeness::without(line, &["timestamp", "ordinal"], |line| {
            line.get("type").and_then(|t| t.as_str()) == Some("session_meta")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "019e1625-789d-76c0-80ab-3724b5ddb799";

    fn place(path: &str) -> Option<PathBuf> {
        let parts: Vec<&str> = path.split('/').collect();
        Codex.place(&parts, ID)
    }

    #[test]
    fn ids_come_from_rollout_names() {
        assert_eq!(
            Codex.id_from_name(&format!("rollout-2026-05-11T11-26-55-{ID}")),
            Some(ID)
        );
        for stem in [
            "rollout-short",
            "rollout-2026-05-11T11-26-55",
            "rollout-x-019e1625-789d-76c0-80ab-3724b5ddb799",
        ] {
            assert_eq!(Codex.id_from_name(stem), None, "{stem}");
        }
    }

    #[test]
    fn places_are_codexs_own_shapes_only() {
        let name = format!("rollout-2026-05-11T11-26-55-{ID}.jsonl");
        assert_eq!(
            place(&format!("h/.codex/sessions/2026/05/11/{name}")),
            Some(PathBuf::from(format!("sessions/2026/05/11/{name}")))
        );
        assert_eq!(
            place(&format!("h/archived_sessions/{name}")),
            Some(PathBuf::from(format!("archived_sessions/{name}")))
        );
        assert_eq!(
            place(&format!("h/archived_sessions/{name}.zst")),
            Some(PathBuf::from(format!("archived_sessions/{name}")))
        );
        for wrong in [
            format!("h/sessions/2026/05/12/{name}"),
            format!("h/sessions/2026/05/{name}"),
            format!("h/sessions/2026/05/11/x/{name}"),
            format!("h/sessions/2026/05/11/{name}.zst"),
            format!("h/archived_sessions/x/{name}"),
            format!(
                "h/sessions/2026/05/11/rollout-2026-05-11T11-26-55-{}.jsonl",
                "0".repeat(36)
            ),
            "h/sessions/2026/05/11/notes.jsonl".to_string(),
            format!("h/elsewhere/{name}"),
            name.clone(),
        ] {
            assert_eq!(place(&wrong), None, "{wrong}");
        }
    }
}
