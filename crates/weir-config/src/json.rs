//! API resources (JSON) as the tree the readers walk: the same `DeValue` tree a TOML file
//! parses into, so one set of readers and rules serves both. A node's span is not a byte
//! range but a key into [`Paths`], the field path it came from (`pools/app/health/timeout`),
//! which is what the API reports. Keys are handed out in increasing order, so sorting
//! problems by span sorts them by the order the fields were read in.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use serde_json::Value;
use toml::de::{DeArray, DeTable, DeValue};
use toml::Spanned;

use crate::read::{Span, Val};

/// Field paths by span key. Each resource's paths are one contiguous range, dropped when the
/// resource is read again or deleted.
#[derive(Debug, Default)]
pub(crate) struct Paths {
    by_key: BTreeMap<usize, String>,
    next: usize,
}

impl Paths {
    fn add(&mut self, path: String) -> Span {
        let k = self.next;
        self.next += 1;
        self.by_key.insert(k, path);
        k..k + 1
    }

    /// Where the next path will go: the start of a resource's range.
    pub(crate) fn mark(&self) -> usize {
        self.next
    }

    pub(crate) fn since(&self, start: usize) -> Range<usize> {
        start..self.next
    }

    pub(crate) fn get(&self, k: usize) -> Option<String> {
        self.by_key.get(&k).cloned()
    }

    pub(crate) fn drop_range(&mut self, range: Range<usize>) {
        let keys: Vec<usize> = self.by_key.range(range).map(|(k, _)| *k).collect();
        for k in keys {
            self.by_key.remove(&k);
        }
    }

    /// A path for something that is not a JSON value (the array of a pool's endpoints).
    pub(crate) fn node(&mut self, path: String) -> Span {
        self.add(path)
    }
}

/// The text of every number in `v`, by the address of its node: TOML's tree keeps numbers
/// as text borrowed from its source, so the text must outlive the tree.
pub(crate) type Numbers = HashMap<usize, String>;

pub(crate) fn numbers(v: &Value, out: &mut Numbers) {
    match v {
        Value::Number(n) => {
            out.insert(v as *const Value as usize, n.to_string());
        }
        Value::Array(items) => items.iter().for_each(|i| numbers(i, out)),
        Value::Object(map) => map.values().for_each(|i| numbers(i, out)),
        _ => {}
    }
}

/// `v` at `path` as a spanned tree; None for null, which in a spec means "absent". `nums`
/// is [`numbers`] of `v`.
pub(crate) fn tree<'t>(
    v: &Value,
    nums: &'t Numbers,
    path: &str,
    paths: &mut Paths,
) -> Option<Val<'t>> {
    let value = match v {
        Value::Null => return None,
        Value::Bool(b) => DeValue::Boolean(*b),
        Value::String(s) => DeValue::String(Cow::Owned(s.clone())),
        Value::Number(_) => match nums.get(&(v as *const Value as usize)) {
            Some(text) => number(text),
            None => DeValue::String(Cow::Owned(v.to_string())),
        },
        Value::Array(items) => {
            let span = paths.add(path.to_owned());
            let mut a = DeArray::new();
            // An item is named by its array, as the API always has (`retry/on_status`).
            for item in items {
                if let Some(t) = tree(item, nums, path, paths) {
                    a.push(t);
                }
            }
            return Some(Spanned::new(span, DeValue::Array(a)));
        }
        Value::Object(map) => {
            let span = paths.add(path.to_owned());
            return Some(Spanned::new(
                span,
                DeValue::Table(table(map, nums, path, paths)),
            ));
        }
    };
    Some(Spanned::new(paths.add(path.to_owned()), value))
}

/// The entries of an object, plain values first and nested tables after them, the order a
/// file lists them in (`[pools.app.health]` comes after the pool's own keys).
fn table<'t>(
    map: &serde_json::Map<String, Value>,
    nums: &'t Numbers,
    path: &str,
    paths: &mut Paths,
) -> DeTable<'t> {
    let mut t = DeTable::new();
    let (nested, plain): (Vec<_>, Vec<_>) = map.iter().partition(|(_, v)| v.is_object());
    for (k, v) in plain.into_iter().chain(nested) {
        let field = format!("{path}/{k}");
        let key_span = paths.add(field.clone());
        if let Some(node) = tree(v, nums, &field, paths) {
            t.insert(Spanned::new(key_span, Cow::Owned(k.clone())), node);
        }
    }
    t
}

/// A JSON number as TOML's: an integer when it is one (a u64 beyond i64 stays an integer,
/// which the readers then call out of range), else a float.
fn number(text: &str) -> DeValue<'_> {
    match DeValue::parse(text) {
        Ok(v) => v.into_inner(),
        // serde_json never prints a number TOML cannot read; keep the text as a string so a
        // reader says "expected an integer, found a string" rather than nothing.
        Err(_) => DeValue::String(Cow::Owned(text.to_owned())),
    }
}

/// An array node holding `items`, at `span`.
pub(crate) fn array(span: Span, items: Vec<Val<'_>>) -> Val<'_> {
    let mut a = DeArray::new();
    for i in items {
        a.push(i);
    }
    Spanned::new(span, DeValue::Array(a))
}
