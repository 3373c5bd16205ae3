//! A Pi session line (the header, then one entry per line) as typed values, read leniently (see
//! `agents::json`): [`Head`] holds what the ledger skeleton and the header need, [`Line`] what
//! blocks and titles need; everything else (signatures, images, usage, tool `details`) is skipped
//! unread. Here too is the one rule for what a person's message is.
//!
//! Not for: what the blocks are (`blocks`) or where files live (the module root).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::agents::content::{self, Content, text_of};
use crate::agents::json::{Object, Stamp, lenient, present, raw};

/// What the skeleton reads of a line.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Head<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub id: Option<Cow<'a, str>>,
    /// Absent in v1 (entries follow one another); present and maybe null from v2 on.
    #[serde(borrow, deserialize_with = "present")]
    pub parent_id: Option<Option<Cow<'a, str>>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub timestamp: Option<Stamp<'a>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub cwd: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    pub message: Option<HeadMessage>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub first_kept_entry_id: Option<Cow<'a, str>>,
    /// v1: an index among the parsed entries, the header being 0.
    #[serde(deserialize_with = "lenient")]
    pub first_kept_entry_index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub tokens_before: Option<u64>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub target_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub replacement: Option<Replacement<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct HeadMessage {
    #[serde(deserialize_with = "lenient")]
    pub usage: Option<Usage>,
}

impl<'de> Object<'de> for HeadMessage {}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Usage {
    #[serde(deserialize_with = "lenient")]
    pub total_tokens: Option<u64>,
}

impl<'de> Object<'de> for Usage {}

/// A `context_edit`'s replacement: the new content as written (`null` included).
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Replacement<'a> {
    #[serde(borrow, deserialize_with = "raw")]
    pub content: Option<&'a RawValue>,
}

impl<'de> Object<'de> for Replacement<'de> {}

/// What blocks and titles read of a line.
#[derive(Deserialize, Default)]
#[serde(default)]
pub struct Line<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub timestamp: Option<Stamp<'a>>,
    /// A compaction's or branch summary's text.
    #[serde(borrow, deserialize_with = "lenient")]
    pub summary: Option<Cow<'a, str>>,
    /// A `session_info` entry's display name.
    #[serde(borrow, deserialize_with = "lenient")]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub message: Option<Message<'a>>,
}

/// An entry's `message`: the fields of every role that blocks read, side by side.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Message<'a> {
    #[serde(borrow, deserialize_with = "lenient")]
    pub role: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub content: Option<Content<'a, Part<'a>>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub timestamp: Option<Stamp<'a>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub response_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub details: Option<Details<'a>>,
    /// A `bashExecution`'s command.
    #[serde(borrow, deserialize_with = "lenient")]
    pub command: Option<Cow<'a, str>>,
    /// A `compactionSummary`'s or `branchSummary`'s text.
    #[serde(borrow, deserialize_with = "lenient")]
    pub summary: Option<Cow<'a, str>>,
    /// Whether a `toolResult` is an error.
    #[serde(deserialize_with = "lenient")]
    pub is_error: Option<bool>,
    /// A `bashExecution`'s exit code, and whether it was cancelled.
    #[serde(deserialize_with = "lenient")]
    pub exit_code: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub cancelled: Option<bool>,
}

impl<'de> Object<'de> for Message<'de> {}

impl Message<'_> {
    /// The text of a message from a person: role `user`, its content if a string, else its text
    /// parts joined by `\n` (the one rule titles and blocks share).
    pub fn user_text(&self) -> Option<String> {
        (self.role.as_deref() == Some("user")).then(|| text_of(self.content.as_ref(), &["text"]).0)
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub struct Details<'a> {
    /// Where Pi saved a bash output it truncated.
    #[serde(borrow, deserialize_with = "lenient")]
    pub full_output_path: Option<Cow<'a, str>>,
}

impl<'de> Object<'de> for Details<'de> {}

/// A part of a message's content.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(default)]
pub struct Part<'a> {
    #[serde(borrow, rename = "type", deserialize_with = "lenient")]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub text: Option<Cow<'a, str>>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub thinking: Option<Cow<'a, str>>,
    #[serde(deserialize_with = "lenient")]
    pub redacted: Option<bool>,
    #[serde(borrow, deserialize_with = "lenient")]
    pub name: Option<Cow<'a, str>>,
    /// A tool call's arguments as written (`JSON.stringify`'s key order and numbers).
    #[serde(borrow, deserialize_with = "raw")]
    pub arguments: Option<&'a RawValue>,
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
