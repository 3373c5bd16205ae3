//! What a rollout line says for a person reading the session besides its blocks: the model and
//! reasoning effort of each `turn_context`, and `compacted` lines.

use std::borrow::Cow;

use memchr::memmem;
use serde::Deserialize;

use super::lines::Envelope;
use crate::agents::Mark;
use crate::agents::json::{self, Object, Scratch, lenient};

/// Where a line's `type` is, at most (it follows the timestamp).
const HEAD: usize = 128;

#[derive(Deserialize, Default)]
#[serde(default)]
struct Payload<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    effort: Option<Cow<'a, str>>,
}

impl<'de> Object<'de> for Payload<'de> {}

pub(super) fn of(line: &[u8]) -> Vec<Mark> {
    let head = &line[..line.len().min(HEAD)];
    let context = memmem::find(head, b"\"turn_context\"").is_some();
    if !context && memmem::find(head, b"\"compacted\"").is_none() {
        return Vec::new();
    }
    let mut scratch = Scratch::default();
    let Some(parsed) = json::parse::<Envelope<'_, Payload<'_>>>(line, &mut scratch) else {
        return Vec::new();
    };
    let line = parsed.value;
    match (line.kind.as_deref(), line.payload) {
        (Some("turn_context"), Some(payload)) => {
            let model = payload.model.map(|m| Mark::Model(m.into_owned()));
            let effort = payload.effort.map(|e| Mark::Thinking(e.into_owned()));
            model.into_iter().chain(effort).collect()
        }
        (Some("compacted"), _) => vec![Mark::Compaction {
            tokens_before: None,
        }],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_contexts_name_the_model_and_compactions_are_marked() {
        let context = br#"{"timestamp":"T","type":"turn_context","payload":{"cwd":"/r","model":"gpt-5.5","effort":"high"}}"#;
        assert_eq!(
            of(context),
            [Mark::Model("gpt-5.5".into()), Mark::Thinking("high".into())]
        );
        let compacted = br#"{"timestamp":"T","type":"compacted","payload":{"message":""}}"#;
        assert_eq!(
            of(compacted),
            [Mark::Compaction {
                tokens_before: None
            }]
        );
        assert!(of(br#"{"timestamp":"T","type":"response_item","payload":{}}"#).is_empty());
    }
}
