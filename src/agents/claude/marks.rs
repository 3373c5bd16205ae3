//! What a Claude Code line says for a person reading the session besides its blocks: the model an
//! answer came from (every assistant row names it; `show` prints changes only), and compactions
//! (`compact_boundary` rows, with the tokens before them).

use std::borrow::Cow;

use memchr::memmem;
use serde::Deserialize;

use super::lines::objects;
use crate::agents::Mark;
use crate::agents::json::{self, Object, Scratch, lenient};

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Row<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    message: Option<Message<'a>>,
    #[serde(deserialize_with = "lenient")]
    compact_metadata: Option<CompactMetadata>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct CompactMetadata {
    #[serde(deserialize_with = "lenient")]
    pre_tokens: Option<u64>,
}

impl<'de> Object<'de> for Message<'de> {}
impl<'de> Object<'de> for CompactMetadata {}

pub(super) fn of(line: &[u8]) -> Vec<Mark> {
    // A cheap look first: most lines are neither, and their content can be large.
    if memmem::find(line, b"\"model\"").is_none()
        && memmem::find(line, b"\"compact_boundary\"").is_none()
    {
        return Vec::new();
    }
    let mut marks = Vec::new();
    for object in objects(line) {
        let mut scratch = Scratch::default();
        let Some(parsed) = json::parse::<Row<'_>>(object, &mut scratch) else {
            continue;
        };
        let row = parsed.value;
        match (row.kind.as_deref(), row.subtype.as_deref()) {
            (Some("assistant"), _) => {
                // `<synthetic>` marks the harness's own messages (an interrupted turn), not a model.
                let model = row.message.and_then(|m| m.model);
                if let Some(model) = model.filter(|m| !m.starts_with('<')) {
                    marks.push(Mark::Model(model.into_owned()));
                }
            }
            (Some("system"), Some("compact_boundary")) => marks.push(Mark::Compaction {
                tokens_before: row.compact_metadata.and_then(|m| m.pre_tokens),
            }),
            _ => {}
        }
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_name_their_model_and_boundaries_their_tokens() {
        let answer = br#"{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[{"type":"text","text":"\"model\""}]},"uuid":"a"}"#;
        assert_eq!(of(answer), [Mark::Model("claude-sonnet-4-5".into())]);
        let synthetic = br#"{"type":"assistant","message":{"model":"<synthetic>","content":[]}}"#;
        assert_eq!(of(synthetic), []);
        let boundary = br#"{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":900},"uuid":"b"}"#;
        assert_eq!(
            of(boundary),
            [Mark::Compaction {
                tokens_before: Some(900)
            }]
        );
        // A user row quoting the word names no model; two objects on one line are two rows.
        let user = br#"{"type":"user","message":{"role":"user","content":"set \"model\" to x"}}"#;
        assert_eq!(of(user), []);
        let two = [&answer[..], &boundary[..]].concat();
        assert_eq!(of(&two).len(), 2);
    }
}
