//! A seed record checked and not built: it reads where a [`FoldIndex`] reads and fails where one
//! fails, but keeps only what the union rules look at. A long session's records each re-list every
//! earlier span: `ctxfold-read-seeds --session` of a 1 GB rollout's index took 9.5-10 s when it
//! built every record to learn which stand, 7.2-7.8 s checking them.
//!
//! The shapes below mirror `record.rs` field for field; a test holds the two to the same verdict on
//! every field given every kind of JSON value.

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};

#[cfg(doc)]
use super::record::FoldIndex;
use super::union::record_of_fields;

/// A record, checked whole; its `v`, `kind` and `seq` kept.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(dead_code, reason = "read to be checked")]
pub struct Lean {
    pub v: u64,
    pub kind: String,
    pub seq: u64,
    #[serde(default)]
    harness: Str,
    #[serde(default)]
    session: Str,
    #[serde(default)]
    at: Str,
    #[serde(default)]
    trigger: Str,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    files: Each<Str>,
    /// v1/v2: strings; v3: objects.
    #[serde(default)]
    commands: Each<IgnoredAny>,
    #[serde(default)]
    errors: Each<IgnoredAny>,
    #[serde(default)]
    identifiers: Each<Str>,
    #[serde(default)]
    user_messages: Each<UserMessage>,
    #[serde(default)]
    spans: Each<Span>,
    /// As [`FoldIndex`]'s `extra`: other fields are taken, and the record must be an object.
    #[serde(flatten)]
    other: IgnoredAny,
}

record_of_fields!(Lean);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(dead_code, reason = "read to be checked")]
struct Usage {
    #[serde(default)]
    tokens: Option<serde_json::Number>,
    #[serde(default)]
    context_window: Option<serde_json::Number>,
    #[serde(default)]
    fraction: Option<f64>,
    #[serde(flatten)]
    other: IgnoredAny,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(dead_code, reason = "read to be checked")]
struct UserMessage {
    #[serde(default)]
    turn: u64,
    #[serde(default)]
    first_line: Str,
    #[serde(flatten)]
    other: IgnoredAny,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[expect(dead_code, reason = "read to be checked")]
struct Span {
    #[serde(default)]
    block_id: Str,
    #[serde(default)]
    code: Option<Str>,
    #[serde(default)]
    tool: Option<Str>,
    #[serde(default)]
    turn: Option<u64>,
    #[serde(default)]
    log: Log,
    #[serde(default)]
    sha256: Option<Str>,
    #[serde(default)]
    full_output_path: Option<Str>,
    #[serde(flatten)]
    other: IgnoredAny,
}

#[derive(Default, Deserialize)]
#[expect(dead_code, reason = "read to be checked")]
struct Log {
    #[serde(default)]
    bytes: Option<u64>,
    #[serde(default)]
    lines: Option<u64>,
    #[serde(flatten)]
    other: IgnoredAny,
}

/// A string, checked and not kept.
#[derive(Default)]
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Checked;
        impl Visitor<'_> for Checked {
            type Value = Str;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        deserializer.deserialize_str(Checked)
    }
}

/// A sequence of `T`, each checked and none kept.
struct Each<T>(std::marker::PhantomData<T>);

impl<T> Default for Each<T> {
    fn default() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Each<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Checked<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Checked<T> {
            type Value = Each<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sequence")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Each<T>, A::Error> {
                while seq.next_element::<T>()?.is_some() {}
                Ok(Each::default())
            }
        }
        deserializer.deserialize_seq(Checked(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::seeds::record::FoldIndex;

    /// A record with every field the contract gives, nested ones too.
    fn full() -> Value {
        json!({
            "v": 2, "kind": "fold-index", "harness": "ctxfold", "session": "s", "seq": 3,
            "at": "t", "trigger": "compaction",
            "usage": {"tokens": 95000, "contextWindow": 2e5, "fraction": 0.4, "more": 1},
            "files": ["a.rs"], "commands": ["ls", {"command": "ls", "turn": 1}],
            "errors": ["e"], "identifiers": ["fooBar"],
            "userMessages": [{"turn": 1, "firstLine": "hi", "more": [1]}],
            "spans": [{
                "blockId": "b1", "code": "c", "tool": "t", "turn": 1,
                "log": {"bytes": 10, "lines": 2, "path": "p", "byteStart": 0},
                "sha256": "00", "fullOutputPath": "/x", "more": {}
            }],
            "more": null
        })
    }

    /// Every place in `value` a field or an element sits, as JSON pointers.
    fn places(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, field) in map {
                    let place = format!("{at}/{key}");
                    out.push(place.clone());
                    places(field, place, out);
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let place = format!("{at}/{i}");
                    out.push(place.clone());
                    places(item, place, out);
                }
            }
            _ => {}
        }
    }

    fn verdicts(line: &str) -> (bool, bool) {
        (
            serde_json::from_str::<FoldIndex>(line).is_ok(),
            serde_json::from_str::<Lean>(line).is_ok(),
        )
    }

    #[test]
    fn a_lean_record_reads_where_a_record_reads_and_fails_where_it_fails() {
        let kinds = [
            json!(null),
            json!(true),
            json!(0),
            json!(7),
            json!(-1),
            json!(1.5),
            json!(1e300),
            json!(""),
            json!("é \"quoted\"\n"),
            json!([]),
            json!(["x"]),
            json!([1]),
            json!([{}]),
            json!({}),
            json!({"x": 1}),
        ];
        let full = full();
        assert_eq!(verdicts(&full.to_string()), (true, true));
        let mut all = Vec::new();
        places(&full, String::new(), &mut all);
        let (mut failed, mut tried) = (0, 0);
        for place in &all {
            for kind in &kinds {
                let mut changed = full.clone();
                *changed.pointer_mut(place).unwrap() = kind.clone();
                let line = changed.to_string();
                let (record, lean) = verdicts(&line);
                assert_eq!(record, lean, "{line}");
                failed += usize::from(!record);
                tried += 1;
            }
            let (parent, key) = place.rsplit_once('/').unwrap();
            let mut without = full.clone();
            match without.pointer_mut(parent).unwrap() {
                Value::Object(map) => drop(map.remove(key)),
                Value::Array(items) => drop(items.remove(key.parse().unwrap())),
                _ => unreachable!(),
            }
            let line = without.to_string();
            let (record, lean) = verdicts(&line);
            assert_eq!(record, lean, "{line}");
        }
        // Both ways happen: the test tells something.
        assert!(failed > 50 && failed < tried - 50, "{failed} of {tried}");
        for line in [
            r#"[2,"fold-index",1]"#,
            r#"{"v":2,"kind":"fold-index"}"#,
            "1",
        ] {
            assert_eq!(verdicts(line), (false, false), "{line}");
        }
    }
}
