//! JSON read the way Go's `encoding/json` fills a struct, because the reference implementation's
//! index files are read by it: a member matches a field by exact name, else case-insensitively;
//! unknown members are ignored; the last of several matching members wins; `null` leaves a field
//! as it was; a value of the wrong type, or a fraction where an integer belongs, is an error.
//!
//! Only what those index files need (objects, arrays, strings, integers). Not a general JSON
//! library, and not for anything ctxfold writes.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON document with objects' members kept in document order, duplicates included.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer beyond i64 (Go: an overflow error for every field here).
    BigInt(u64),
    Float(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

/// A JSON document's root value. Errors say what serde_json found wrong, as Go's do.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

impl Value {
    /// What Go calls this kind of value in "cannot unmarshal …" errors.
    fn kind(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(n) => format!("number {n}"),
            Value::BigInt(n) => format!("number {n}"),
            Value::Float(n) => format!("number {n}"),
            Value::String(_) => "string".into(),
            Value::Array(_) => "array".into(),
            Value::Object(_) => "object".into(),
        }
    }
}

/// A Go struct being filled: its name for messages and its fields' JSON names.
pub struct Struct {
    pub name: &'static str,
    pub fields: &'static [&'static str],
}

impl Struct {
    /// The members of `value` that fill a field, in document order, each with the field it
    /// fills; members that match no field are left out. A `null` document fills nothing; anything
    /// else that is not an object is an error.
    pub fn members<'v>(&self, value: &'v Value) -> Result<Vec<(&'static str, &'v Value)>, String> {
        let members = match value {
            Value::Null => return Ok(Vec::new()),
            Value::Object(members) => members,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type {}",
                    other.kind(),
                    self.name
                ));
            }
        };
        Ok(members
            .iter()
            .filter_map(|(key, value)| self.field(key).map(|field| (field, value)))
            .collect())
    }

    /// Go looks for an exact match first, then for a case-insensitive one.
    fn field(&self, key: &str) -> Option<&'static str> {
        let exact = self.fields.iter().find(|f| **f == key);
        exact
            .or_else(|| self.fields.iter().find(|f| fold_eq(f, key)))
            .copied()
    }

    /// An integer field's new value; `None` for `null`, which leaves the field as it was.
    pub fn int(&self, field: &str, value: &Value, type_name: &str) -> Result<Option<i64>, String> {
        match value {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            other => Err(self.mismatch(field, other, type_name)),
        }
    }

    /// A string field's new value; `None` for `null`, which leaves the field as it was.
    pub fn string(&self, field: &str, value: &Value) -> Result<Option<String>, String> {
        match value {
            Value::Null => Ok(None),
            Value::String(text) => Ok(Some(text.clone())),
            other => Err(self.mismatch(field, other, "string")),
        }
    }

    /// A slice field's elements; `null` empties a slice (Go sets it to nil). A `null` element
    /// stands for the element type's zero value.
    pub fn array<'v>(
        &self,
        field: &str,
        value: &'v Value,
        type_name: &str,
    ) -> Result<&'v [Value], String> {
        match value {
            Value::Null => Ok(&[]),
            Value::Array(items) => Ok(items),
            other => Err(self.mismatch(field, other, type_name)),
        }
    }

    fn mismatch(&self, field: &str, value: &Value, type_name: &str) -> String {
        format!(
            "json: cannot unmarshal {} into Go struct field {}.{field} of type {type_name}",
            value.kind(),
            self.name
        )
    }
}

/// Go's case folding of member names, close enough for ASCII field names: two characters match
/// when equal, or when their lower or upper cases are (so the Kelvin sign matches `k` and the
/// long s matches `s`, as Go's simple folding does).
fn fold_eq(field: &str, key: &str) -> bool {
    let mut a = field.chars();
    let mut b = key.chars();
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) => {
                let same = x == y
                    || x.to_lowercase().eq(y.to_lowercase())
                    || x.to_uppercase().eq(y.to_uppercase());
                if !same {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::BigInt(v), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            members.push((key, value));
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: Struct = Struct {
        name: "indexV3Meta",
        fields: &["version", "kind", "block_bytes"],
    };

    #[test]
    fn members_match_as_go_matches_them() {
        let doc = parse(
            br#"{"KIND":"a","Version":1,"kind":"b","x":2,"version":null,"BLOC\u212a_BYTES":5}"#,
        )
        .unwrap();
        let members: Vec<(&str, &Value)> = META.members(&doc).unwrap();
        assert_eq!(
            members,
            vec![
                ("kind", &Value::String("a".into())),
                ("version", &Value::Int(1)),
                ("kind", &Value::String("b".into())),
                ("version", &Value::Null),
                ("block_bytes", &Value::Int(5)),
            ]
        );
        assert_eq!(META.int("version", &Value::Null, "int"), Ok(None));
        assert_eq!(META.members(&Value::Null).unwrap(), vec![]);
        assert!(META.members(&parse(b"[]").unwrap()).is_err());
    }

    #[test]
    fn integers_must_be_integers() {
        for (text, ok) in [
            ("3", true),
            ("-3", true),
            ("3.0", false),
            ("1e2", false),
            ("9223372036854775808", false),
            ("\"3\"", false),
        ] {
            let value = parse(text.as_bytes()).unwrap();
            assert_eq!(META.int("version", &value, "int").is_ok(), ok, "{text}");
        }
        let err = META
            .int("version", &parse(b"\"3\"").unwrap(), "int")
            .unwrap_err();
        assert_eq!(
            err,
            "json: cannot unmarshal string into Go struct field indexV3Meta.version of type int"
        );
    }
}
