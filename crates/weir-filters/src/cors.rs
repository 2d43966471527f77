//! `kind = "cors"`: a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
//! is answered here, 204, never forwarded: with the allow fields when the origin, the method
//! and every requested header are allowed (`cors_preflight`), without them otherwise
//! (`cors_refused`, a 204 as rs/cors answers; the browser then blocks the request). An actual
//! request with `Origin` gets the filter's CORS fields on its answer, replacing the upstream's,
//! when its origin and method are allowed (as rs/cors, which also checks the method), and none
//! otherwise; `Vary: Origin` either way. A request without `Origin` passes untouched.

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use weir_config::filter::{normalize_origin, Names, OriginPattern, SAFELISTED_HEADERS};

use crate::cx::Cx;
use crate::kind::Kind;
use crate::statics;
use crate::verdict::{Later, Verdict};
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;
use weir_metrics::reason::Reason;

const REQUEST_METHOD: HeaderName = HeaderName::from_static("access-control-request-method");
const REQUEST_HEADERS: HeaderName = HeaderName::from_static("access-control-request-headers");

/// The fields this filter owns on an answer: the upstream's are removed.
const OWNED: [HeaderName; 6] = [
    header::ACCESS_CONTROL_ALLOW_ORIGIN,
    header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
    header::ACCESS_CONTROL_EXPOSE_HEADERS,
    header::ACCESS_CONTROL_ALLOW_METHODS,
    header::ACCESS_CONTROL_ALLOW_HEADERS,
    header::ACCESS_CONTROL_MAX_AGE,
];

#[derive(Debug)]
pub struct Cors {
    origins: Vec<OriginPattern>,
    /// `"*"` without credentials: answered `*`, which caches across origins.
    star: bool,
    methods: Vec<Method>,
    allow_methods: HeaderValue,
    headers: Names,
    expose: Option<HeaderValue>,
    max_age: Option<HeaderValue>,
    credentials: bool,
}

impl Cors {
    pub fn build(c: &weir_config::filter::Cors) -> Cors {
        let join = |v: &[String]| statics::value(&v.join(", "));
        let methods: Vec<Method> = c
            .allow_methods
            .iter()
            .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
            .collect();
        Cors {
            star: c.allow_origins.contains(&OriginPattern::Any) && !c.allow_credentials,
            origins: c.allow_origins.clone(),
            allow_methods: join(&c.allow_methods).unwrap_or(HeaderValue::from_static("")),
            methods,
            headers: c.allow_headers.clone(),
            expose: match &c.expose_headers {
                Names::Any => Some(HeaderValue::from_static("*")),
                Names::List(l) if l.is_empty() => None,
                Names::List(l) => join(l),
            },
            max_age: c.max_age.map(|d| HeaderValue::from(d.as_secs())),
            credentials: c.allow_credentials,
        }
    }

    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        // Browsers send origins already normal (lower case, no default port): one listed
        // exactly is found without normalizing (which allocates) on every request.
        let raw = origin.as_bytes();
        let listed =
            |p: &OriginPattern| matches!(p, OriginPattern::Exact(o) if o.as_bytes() == raw);
        if self.origins.iter().any(listed) {
            return true;
        }
        let Some(o) = origin
            .to_str()
            .ok()
            .and_then(|o| normalize_origin(o, false))
        else {
            return false;
        };
        self.origins.iter().any(|p| p.matches(&o))
    }

    /// The value of `Access-Control-Allow-Origin` for an allowed origin.
    fn allow_origin(&self, origin: &HeaderValue) -> HeaderValue {
        match self.star {
            true => HeaderValue::from_static("*"),
            false => origin.clone(),
        }
    }

    fn header_allowed(&self, name: &str) -> bool {
        SAFELISTED_HEADERS.contains(&name)
            || match &self.headers {
                Names::Any => true,
                Names::List(l) => l.iter().any(|h| h == name),
            }
    }
}

impl Kind for Cors {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::Cors(c) = f else {
            return None;
        };
        Some(Ok(Cors::build(c)))
    }

    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        cx.origin = req.headers().get(header::ORIGIN).cloned();
        let Some(origin) = &cx.origin else {
            return Verdict::Continue;
        };
        if req.method() != Method::OPTIONS {
            return Verdict::Continue;
        }
        let h = req.headers();
        // An OPTIONS without the field is an actual request: it goes upstream.
        let Some(asked) = h.get(REQUEST_METHOD) else {
            return Verdict::Continue;
        };
        let mut resp = Response::new(ProxyBody::full(Bytes::new()));
        *resp.status_mut() = StatusCode::NO_CONTENT;
        let out = resp.headers_mut();
        out.insert(
            header::VARY,
            HeaderValue::from_static(
                "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
            ),
        );
        let requested = requested_headers(h);
        let allowed = self.origin_allowed(origin)
            && Method::from_bytes(asked.as_bytes()).is_ok_and(|m| self.methods.contains(&m))
            && requested
                .as_ref()
                .is_some_and(|r| r.iter().all(|name| self.header_allowed(name)));
        let reason = match allowed {
            true => Reason::CorsPreflight,
            false => Reason::CorsRefused,
        };
        out.insert("x-weir-reason", HeaderValue::from_static(reason.as_str()));
        if allowed {
            out.insert(
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                self.allow_origin(origin),
            );
            out.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                self.allow_methods.clone(),
            );
            let requested = requested.unwrap_or_default();
            if !requested.is_empty() {
                if let Ok(v) = HeaderValue::from_str(&requested.join(", ")) {
                    out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, v);
                }
            }
            if let Some(v) = &self.max_age {
                out.insert(header::ACCESS_CONTROL_MAX_AGE, v.clone());
            }
            if self.credentials {
                out.insert(
                    header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                    HeaderValue::from_static("true"),
                );
            }
        }
        Verdict::Answer(Box::new(resp), reason)
    }

    fn response(&self, cx: &mut Cx<'_>, resp: &mut Response<ProxyBody>) -> Later {
        let Some(origin) = &cx.origin else {
            return Later::Done;
        };
        let allowed = self.origin_allowed(origin) && self.methods.contains(&cx.method);
        let h = resp.headers_mut();
        // Most answers hold none of them: one pass over the names (all six begin alike), not
        // six removes.
        if h.keys().any(|k| k.as_str().starts_with("access-control-")) {
            for name in &OWNED {
                h.remove(name);
            }
        }
        add_vary_origin(h);
        if !allowed {
            return Later::Done;
        }
        h.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            self.allow_origin(origin),
        );
        if self.credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        if let Some(v) = &self.expose {
            h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v.clone());
        }
        Later::Done
    }
}

/// The names in `Access-Control-Request-Headers`, lower-cased; `None` when a field is not
/// text (refused).
fn requested_headers(h: &HeaderMap) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for v in h.get_all(REQUEST_HEADERS) {
        for name in v.to_str().ok()?.split(',') {
            let name = name.trim();
            if !name.is_empty() {
                out.push(name.to_ascii_lowercase());
            }
        }
    }
    Some(out)
}

/// `Origin` added to `Vary`, merged into the fields already there (one field, so a cache
/// that reads only the first still sees them all); nothing when they name it or `*`.
fn add_vary_origin(h: &mut HeaderMap) {
    if let header::Entry::Vacant(e) = h.entry(header::VARY) {
        e.insert(HeaderValue::from_static("Origin"));
        return;
    }
    let mut parts: Vec<&str> = Vec::new();
    for v in h.get_all(header::VARY) {
        let Ok(s) = v.to_str() else { continue };
        for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if t == "*" || t.eq_ignore_ascii_case("origin") {
                return;
            }
            parts.push(t);
        }
    }
    parts.push("Origin");
    if let Ok(v) = HeaderValue::from_str(&parts.join(", ")) {
        h.insert(header::VARY, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `response` looks for the owned fields by this prefix.
    #[test]
    fn owned_fields_share_a_prefix() {
        assert!(OWNED
            .iter()
            .all(|n| n.as_str().starts_with("access-control-")));
    }

    #[test]
    fn vary_is_merged_once() {
        let mut h = HeaderMap::new();
        add_vary_origin(&mut h);
        assert_eq!(h.get(header::VARY).unwrap(), "Origin");
        add_vary_origin(&mut h);
        assert_eq!(h.get_all(header::VARY).iter().count(), 1);
        let mut h = HeaderMap::new();
        h.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
        h.append(header::VARY, HeaderValue::from_static("Cookie"));
        add_vary_origin(&mut h);
        assert_eq!(
            h.get(header::VARY).unwrap(),
            "Accept-Encoding, Cookie, Origin"
        );
        let mut h = HeaderMap::new();
        h.append(header::VARY, HeaderValue::from_static("*"));
        add_vary_origin(&mut h);
        assert_eq!(h.get(header::VARY).unwrap(), "*");
    }
}
