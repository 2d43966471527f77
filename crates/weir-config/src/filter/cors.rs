//! `kind = "cors"`: cross-origin requests from the origins allowed. A preflight (`OPTIONS` with
//! `Origin` and `Access-Control-Request-Method`) is answered by weir and never forwarded; an
//! actual request from an allowed origin gets the CORS response fields, which replace any the
//! upstream sent.
//!
//! An origin is `scheme://host[:port]`, compared case-insensitively (a default port, 80 for
//! http and 443 for https, is the same as none). `scheme://*.example.com` allows every
//! subdomain at any depth (`a.example.com`, `a.b.example.com`), never `example.com` itself,
//! as rs/cors does. `"*"` alone allows every origin, and only without credentials: browsers
//! refuse a wildcard answer to a request with credentials.

use std::time::Duration;

use super::fields;
use crate::read::{self, Fields, Sink};

const KEYS: &[&str] = &[
    "allow_origins",
    "allow_methods",
    "allow_headers",
    "expose_headers",
    "max_age",
    "allow_credentials",
];

/// `allow_methods` when not given: the CORS-safelisted methods.
pub const DEFAULT_METHODS: &[&str] = &["GET", "HEAD", "POST"];

/// Request fields a preflight may always ask for: those a page could send without a
/// preflight (the Fetch standard's CORS-safelisted request-headers; `content-type` with any
/// value, as most CORS middlewares allow).
pub const SAFELISTED_HEADERS: &[&str] = &[
    "accept",
    "accept-language",
    "content-language",
    "content-type",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Cors {
    pub allow_origins: Vec<OriginPattern>,
    /// As written (methods are case-sensitive); default [`DEFAULT_METHODS`].
    pub allow_methods: Vec<String>,
    /// Lower-cased; `Any` for `["*"]`.
    pub allow_headers: Names,
    pub expose_headers: Names,
    /// `Access-Control-Max-Age`; none by default (a browser then caches for 5 s).
    pub max_age: Option<Duration>,
    pub allow_credentials: bool,
}

/// A list of field names, or `"*"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Names {
    Any,
    List(Vec<String>),
}

/// One entry of `allow_origins`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginPattern {
    /// `"*"`.
    Any,
    /// An origin, normalized by [`normalize_origin`].
    Exact(String),
    /// `scheme://*.suffix[:port]`: `prefix` is `scheme://`, `suffix` is `.example.com[:port]`.
    Subdomains { prefix: String, suffix: String },
}

impl OriginPattern {
    /// Whether `origin`, normalized, is allowed by this entry.
    pub fn matches(&self, origin: &str) -> bool {
        match self {
            OriginPattern::Any => true,
            OriginPattern::Exact(o) => o == origin,
            OriginPattern::Subdomains { prefix, suffix } => origin
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_suffix(suffix.as_str()))
                // At least one label before the suffix, and no port or path smuggled in.
                .is_some_and(|label| {
                    !label.is_empty() && !label.starts_with('.') && !label.contains([':', '/', '@'])
                }),
        }
    }
}

/// An origin as weir compares it: scheme and host lower-cased, a default port dropped.
/// `None` when `s` is not `scheme://host[:port]` (a path, a user, `null`). With `wildcard`,
/// the host may start with `*.`.
pub fn normalize_origin(s: &str, wildcard: bool) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return None;
    }
    let (host, port) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains(']') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    let name = match wildcard {
        true => host.strip_prefix("*.").unwrap_or(host),
        false => host,
    };
    let host_ok = match name.strip_prefix('[') {
        Some(v6) => v6
            .strip_suffix(']')
            .is_some_and(|a| a.parse::<std::net::Ipv6Addr>().is_ok()),
        None => {
            !name.is_empty()
                && name.split('.').all(|l| {
                    !l.is_empty()
                        && l.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                })
        }
    };
    if !host_ok {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => Some(n),
            _ => return None,
        },
    };
    let default = match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    let mut out = format!("{scheme}://{}", host.to_ascii_lowercase());
    if let Some(p) = port.filter(|&p| Some(p) != default) {
        out.push_str(&format!(":{p}"));
    }
    Some(out)
}

pub(super) fn read(sink: &mut Sink<'_>, t: &Fields<'_, '_>, what: &str) -> Cors {
    t.check_keys(sink, &fields::keys(KEYS));
    let mut c = Cors {
        allow_origins: Vec::new(),
        allow_methods: DEFAULT_METHODS.iter().map(|m| m.to_string()).collect(),
        allow_headers: Names::List(Vec::new()),
        expose_headers: Names::List(Vec::new()),
        max_age: t.duration(sink, "max_age", false),
        allow_credentials: false,
    };
    if let Some(v) = t.get("allow_credentials") {
        match v.get_ref().as_bool() {
            Some(b) => c.allow_credentials = b,
            None => read::wrong_type(sink, v, "a boolean"),
        }
    }
    let credentials = c.allow_credentials;
    let no_star = |sink: &mut Sink<'_>, key: &str, span: read::Span| {
        sink.error(
            span,
            format!(
                "{key} = [\"*\"] cannot be used with allow_credentials = true: browsers refuse \
                 a wildcard with credentials; list them instead"
            ),
        );
    };
    if let Some(v) = t.require(sink, "allow_origins", what, "[\"https://app.example.com\"]") {
        let items = fields::strings(sink, v);
        if items.is_empty() && read::array_len(v) == Some(0) {
            sink.error(v.span(), "allow_origins is empty; list at least one origin");
        }
        let many = items.len() > 1;
        for (s, span) in items {
            if s == "*" {
                if credentials {
                    no_star(sink, "allow_origins", span);
                } else if many {
                    sink.error(span, "\"*\" allows every origin: give it alone");
                } else {
                    c.allow_origins.push(OriginPattern::Any);
                }
                continue;
            }
            match origin_pattern(&s) {
                Ok(p) => c.allow_origins.push(p),
                Err(e) => sink.error(span, e),
            }
        }
    }
    if let Some(v) = t.get("allow_methods") {
        c.allow_methods.clear();
        for (m, span) in fields::strings(sink, v) {
            match http::Method::from_bytes(m.as_bytes()) {
                Ok(_) if m != "*" => c.allow_methods.push(m),
                _ => sink.error(span, format!("{m:?} is not a method name")),
            }
        }
    }
    for (key, names) in [
        ("allow_headers", &mut c.allow_headers),
        ("expose_headers", &mut c.expose_headers),
    ] {
        let Some(v) = t.get(key) else { continue };
        let mut list = Vec::new();
        for (name, span) in fields::strings(sink, v) {
            if name == "*" {
                if credentials {
                    no_star(sink, key, span);
                } else {
                    *names = Names::Any;
                }
                continue;
            }
            let lower = name.to_ascii_lowercase();
            match http::HeaderName::from_bytes(lower.as_bytes()) {
                Ok(_) => list.push(lower),
                Err(_) => sink.error(span, format!("{name:?} is not a valid header name")),
            }
        }
        if *names != Names::Any {
            *names = Names::List(list);
        }
    }
    c
}

fn origin_pattern(s: &str) -> Result<OriginPattern, String> {
    let bad = |why: &str| format!("invalid origin {s:?}: {why}");
    if !s.contains("://") {
        return Err(bad(
            "write it as scheme://host[:port], e.g. \"https://app.example.com\"",
        ));
    }
    let after = &s[s.find("://").unwrap_or(0) + 3..];
    if after.contains('/') {
        return Err(bad(
            "an origin has no path (not even `/`): write only scheme://host[:port]",
        ));
    }
    let wildcard = after.starts_with("*.");
    if after.contains('*') && !wildcard {
        return Err(bad(
            "`*` may only stand for the subdomains, as in \"https://*.example.com\"",
        ));
    }
    let norm = normalize_origin(s, wildcard).ok_or_else(|| bad("expected scheme://host[:port]"))?;
    if !wildcard {
        return Ok(OriginPattern::Exact(norm));
    }
    let (prefix, suffix) = norm.split_once("*").expect("a wildcard origin has `*`");
    Ok(OriginPattern::Subdomains {
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_normalize_and_match() {
        assert_eq!(
            normalize_origin("HTTPS://App.Example.com:443", false).as_deref(),
            Some("https://app.example.com")
        );
        assert_eq!(
            normalize_origin("http://[::1]:8080", false).as_deref(),
            Some("http://[::1]:8080")
        );
        for bad in [
            "null",
            "https://a.com/",
            "https://",
            "https://a..b",
            "https://a:x",
            "a.com",
        ] {
            assert_eq!(normalize_origin(bad, false), None, "{bad}");
        }
        let w = origin_pattern("https://*.Example.com").unwrap();
        assert!(w.matches("https://a.example.com"));
        assert!(w.matches("https://a.b.example.com"));
        assert!(!w.matches("https://example.com"));
        assert!(!w.matches("http://a.example.com"));
        assert!(!w.matches("https://a.example.com:8443"));
        assert!(!w.matches("https://aexample.com"));
        let p = origin_pattern("https://*.example.com:8443").unwrap();
        assert!(p.matches("https://a.example.com:8443"));
        assert!(origin_pattern("https://a.*.com").is_err());
        assert!(origin_pattern("https://a.com/").is_err());
    }
}
