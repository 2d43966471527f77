//! `kind = "rewrite"`: the path and host the upstream gets. The path is changed in this order:
//! `strip_prefix`, then `path_regex`, then `add_prefix`; or replaced whole by `replace_path`.

use super::fields;
use super::regex::{self, PathRegex};
use crate::read::{self, Fields, Sink};

const KEYS: &[&str] = &[
    "strip_prefix",
    "add_prefix",
    "replace_path",
    "path_regex",
    "path_replacement",
    "host",
];

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rewrite {
    /// Removed from the front of the path when the path is it or goes on below it
    /// (`/api` strips `/api` and `/api/x`, not `/apix`); it then goes upstream in
    /// `X-Forwarded-Prefix`.
    pub strip_prefix: Option<String>,
    pub add_prefix: Option<String>,
    pub replace_path: Option<String>,
    pub path_regex: Option<PathRegex>,
    /// The Host sent upstream.
    pub host: Option<String>,
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Rewrite {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut r = Rewrite {
        strip_prefix: path(sink, t, "strip_prefix"),
        add_prefix: path(sink, t, "add_prefix"),
        replace_path: path(sink, t, "replace_path"),
        path_regex: regex::read(sink, t),
        host: None,
    };
    if let Some(v) = t.get("host") {
        if let Some(s) = read::string(sink, v) {
            match crate::host::header_value(s, "host") {
                Ok(()) => r.host = Some(s.to_string()),
                Err(e) => sink.error(v.span(), e),
            }
        }
    }
    if let Some(span) = t.key_span("replace_path") {
        let others = ["strip_prefix", "add_prefix", "path_regex"];
        if let Some(o) = others.iter().find(|k| t.get(k).is_some()) {
            sink.error(
                span,
                format!("replace_path replaces the whole path, so `{o}` would do nothing; use one or the other"),
            );
        }
    }
    // Only `kind`: a misspelt key is already reported as unknown.
    if t.entries().len() == 1 {
        sink.error(
            t.span.clone(),
            format!(
                "this rewrite filter changes nothing; give it one of: {}",
                KEYS.join(", ")
            ),
        );
    }
    r
}

/// A path: starts with `/`, no query, fragment, space or control characters.
pub(super) fn path(sink: &mut Sink<'_>, t: &Fields<'_, '_>, key: &str) -> Option<String> {
    let v = t.get(key)?;
    let s = read::string(sink, v)?;
    match crate::request_path::check_path(s) {
        Ok(()) if !s.is_ascii() => {
            sink.error(
                v.span(),
                format!("invalid {key} {s:?}: percent-encode what is not ASCII"),
            );
            None
        }
        Ok(()) => Some(s.to_string()),
        Err(e) => {
            sink.error(v.span(), format!("invalid {key} {s:?}: {e}"));
            None
        }
    }
}
