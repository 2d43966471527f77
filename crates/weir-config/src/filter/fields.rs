//! What every kind's reader shares: the keys a kind takes, the header names a filter may
//! name, and lists of strings. Its own file because each kind's file reads with these and
//! mod.rs dispatches to those files.

use crate::read::{self, Sink, Span};

/// Every key a kind takes, `kind` included.
pub(super) fn keys<'a>(own: &[&'a str]) -> Vec<&'a str> {
    let mut k = vec!["kind"];
    k.extend_from_slice(own);
    k
}

/// Fields that frame the message or the connection: a filter that set, removed, forwarded
/// or copied them would make a message that reads two ways (or break the connection), so
/// no filter may name them.
const FRAMING: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// A field name a filter may name, lower-cased.
pub(super) fn field_name(sink: &mut Sink<'_>, name: &str, span: Span) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if http::HeaderName::from_bytes(lower.as_bytes()).is_err() {
        sink.error(span, format!("{name:?} is not a valid header name"));
        return None;
    }
    if FRAMING.contains(&lower.as_str()) {
        let why = match lower.as_str() {
            "host" => "the Host weir sends is the request's, or a rewrite filter's `host`",
            _ => "it frames the message or the connection, which weir owns",
        };
        sink.error(span, format!("a filter may not use `{name}`: {why}"));
        return None;
    }
    Some(lower)
}

/// An array of strings, each with its span; anything else is reported.
pub(super) fn strings(sink: &mut Sink<'_>, v: &read::Val<'_>) -> Vec<(String, Span)> {
    let Some(a) = read::array(sink, v) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in a.iter() {
        if let Some(s) = read::string(sink, item) {
            out.push((s.to_string(), item.span()));
        }
    }
    out
}
