//! Request bodies as JSON values, refusing a key repeated in one object. serde_json's
//! `Value` keeps the last of repeated keys silently, so `{"max_conn": 1, "max_conn": 0}`
//! would commit something other than what a reviewer of the body reads (and other parsers
//! keep the first). This walks the document once, building the same `Value` serde_json
//! would, and stops at the first repeated key with its JSON pointer (RFC 6901).
//! Nesting is bounded by serde_json's own recursion limit (128).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::problem::Problem;

/// Parses `bytes` as one JSON document without repeated keys.
pub fn parse(bytes: &[u8]) -> Result<Value, Problem> {
    let mut path = Vec::new();
    let mut repeated = None;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict {
        path: &mut path,
        repeated: &mut repeated,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, repeated) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(at)) => Err(Problem::bad_request(format!(
            "the body repeats the key at {at}; give each key once"
        ))
        .with_field(at)),
        (Err(e), None) => Err(Problem::bad_request(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}

/// One value; `path` holds the keys and indices leading to it, `repeated` receives the
/// pointer of a repeated key (the error serde hands back carries only a message).
struct Strict<'a> {
    path: &'a mut Vec<String>,
    repeated: &'a mut Option<String>,
}

impl Strict<'_> {
    fn child(&mut self) -> Strict<'_> {
        Strict {
            path: self.path,
            repeated: self.repeated,
        }
    }
}

/// RFC 6901: `~` is written `~0` and `/` is written `~1`.
fn pointer(path: &[String]) -> String {
    path.iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(items.len().to_string());
            let item = seq.next_element_seed(self.child())?;
            self.path.pop();
            match item {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                self.path.push(key);
                *self.repeated = Some(pointer(self.path));
                return Err(de::Error::custom("repeated key"));
            }
            self.path.push(key);
            let v = map.next_value_seed(self.child())?;
            let key = self.path.pop().unwrap_or_default();
            object.insert(key, v);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_as_serde_json_without_repeats() {
        let doc = r#"{"a": [1, -2, 3.5, null, true, "x", {"b": {}}], "c": {"a": 1}, "d": []}"#;
        let v = parse(doc.as_bytes()).unwrap();
        assert_eq!(v, serde_json::from_str::<Value>(doc).unwrap());
    }

    #[test]
    fn names_the_repeated_key() {
        for (doc, at) in [
            (r#"{"a": 1, "a": 2}"#, "/a"),
            (r#"{"x": [0, {"b": 1, "c": 2, "b": 3}]}"#, "/x/1/b"),
            (r#"{"~/": {"": 1, "": 2}}"#, "/~0~1/"),
        ] {
            let p = parse(doc.as_bytes()).unwrap_err();
            assert_eq!(p.field(), Some(at), "{doc}");
        }
        assert!(parse(b"{\"a\": 1} x").unwrap_err().field().is_none());
    }
}
