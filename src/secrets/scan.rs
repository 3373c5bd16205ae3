//! One session scanned for credentials: every line of its bytes matched against the rules, then,
//! only when something was found, its ledger walked to name the block each credential is in.
//! Most sessions hold none, and for them the scan is one pass over the bytes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rules::{find, mask};
use crate::error::{Cause, Result};
use crate::ledger::source::Lines;
use crate::ledger::{Ledger, Source};

/// A credential in a session. It never holds the credential, only its masked preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The 1-based line of the session file.
    pub line: u64,
    /// The seed blockId of the block that holds it; `None` outside every block (a session's
    /// metadata, a line of no agent's format).
    #[serde(rename = "blockId")]
    pub block: Option<String>,
    pub rule: String,
    pub preview: String,
}

/// The credentials in `source`, by line, each once per line.
pub fn scan(source: &dyn Source) -> Result<Vec<Finding>> {
    // (line, rule, secret) -> the finding; the secret is kept only while the blocks are found.
    let mut found: BTreeMap<(u64, &'static str, Vec<u8>), Finding> = BTreeMap::new();
    let mut lines = Lines::new(source)?;
    let mut number = 0;
    while let Some(line) = lines.next_line()? {
        number += 1;
        for hit in find(line) {
            found
                .entry((number, hit.rule.id, hit.secret.to_vec()))
                .or_insert_with(|| Finding {
                    line: number,
                    block: None,
                    rule: hit.rule.id.to_string(),
                    preview: mask(hit.secret),
                });
        }
    }
    drop(lines);
    if !found.is_empty() {
        name_blocks(source, &mut found)?;
    }
    Ok(found.into_values().collect())
}

/// Give each finding the block of its line whose text holds the credential (as the line spells
/// it, or JSON-unescaped: a key block's `\n`s are newlines in the text).
fn name_blocks(
    source: &dyn Source,
    found: &mut BTreeMap<(u64, &'static str, Vec<u8>), Finding>,
) -> Result<()> {
    let ledger = match Ledger::scan(source) {
        Ok(ledger) => ledger,
        // Any JSONL file can be folded: one of no agent's format has no blocks to name.
        Err(e) if matches!(e.cause(), Cause::BadInput { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    ledger.walk(|visit| {
        let on_line = found.range_mut(
            (visit.line_number, "", Vec::new())..(visit.line_number + 1, "", Vec::new()),
        );
        for ((_, _, secret), finding) in on_line.filter(|(_, f)| f.block.is_none()) {
            let unescaped = unescape(secret);
            let holds = |text: &str| {
                memchr::memmem::find(text.as_bytes(), secret).is_some()
                    || unescaped.as_deref().is_some_and(|u| text.contains(u))
            };
            finding.block = visit
                .blocks
                .iter()
                .find(|b| holds(&b.text))
                .map(|b| b.id.clone());
        }
        Ok(())
    })
}

/// `secret` read as the inside of a JSON string, when it is one that escapes something.
fn unescape(secret: &[u8]) -> Option<String> {
    if !secret.contains(&b'\\') {
        return None;
    }
    let quoted = [b"\"".as_slice(), secret, b"\""].concat();
    serde_json::from_slice(&quoted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::FileSource;

    #[test]
    fn findings_name_their_line_and_block_and_never_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let token = "ghp_R2d2C3poL7uK3sKyWalkrH4nS0l0Ch3wa1b2";
        let session = format!(
            concat!(
                r#"{{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}}"#,
                "\n",
                r#"{{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"nothing here","timestamp":1}}}}"#,
                "\n",
                r#"{{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T00:00:02.000Z","message":{{"role":"user","content":"push with {}","timestamp":2}}}}"#,
                "\n"
            ),
            token
        );
        std::fs::write(&path, &session).unwrap();
        let findings = scan(&FileSource(path)).unwrap();
        assert_eq!(
            findings,
            [Finding {
                line: 3,
                block: Some("u:2".into()),
                rule: "github-token".into(),
                preview: "ghp_…a1b2".into(),
            }]
        );
        let json = serde_json::to_string(&findings).unwrap();
        assert!(!json.contains(token), "{json}");
    }

    #[test]
    fn a_file_of_no_agent_still_has_its_lines_scanned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "x\nAKIAQ3EGTQ5NQ7XVZ4PL\n").unwrap();
        let findings = scan(&FileSource(path)).unwrap();
        assert_eq!(findings.len(), 1);
        assert_eq!((findings[0].line, findings[0].block.as_deref()), (2, None));
    }
}
