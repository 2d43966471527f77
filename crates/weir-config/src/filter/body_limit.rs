//! `kind = "body_limit"`: the largest request body a route takes. A `Content-Length` over it
//! is answered 413 before any of the body is read (and before `100 Continue`); a body without
//! a length is counted as it streams and cut at the limit.

use super::fields;
use crate::read::{Fields, Sink};

const KEYS: &[&str] = &["max_bytes"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyLimit {
    pub max_bytes: u64,
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>, what: &str) -> BodyLimit {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut b = BodyLimit { max_bytes: 0 };
    if let Some(v) = t.require(sink, "max_bytes", what, "\"10MiB\"") {
        match crate::read::size(v) {
            Ok(n) => b.max_bytes = n,
            Err(e) => sink.error(v.span(), format!("invalid max_bytes: {e}")),
        }
    }
    b
}
