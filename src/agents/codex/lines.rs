//! A rollout line as typed values (`{"timestamp","type","payload"}`), read leniently (see
//! `agents::json`): [`Head`] holds what the ledger skeleton and the opening need, [`Line`] what
//! blocks and titles need; everything else on the line (encrypted reasoning, images, event output
//! repeated three times, `replacement_history`) is skipped unread. Here too is the one rule for
//! what a person's message is.
//!
//! Not for: what the blocks are (`blocks`) or where files live (the module root).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use crate::agents::Meta;
use crate::agents::content::{self, Content, text_of};
use crate::agents::json::{Object, Shape, any, lenient};

/// A line's envelope, `{"timestamp","type","payload"}`, with the payload read as `P`.
#[derive(Deserialize, Default)]
#[serde(default, bound(deserialize = "P: Shape<'de> + Default"))]
pub struct Envelope<'a, P> {
    #[serde(borrow, deserialize_with = "lenient")]
    pub timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    pub payload: Option<P>,
}

/// What the skeleton reads of a line.
pub type Head<'a> = Envelope<'a, HeadPayload<'a>>;

/// What blocks and titles read of a line.
pub type Line<'a> = Envelope<'a, Payload<'a>>;

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct HeadPayload<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    cwd: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    pub info: Option<Info>,
}

impl<'de> Object<'de> for HeadPayload<'de> {}

impl HeadPayload<'_> {
    /// A `session_meta` payload's thread id (`id`, else the newer `session_id`) and cwd.
    pub fn meta(&self) -> Meta {
        Meta {
            id: self
                .id
                .as_deref()
                .or(self.session_id.as_deref())
                .map(str::to_string),
            cwd: self.cwd.as_deref().map(str::to_string),
        }
    }
}

/// A `token_count` event's `info`.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Info {
    #[serde(deserialize_with = "lenient")]
    pub last_token_usage: Option<TokenUsage>,
    #[serde(deserialize_with = "lenient")]
    pub model_context_window: Option<u64>,
}

impl<'de> Object<'de> for Info {}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct TokenUsage {
    #[serde(deserialize_with = "lenient")]
    pub total_tokens: Option<u64>,
}

impl<'de> Object<'de> for TokenUsage {}

/// A payload: the fields of every item and event that blocks and titles read, side by side
/// (a flat struct reads fastest; which ones mean something depends on the `type`s).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Payload<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub role: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub content: Option<Content<'a, Part<'a>>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub summary: Option<Vec<Part<'a>>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub name: Option<Cow<'a, str>>,
    /// A function call's arguments: a JSON document inside a string.
    #[serde(borrow, deserialize_with = "lenient")]
    pub arguments: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub call_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub input: Option<Cow<'a, str>>,
    /// A local shell call's action: open, read whole.
    #[serde(deserialize_with = "any")]
    pub action: Option<Value>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub output: Option<Content<'a, Part<'a>>>,
    /// A compaction's summary, or an `event_msg` `user_message`'s text.
    #[serde(borrow, deserialize_with = "lenient")]
    pub message: Option<Cow<'a, str>>,
    /// The item of a newer `event_msg` `item_completed`.
    #[serde(borrow, deserialize_with = "lenient")]
    item: Option<EventItem<'a>>,
}

impl<'de> Object<'de> for Payload<'de> {}

#[derive(Deserialize, Default)]
#[serde(default)]
struct EventItem<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    content: Option<Content<'a, Part<'a>>>,
}

impl<'de> Object<'de> for EventItem<'de> {}

/// A part of a content, summary or output array.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct Part<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    text: Option<Cow<'a, str>>,
}

impl<'de> Object<'de> for Part<'de> {}

impl content::Part for Part<'_> {
    fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }
    fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// User-role messages Codex writes as harness context rather than as a person's words.
const CONTEXT_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
    "# AGENTS.md instructions",
    "<turn_aborted>",
    "<user_shell_command>",
];

/// The parts of a user message that hold its text.
const USER_TEXT_TYPES: &[&str] = &["input_text", "text"];

/// A user-role message: its text, and whether it is a person's words (else harness context).
pub struct UserMessage {
    pub text: String,
    pub person: bool,
}

impl Line<'_> {
    /// The user-role message on this line, in any shape Codex has written one: a `response_item`
    /// message with role `user` (the block model reads only these), an `event_msg` `user_message`,
    /// or a newer `event_msg` `item_completed` holding a `UserMessage` item. It is a person's words
    /// unless it opens with one of the harness's context prefixes.
    pub fn user_message(&self) -> Option<UserMessage> {
        let payload = self.payload.as_ref()?;
        let text = match (self.kind.as_deref()?, payload.kind.as_deref()?) {
            ("response_item", "message") if payload.role.as_deref() == Some("user") => {
                text_of(payload.content.as_ref(), USER_TEXT_TYPES).0
            }
            ("event_msg", "user_message") => payload.message.as_deref()?.to_string(),
            ("event_msg", "item_completed") => {
                let item = payload.item.as_ref()?;
                let kind = item.kind.as_deref()?.replace('_', "").to_ascii_lowercase();
                if kind != "usermessage" {
                    return None;
                }
                text_of(item.content.as_ref(), USER_TEXT_TYPES).0
            }
            _ => return None,
        };
        let start = text.trim_start();
        let person = !CONTEXT_PREFIXES.iter().any(|p| start.starts_with(p));
        Some(UserMessage { text, person })
    }
}
