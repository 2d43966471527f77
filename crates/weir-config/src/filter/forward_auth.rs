//! `kind = "forward_auth"`: each request is first asked about of an auth service, a weir pool
//! (`pool`), with a GET to `path` carrying chosen request fields and `X-Forwarded-*`. A 2xx
//! answer lets the request on (with chosen answer fields copied onto it); any other answer
//! is what the client gets. Positive answers may be cached (`cache_ttl`) by `cache_key`.

use std::time::Duration;

use super::fields;
use crate::read::{self, Fields, Sink, Span};

const KEYS: &[&str] = &[
    "pool",
    "path",
    "request_headers",
    "response_headers",
    "timeout",
    "cache_ttl",
    "cache_key",
];

/// `timeout` when none is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// `request_headers` when none is given.
pub const DEFAULT_REQUEST_HEADERS: &[&str] = &["authorization", "cookie"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardAuth {
    /// The auth service's pool.
    pub pool: String,
    /// Path (and query) the auth request asks for. Default `/`.
    pub path: String,
    /// Lower-cased names of the request fields the auth request carries.
    pub request_headers: Vec<String>,
    /// Lower-cased names of the answer fields copied onto the request after a 2xx; the
    /// client's own values of these names are removed first.
    pub response_headers: Vec<String>,
    pub timeout: Duration,
    /// How long a 2xx answer is reused for the same `cache_key` values; none = no cache.
    pub cache_ttl: Option<Duration>,
    /// Lower-cased names whose values key the cache. Default: `request_headers`.
    pub cache_key: Vec<String>,
}

pub(super) fn read(
    sink: &mut Sink<'_>,
    t: &Fields<'_, '_>,
    what: &str,
    pool: &mut Option<Span>,
) -> ForwardAuth {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut f = ForwardAuth {
        pool: String::new(),
        path: "/".to_string(),
        request_headers: DEFAULT_REQUEST_HEADERS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        response_headers: Vec::new(),
        timeout: t.duration(sink, "timeout", true).unwrap_or(DEFAULT_TIMEOUT),
        cache_ttl: t.duration(sink, "cache_ttl", true),
        cache_key: Vec::new(),
    };
    if let Some(v) = t.require(sink, "pool", what, "\"auth\"") {
        if let Some(s) = read::string(sink, v) {
            f.pool = s.to_string();
            *pool = Some(v.span());
        }
    }
    if let Some(v) = t.get("path") {
        if let Some(s) = read::string(sink, v) {
            let ok = s.starts_with('/') && http::uri::PathAndQuery::try_from(s).is_ok();
            match ok && !s.contains('#') {
                true => f.path = s.to_string(),
                false => sink.error(
                    v.span(),
                    format!("invalid path {s:?}: expected an absolute path like \"/verify\", with an optional query"),
                ),
            }
        }
    }
    if let Some(v) = t.get("request_headers") {
        f.request_headers = names(sink, v);
    }
    if let Some(v) = t.get("response_headers") {
        f.response_headers = names(sink, v);
    }
    f.cache_key = match t.get("cache_key") {
        Some(v) => {
            let k = names(sink, v);
            if k.is_empty() && read::array_len(v) == Some(0) {
                sink.error(
                    v.span(),
                    "an empty cache_key would share one cached answer among all clients; name the fields that identify a client",
                );
            }
            k
        }
        None => f.request_headers.clone(),
    };
    if let (Some(span), None) = (t.key_span("cache_key"), f.cache_ttl) {
        if t.get("cache_ttl").is_none() {
            sink.error(
                span,
                "cache_key does nothing without cache_ttl; add e.g. cache_ttl = \"30s\"",
            );
        }
    }
    if f.cache_ttl.is_some() && f.cache_key.is_empty() && t.get("cache_key").is_none() {
        if let Some(span) = t.key_span("cache_ttl") {
            sink.error(
                span,
                "with no request_headers there is nothing to key the cache by; give cache_key",
            );
        }
    }
    f
}

/// An array of field names, lower-cased, without repeats.
fn names(sink: &mut Sink<'_>, v: &read::Val<'_>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (name, span) in fields::strings(sink, v) {
        if let Some(n) = fields::field_name(sink, &name, span.clone()) {
            if out.contains(&n) {
                sink.error(span, format!("`{name}` is already in this list"));
            } else {
                out.push(n);
            }
        }
    }
    out
}
