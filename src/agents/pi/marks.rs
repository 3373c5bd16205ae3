//! What a Pi line says for a person reading the session besides its blocks: model and
//! thinking-level changes (the v1 header names the first model too), and compactions.

use std::borrow::Cow;

use memchr::memmem;
use serde::Deserialize;

use crate::agents::Mark;
use crate::agents::json::{self, Scratch, lenient};

/// The entry types that make marks.
const TYPES: [&[u8]; 4] = [
    b"\"model_change\"",
    b"\"thinking_level_change\"",
    b"\"compaction\"",
    b"\"session\"",
];

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Entry<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    model_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    thinking_level: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    tokens_before: Option<u64>,
}

pub(super) fn of(line: &[u8]) -> Vec<Mark> {
    // A cheap look first: most lines are messages, whose content could be large.
    if !TYPES.iter().any(|t| memmem::find(line, t).is_some()) {
        return Vec::new();
    }
    let mut scratch = Scratch::default();
    let Some(parsed) = json::parse::<Entry<'_>>(line, &mut scratch) else {
        return Vec::new();
    };
    let entry = parsed.value;
    let model = || {
        let id = entry.model_id.as_deref()?;
        Some(Mark::Model(match entry.provider.as_deref() {
            Some(provider) => format!("{provider}/{id}"),
            None => id.to_string(),
        }))
    };
    let thinking = || Some(Mark::Thinking(entry.thinking_level.as_deref()?.to_string()));
    match entry.kind.as_deref() {
        Some("model_change") => model().into_iter().collect(),
        Some("thinking_level_change") => thinking().into_iter().collect(),
        Some("session") => model().into_iter().chain(thinking()).collect(),
        Some("compaction") => vec![Mark::Compaction {
            tokens_before: entry.tokens_before,
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_and_thinking_changes_and_compactions_are_marked() {
        let change = br#"{"type":"model_change","id":"a","parentId":null,"timestamp":"T","provider":"anthropic","modelId":"claude-opus-4-5"}"#;
        assert_eq!(
            of(change),
            [Mark::Model("anthropic/claude-opus-4-5".into())]
        );
        let header = br#"{"type":"session","id":"s","timestamp":"T","cwd":"/x","provider":"openai","modelId":"gpt-5.1","thinkingLevel":"off"}"#;
        assert_eq!(
            of(header),
            [
                Mark::Model("openai/gpt-5.1".into()),
                Mark::Thinking("off".into())
            ]
        );
        let compaction = br#"{"type":"compaction","summary":"s","tokensBefore":184525}"#;
        assert_eq!(
            of(compaction),
            [Mark::Compaction {
                tokens_before: Some(184525)
            }]
        );
        let message =
            br#"{"type":"message","message":{"role":"user","content":"the \"session\" word"}}"#;
        assert!(of(message).is_empty());
    }
}
