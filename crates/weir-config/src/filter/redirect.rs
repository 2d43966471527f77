//! `kind = "redirect"`: weir answers with a 3xx pointing elsewhere. Only the parts named change
//! (`scheme`, `host`, `port`, the path by `path` or `path_regex`); the query is kept unless
//! `query = "drop"`. A request already at the target (`scheme = "https"` over TLS) passes
//! on, so a redirect never loops on itself; with `path_regex`, only matching paths redirect.

use super::fields;
use super::regex::{self, PathRegex};
use crate::read::{self, Fields, Sink};

const KEYS: &[&str] = &[
    "scheme",
    "host",
    "port",
    "path",
    "path_regex",
    "path_replacement",
    "status",
    "query",
];

/// The statuses a redirect may answer with.
pub const STATUSES: &[u16] = &[301, 302, 303, 307, 308];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectScheme {
    Http,
    Https,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Redirect {
    pub scheme: Option<RedirectScheme>,
    /// A host name or address, without port.
    pub host: Option<String>,
    pub port: Option<u16>,
    pub path: Option<String>,
    pub path_regex: Option<PathRegex>,
    /// Default 302.
    pub status: u16,
    /// Default true.
    pub keep_query: bool,
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>) -> Redirect {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut r = Redirect {
        scheme: t.choice(
            sink,
            "scheme",
            &[
                ("http", RedirectScheme::Http),
                ("https", RedirectScheme::Https),
            ],
        ),
        host: None,
        port: t.int(sink, "port", 1..=65535),
        path: super::rewrite::path(sink, t, "path"),
        path_regex: regex::read(sink, t),
        status: 302,
        keep_query: t
            .choice(sink, "query", &[("keep", true), ("drop", false)])
            .unwrap_or(true),
    };
    if let Some(v) = t.get("host") {
        if let Some(s) = read::string(sink, v) {
            match crate::host::header_value(s, "host") {
                Ok(()) if s.ends_with(']') || !s.contains(':') => r.host = Some(s.to_string()),
                Ok(()) => sink.error(
                    v.span(),
                    format!("invalid host \"{s}\": give the port as `port`"),
                ),
                Err(e) => sink.error(v.span(), e),
            }
        }
    }
    if let Some(v) = t.get("status") {
        match read::integer_value(v.get_ref()) {
            Some(n) if STATUSES.iter().any(|&s| i64::from(s) == n) => r.status = n as u16,
            Some(n) => sink.error(
                v.span(),
                format!("status = {n} is not a redirect; use one of 301, 302, 303, 307, 308"),
            ),
            None => read::wrong_type(sink, v, "an integer"),
        }
    }
    if let (Some(span), true) = (t.key_span("path"), t.get("path_regex").is_some()) {
        sink.error(span, "give either path or path_regex, not both");
    }
    let target = ["scheme", "host", "port", "path", "path_regex"];
    if !target.iter().any(|k| t.get(k).is_some()) {
        sink.error(
            t.span.clone(),
            format!(
                "this redirect names no target; give it one of: {}",
                target.join(", ")
            ),
        );
    }
    r
}
