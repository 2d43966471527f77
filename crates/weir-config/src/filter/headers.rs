//! `kind = "headers"`: request and response fields set, added and removed, values from
//! templates; and the request id.

use super::fields;
use super::template::{self, Template};
use crate::read::{self, Fields, Sink, Val};

const KEYS: &[&str] = &[
    "request_set",
    "request_add",
    "request_remove",
    "response_set",
    "response_add",
    "response_remove",
    "request_id",
];

#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeaderRules {
    pub request: HeaderOps,
    pub response: HeaderOps,
    /// The field carrying the request id (e.g. `X-Request-Id`): the client's value is kept
    /// when it comes through a trusted proxy, otherwise a new id is made; it goes upstream,
    /// back to the client, and into the access log.
    pub request_id: Option<String>,
}

/// One direction's changes, applied in this order: remove, set, add.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeaderOps {
    /// Lower-cased names.
    pub remove: Vec<String>,
    /// Replace any values of the name.
    pub set: Vec<(String, Template)>,
    /// Appended to the values already there.
    pub add: Vec<(String, Template)>,
}

impl HeaderOps {
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty() && self.set.is_empty() && self.add.is_empty()
    }
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> HeaderRules {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut h = HeaderRules::default();
    for (dir, ops) in [("request", &mut h.request), ("response", &mut h.response)] {
        if let Some(v) = t.get(&format!("{dir}_remove")) {
            for (name, span) in fields::strings(sink, v) {
                if let Some(n) = fields::field_name(sink, &name, span) {
                    ops.remove.push(n);
                }
            }
        }
        ops.set = values(sink, t, &format!("{dir}_set"));
        ops.add = values(sink, t, &format!("{dir}_add"));
    }
    if let Some(v) = t.get("request_id") {
        if let Some(s) = read::string(sink, v) {
            h.request_id = fields::field_name(sink, s, v.span());
        }
    }
    // Only `kind`: a misspelt key is already reported as unknown.
    if t.entries().len() == 1 {
        sink.error(
            t.span.clone(),
            format!(
                "this headers filter changes nothing; give it one of: {}",
                KEYS.join(", ")
            ),
        );
    }
    h
}

/// `{ "X-Name" = "value", ... }`.
fn values(sink: &mut Sink<'_>, t: &Fields<'_, '_>, key: &str) -> Vec<(String, Template)> {
    let Some(v) = t.get(key) else {
        return Vec::new();
    };
    let Some(table) = read::table(sink, v) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, span, val) in table.entries() {
        let n = fields::field_name(sink, name, span);
        let tpl = template_value(sink, val);
        if let (Some(n), Some(tpl)) = (n, tpl) {
            out.push((n, tpl));
        }
    }
    out
}

fn template_value(sink: &mut Sink<'_>, v: &Val<'_>) -> Option<Template> {
    let s = read::string(sink, v)?;
    match template::parse(s) {
        Ok(t) => Some(t),
        Err(e) => {
            sink.error(v.span(), format!("invalid header value {s:?}: {e}"));
            None
        }
    }
}
