//! Reading agents' JSON lines into typed values, leniently: a field of an unexpected type reads as
//! absent, as looking it up in a `serde_json::Value` would, so that an agent's line types accept
//! every line that is a JSON object, whatever its fields hold, and skip what they do not name
//! without building it (the bulk of a line: encrypted reasoning, base64 images, tool output a
//! format does not read).
//!
//! Not for: what the fields mean (each agent's module), nor JSON that ctxfold writes.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::surrogates;

/// A line read as `T`, and where its strings come from.
pub struct Parsed<'a, T> {
    pub value: T,
    /// The text `value` was read from: the line itself, or a repaired or rewritten copy of it.
    text: &'a str,
    /// The line, when `text` spells every value at the same place as it (the line itself, or a
    /// repaired copy: one `\uXXXX` escape stands for another of the same length).
    aligned: Option<&'a [u8]>,
}

impl<'a, T> Parsed<'a, T> {
    /// `raw`, a value of this line, spelled as the line spells it; a line read through a `Value`
    /// (see [`parse`]) gives it as `Value` spells it.
    pub fn as_written(&self, raw: &'a RawValue) -> &'a str {
        let spelled = raw.get();
        let Some(line) = self.aligned else {
            return spelled;
        };
        let start = (spelled.as_ptr() as usize).wrapping_sub(self.text.as_ptr() as usize);
        match start.checked_add(spelled.len()) {
            Some(end) if end <= line.len() => {
                std::str::from_utf8(&line[start..end]).unwrap_or(spelled)
            }
            _ => spelled,
        }
    }
}

/// Where [`parse`] keeps the copies of a line it had to change; one per line read.
#[derive(Default)]
pub struct Scratch {
    repaired: String,
    rewritten: String,
}

/// `line` as a `T` (a struct of lenient fields), or `None` when it is not a JSON object.
///
/// Straight from the line's bytes when serde_json takes them, borrowing its strings. A line with a
/// lone UTF-16 surrogate escape (JavaScript writes them: a truncated emoji in tool output) is
/// repaired first, as the context-fold extension's hashing sees it (see `surrogates`). A line that
/// names a key twice is read through a `Value`, which keeps the last, as `JSON.parse` does, and
/// written out again: key order and number spelling are then `Value`'s.
pub fn parse<'a, T: Deserialize<'a>>(
    line: &'a [u8],
    scratch: &'a mut Scratch,
) -> Option<Parsed<'a, T>> {
    // A derived struct would also take an array, field by field.
    if line.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    if let Ok(value) = serde_json::from_str(text) {
        return Some(Parsed {
            value,
            text,
            aligned: Some(line),
        });
    }
    let Scratch {
        repaired,
        rewritten,
    } = scratch;
    let mut source = line;
    if let Some(fixed) = surrogates::repair(line) {
        *repaired = String::from_utf8(fixed).ok()?;
        if let Ok(value) = serde_json::from_str(repaired) {
            return Some(Parsed {
                value,
                text: repaired,
                aligned: Some(line),
            });
        }
        source = repaired.as_bytes();
    }
    let value: Value = serde_json::from_slice(source).ok()?;
    if !value.is_object() {
        return None;
    }
    *rewritten = value.to_string();
    let value = serde_json::from_str(rewritten).ok()?;
    Some(Parsed {
        value,
        text: rewritten,
        aligned: None,
    })
}

/// A JSON text (a tool call's arguments) as a `Value`, with lone surrogate escapes repaired as
/// [`parse`] repairs a line.
pub fn value(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_slice(&surrogates::repair(text.as_bytes())?).ok())
}

/// A JSON text (a value of a line, as written) as a lenient `T`, with lone surrogate escapes
/// repaired as [`parse`] repairs a line.
pub fn lenient_from<'a, T: Shape<'a>>(text: &'a str) -> Option<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    match LenientSeed::<T>::default().deserialize(&mut de) {
        Ok(read) => read,
        Err(_) => LenientSeed::<T>::default().deserialize(value(text)?).ok()?,
    }
}

/// What a lenient field takes from the JSON value it meets; anything else makes it absent.
pub trait Shape<'de>: Sized {
    fn string(_: Cow<'de, str>) -> Option<Self> {
        None
    }
    fn number(_: serde_json::Number) -> Option<Self> {
        None
    }
    fn boolean(_: bool) -> Option<Self> {
        None
    }
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn array<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// A struct of lenient fields, read from a JSON object.
pub trait Object<'de>: Deserialize<'de> {}

impl<'de, T: Object<'de>> Shape<'de> for T {
    fn object<A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }
}

impl<'de> Shape<'de> for Cow<'de, str> {
    fn string(text: Cow<'de, str>) -> Option<Self> {
        Some(text)
    }
}

impl<'de> Shape<'de> for u64 {
    fn number(n: serde_json::Number) -> Option<Self> {
        n.as_u64()
    }
}

impl<'de> Shape<'de> for bool {
    fn boolean(b: bool) -> Option<Self> {
        Some(b)
    }
}

/// An array whose elements are read leniently one by one (an element of another type reads as
/// `T::default()`, and still counts).
impl<'de, T: Shape<'de> + Default> Shape<'de> for Vec<T> {
    fn array<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(LenientSeed::<T>::default())? {
            items.push(item.unwrap_or_default());
        }
        Ok(Some(items))
    }
}

/// A timestamp as written: a string as it is, a number in `Value`'s spelling of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp<'a>(pub Cow<'a, str>);

impl<'de> Shape<'de> for Stamp<'de> {
    fn string(text: Cow<'de, str>) -> Option<Self> {
        Some(Self(text))
    }
    fn number(n: serde_json::Number) -> Option<Self> {
        Some(Self(n.to_string().into()))
    }
}

/// For `#[serde(deserialize_with)]`: the field as `T` when the JSON value has `T`'s shape, else
/// `None` (with `#[serde(default)]`, an absent field is `None` too).
pub fn lenient<'de, D: Deserializer<'de>, T: Shape<'de>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(LenientSeed::<T>::default())
}

/// For `#[serde(deserialize_with)]`: whether the field is there at all (`null` included), and
/// what it holds if it has `T`'s shape.
pub fn present<'de, D: Deserializer<'de>, T: Shape<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    lenient(d).map(Some)
}

/// For `#[serde(deserialize_with)]`: the field's value whatever it is (`null` included), as a
/// `Value` (an open shape: tool arguments).
pub fn any<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// For `#[serde(deserialize_with)]`: the field's value as written, whatever it is (`null`
/// included).
pub fn raw<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<&'a RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A lenient `T` where serde wants a seed (an array's elements, a map's values).
pub struct LenientSeed<T>(PhantomData<T>);

impl<T> Default for LenientSeed<T> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<'de, T: Shape<'de>> DeserializeSeed<'de> for LenientSeed<T> {
    type Value = Option<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, T: Shape<'de>> Visitor<'de> for LenientSeed<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Option<T>, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<T>, E> {
        Ok(T::string(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Option<T>, E> {
        Ok(T::string(Cow::Owned(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Option<T>, E> {
        Ok(T::number(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Option<T>, E> {
        Ok(T::number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Option<T>, E> {
        Ok(serde_json::Number::from_f64(v).and_then(T::number))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Option<T>, E> {
        Ok(T::boolean(v))
    }
    fn visit_unit<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Option<T>, E> {
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
        T::object(map)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<T>, A::Error> {
        T::array(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Line<'a> {
        #[serde(borrow, deserialize_with = "lenient")]
        name: Option<Cow<'a, str>>,
        #[serde(deserialize_with = "lenient")]
        count: Option<u64>,
        #[serde(borrow, deserialize_with = "lenient")]
        at: Option<Stamp<'a>>,
        #[serde(borrow, deserialize_with = "lenient")]
        inner: Option<Inner<'a>>,
        #[serde(borrow, deserialize_with = "lenient")]
        items: Option<Vec<Inner<'a>>>,
        #[serde(borrow, deserialize_with = "present")]
        parent: Option<Option<Cow<'a, str>>>,
        #[serde(borrow, deserialize_with = "raw")]
        args: Option<&'a RawValue>,
    }

    #[derive(Deserialize, Default, Debug)]
    #[serde(default)]
    struct Inner<'a> {
        #[serde(borrow, deserialize_with = "lenient")]
        text: Option<Cow<'a, str>>,
    }
    impl<'de> Object<'de> for Inner<'de> {}

    fn read<R>(line: &str, f: impl FnOnce(&Parsed<'_, Line<'_>>) -> R) -> Option<R> {
        let mut scratch = Scratch::default();
        parse::<Line<'_>>(line.as_bytes(), &mut scratch).map(|p| f(&p))
    }

    #[test]
    fn fields_of_another_type_read_as_absent_and_the_rest_is_skipped() {
        let line = r#"{"name":5,"count":"x","at":[1],"inner":"no","items":[{"text":"a"},7,{"text":null}],"skip":{"deep":[[[{}]]]}}"#;
        read(line, |p| {
            let v = &p.value;
            assert!(v.name.is_none() && v.count.is_none() && v.at.is_none() && v.inner.is_none());
            let texts: Vec<_> = v
                .items
                .as_ref()
                .unwrap()
                .iter()
                .map(|i| i.text.as_deref())
                .collect();
            assert_eq!(texts, [Some("a"), None, None]);
            assert!(v.parent.is_none());
        })
        .unwrap();
        read(r#"{"at":17.5,"count":3,"parent":null}"#, |p| {
            assert_eq!(p.value.at, Some(Stamp("17.5".into())));
            assert_eq!(p.value.count, Some(3));
            assert_eq!(p.value.parent, Some(None));
        })
        .unwrap();
        read(r#"{"at":1786622042861,"count":-1}"#, |p| {
            assert_eq!(p.value.at, Some(Stamp("1786622042861".into())));
            assert_eq!(p.value.count, None);
        })
        .unwrap();
    }

    #[test]
    fn only_json_objects_are_lines() {
        for line in [
            "[\"a\"]",
            "\"x\"",
            "",
            "{",
            "{\"a\":1}{\"b\":2}",
            "{\"a\":\"\u{0}\"}",
        ] {
            assert!(read(line, |_| ()).is_none(), "{line:?}");
        }
        assert!(read(" {}", |_| ()).is_some());
        assert!(parse::<Line<'_>>(b"{\"name\":\"\xff\"}", &mut Scratch::default()).is_none());
    }

    #[test]
    fn repaired_and_rewritten_lines_read_as_value_would_and_keep_spellings_where_they_can() {
        // A lone surrogate in a field read: repaired, and the arguments still spelled as written.
        let line = r#"{"name":"a\ud83d","args":{"z":"\ud83d","a":2.50}}"#;
        read(line, |p| {
            assert_eq!(p.value.name.as_deref(), Some("a\u{fffd}"));
            assert_eq!(
                p.as_written(p.value.args.unwrap()),
                r#"{"z":"\ud83d","a":2.50}"#
            );
        })
        .unwrap();
        // A key written twice: the last wins, and spellings are Value's.
        read(
            r#"{"name":"first","args":{"z":1,"a":2.50},"name":"last"}"#,
            |p| {
                assert_eq!(p.value.name.as_deref(), Some("last"));
                assert_eq!(p.as_written(p.value.args.unwrap()), r#"{"a":2.5,"z":1}"#);
            },
        )
        .unwrap();
        // Escapes are read; plain strings are borrowed.
        read(r#"{"name":"a\nb","inner":{"text":"plain"}}"#, |p| {
            assert_eq!(p.value.name.as_deref(), Some("a\nb"));
            assert!(matches!(
                p.value.inner.as_ref().unwrap().text,
                Some(Cow::Borrowed("plain"))
            ));
        })
        .unwrap();
    }
}
