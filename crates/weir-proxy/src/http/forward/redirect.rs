//! `https_redirect`: a plain-HTTP request answered with 308 to the same host (its port
//! replaced by the route's `https_port`, left out when 443) and the same path and query.

use http::header::{self, HeaderValue};
use http::{Request, Response};

use crate::http::body::ProxyBody;
use crate::http::error::error_response;
use crate::reason::Reason;

pub fn to_https<B>(req: &Request<B>, port: u16) -> Response<ProxyBody> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("");
    let pq = req.uri().path_and_query().map_or("/", |p| p.as_str());
    let mut resp = error_response(Reason::HttpsRedirect);
    let host = without_port(host);
    let url = match port {
        443 => format!("https://{host}{pq}"),
        p => format!("https://{host}:{p}{pq}"),
    };
    if let Ok(v) = HeaderValue::from_str(&url) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// `a.example:8080` → `a.example`; `[::1]:8080` → `[::1]`.
fn without_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_host_path_and_query_and_drops_the_port() {
        let req = Request::get("/a/b?x=1")
            .header("host", "shop.example:8080")
            .body(())
            .unwrap();
        let r = to_https(&req, 443);
        assert_eq!(r.status(), 308);
        assert_eq!(r.headers()["location"], "https://shop.example/a/b?x=1");
        let r = to_https(&req, 8443);
        assert_eq!(r.headers()["location"], "https://shop.example:8443/a/b?x=1");
        assert_eq!(without_port("[::1]:80"), "[::1]");
        assert_eq!(without_port("[::1]"), "[::1]");
        assert_eq!(without_port("a"), "a");
    }
}
