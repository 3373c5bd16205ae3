//! Message content as both formats write it: a string, or an array of typed parts (`text`,
//! `input_text`, `image`, …), and the one rule that turns it into a block's text.
//!
//! Not for: which parts a format reads as what (each agent's module names its part types).

use std::borrow::Cow;

use serde::de::{IgnoredAny, MapAccess, SeqAccess};

use super::json::{LenientSeed, Shape};

/// A content field: a string, an array of parts, or an object holding its own `content` (Codex
/// writes tool output in all three).
#[derive(Debug, Clone)]
pub enum Content<'a, P> {
    Text(Cow<'a, str>),
    Parts(Vec<P>),
    Nested(Option<Box<Content<'a, P>>>),
}

/// A part of a content array: its `type` and its `text`.
pub trait Part {
    fn kind(&self) -> &str;
    fn text(&self) -> Option<&str>;
}

impl<'a, P> Content<'a, P> {
    /// The parts, when the content is an array.
    pub fn parts(&self) -> &[P] {
        match self {
            Self::Parts(parts) => parts,
            _ => &[],
        }
    }
}

impl<'de, P: Shape<'de> + Default> Shape<'de> for Content<'de, P> {
    fn string(text: Cow<'de, str>) -> Option<Self> {
        Some(Self::Text(text))
    }
    fn array<A: SeqAccess<'de>>(seq: A) -> Result<Option<Self>, A::Error> {
        Ok(Vec::array(seq)?.map(Self::Parts))
    }
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        let mut inner = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "content" {
                // A key written twice: the last wins, as in `Value`.
                inner = map
                    .next_value_seed(LenientSeed::<Self>::default())?
                    .map(Box::new);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Some(Self::Nested(inner)))
    }
}

/// The text of `content`: a string as it is, else the `text` of the parts whose type is one of
/// `text_types`, joined by `\n`; and whether an image part was among them. Anything else (absent,
/// an object) has no text.
pub fn text_of<P: Part>(content: Option<&Content<'_, P>>, text_types: &[&str]) -> (String, bool) {
    match content {
        Some(Content::Text(text)) => (text.to_string(), false),
        Some(Content::Parts(parts)) => {
            let mut texts = Vec::new();
            let mut image = false;
            for part in parts {
                let kind = part.kind();
                if text_types.contains(&kind) {
                    if let Some(text) = part.text() {
                        texts.push(text);
                    }
                } else if kind.contains("image") {
                    image = true;
                }
            }
            (texts.join("\n"), image)
        }
        _ => (String::new(), false),
    }
}
