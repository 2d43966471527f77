//! `kind = "redirect"`: weir answers with a 3xx whose `Location` is the request's URL with the
//! configured parts changed. A request already at that URL passes on, and so does one already
//! on the scheme of a redirect that changes only the scheme (and port), as Traefik's
//! RedirectScheme: a `scheme = "https"` redirect does nothing over TLS. With `path_regex` only
//! a matching path redirects. A route's `https_redirect` is one of these (`to_https`).

use http::header::{self, HeaderValue};
use http::{Request, StatusCode};
use weir_config::filter::PathRewrite;
use weir_config::filter::RedirectScheme;

use crate::cx::{Cx, Reads};
use crate::kind::Kind;
use crate::verdict::Verdict;
use weir_codec::client_body::ClientBody;
use weir_http::error::error_response_as;
use weir_metrics::reason::Reason;

#[derive(Debug)]
pub struct Redirect {
    scheme: Option<&'static str>,
    host: Option<String>,
    port: Option<u16>,
    path: Option<String>,
    regex: Option<PathRewrite>,
    status: u16,
    keep_query: bool,
    /// What the answer is counted under: `redirected`, or `https_redirect` for a route's.
    reason: Reason,
}

impl Redirect {
    pub fn build(r: &weir_config::filter::Redirect) -> Result<Redirect, String> {
        let regex = r.path_regex.as_ref().map(|p| p.compiled()).transpose()?;
        Ok(Redirect {
            scheme: r.scheme.map(|s| match s {
                RedirectScheme::Http => "http",
                RedirectScheme::Https => "https",
            }),
            host: r.host.clone(),
            port: r.port,
            path: r.path.clone(),
            regex,
            status: r.status,
            keep_query: r.keep_query,
            reason: Reason::Redirected,
        })
    }

    /// A route's `https_redirect`: plain HTTP answered 308 to the same host, path and query
    /// on https, at `port` (left out of the URL when 443).
    pub fn to_https(port: u16) -> Redirect {
        Redirect {
            scheme: Some("https"),
            host: None,
            port: Some(port),
            path: None,
            regex: None,
            status: 308,
            keep_query: true,
            reason: Reason::HttpsRedirect,
        }
    }
}

impl Kind for Redirect {
    fn build(_name: &str, f: &weir_config::Filter) -> Option<Result<Self, String>> {
        let weir_config::Filter::Redirect(r) = f else {
            return None;
        };
        Some(Redirect::build(r))
    }

    /// The Host of the URL it points to, when it keeps the request's.
    fn reads(&self) -> Reads {
        Reads {
            uri: false,
            host: true,
        }
    }

    fn request(&self, cx: &mut Cx<'_>, req: &mut Request<ClientBody>) -> Verdict {
        let here = cx.scheme();
        let scheme = self.scheme.unwrap_or(here);
        let scheme_only = self.host.is_none() && self.path.is_none() && self.regex.is_none();
        if scheme_only && scheme == here {
            return Verdict::Continue;
        }
        let (req_host, req_port) =
            split_host(cx.host().and_then(|h| h.to_str().ok()).unwrap_or(""));
        let host = self.host.as_deref().unwrap_or(req_host);
        // A port given wins; else the request's, unless the scheme changes (its default then).
        let port = match (self.port, scheme == here) {
            (Some(p), _) => Some(p),
            (None, true) => req_port,
            (None, false) => None,
        };
        let old_path = req.uri().path();
        let path = match (&self.path, &self.regex) {
            (Some(p), _) => p.clone(),
            (None, Some(rewrite)) => {
                let Some(s) = rewrite.apply(old_path) else {
                    return Verdict::Continue;
                };
                match s.starts_with('/') {
                    true => s.into_owned(),
                    false => format!("/{s}"),
                }
            }
            (None, None) => old_path.to_string(),
        };
        let query = req.uri().query().filter(|_| self.keep_query);
        let same = scheme == here
            && host.eq_ignore_ascii_case(req_host)
            && port == req_port
            && path == old_path
            && query == req.uri().query();
        if same {
            return Verdict::Continue;
        }
        let default_port = if scheme == "https" { 443 } else { 80 };
        let mut url = format!("{scheme}://{host}");
        if let Some(p) = port.filter(|&p| p != default_port) {
            url.push_str(&format!(":{p}"));
        }
        url.push_str(&path);
        if let Some(q) = query {
            url.push('?');
            url.push_str(q);
        }
        let Ok(location) = HeaderValue::from_str(&url) else {
            return Verdict::Continue;
        };
        let mut resp = error_response_as(self.status, self.reason);
        debug_assert!(StatusCode::from_u16(self.status).is_ok_and(|s| s.is_redirection()));
        resp.headers_mut().insert(header::LOCATION, location);
        Verdict::Answer(Box::new(resp), self.reason)
    }
}

/// `a.example:8080` → (`a.example`, 8080); `[::1]:80` → (`[::1]`, 80).
fn split_host(h: &str) -> (&str, Option<u16>) {
    match h.rfind(':') {
        Some(i) if !h[i..].contains(']') => (&h[..i], h[i + 1..].parse().ok()),
        _ => (h, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_split() {
        assert_eq!(split_host("a.example:8080"), ("a.example", Some(8080)));
        assert_eq!(split_host("[::1]:80"), ("[::1]", Some(80)));
        assert_eq!(split_host("[::1]"), ("[::1]", None));
        assert_eq!(split_host("a"), ("a", None));
    }
}
