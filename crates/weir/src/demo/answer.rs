//! What a demo backend answers, by path (any method), for the README's tour:
//!
//! - `/headers`: what the backend saw, as JSON: `{upstream, method, uri, version,
//!   headers: [[name, value], ...], body_len}` (X-Forwarded-* included);
//! - `/status/{code}`: that status (the tour's "upstream answers pass through"), body
//!   `NAME\n`, none for 204 and 304;
//! - anything else: 200, body `NAME\n` (which backend the balancer chose).

use http::request::Parts;
use http::StatusCode;

/// An answer, before it is written (`backend.rs` frames it).
pub struct Answer {
    pub status: StatusCode,
    /// `None` with an empty body (204, 304).
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
}

/// The answer of backend `name` to a request with head `req` and `body_len` bytes of body.
pub fn to(name: &str, req: &Parts, body_len: u64) -> Answer {
    let path = req.uri.path();
    if path == "/headers" {
        let headers: Vec<(&str, String)> = req
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect();
        let json = serde_json::json!({
            "upstream": name,
            "method": req.method.as_str(),
            "uri": req.uri.to_string(),
            "version": format!("{:?}", req.version),
            "headers": headers,
            "body_len": body_len,
        });
        return Answer {
            status: StatusCode::OK,
            content_type: Some("application/json"),
            body: json.to_string().into_bytes(),
        };
    }
    if let Some(code) = path.strip_prefix("/status/") {
        return match code.parse().ok().and_then(|c| StatusCode::from_u16(c).ok()) {
            Some(s) if s.is_informational() => bad("1xx cannot be a final status"),
            Some(s @ (StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED)) => Answer {
                status: s,
                content_type: None,
                body: Vec::new(),
            },
            Some(s) => text(s, format!("{name}\n")),
            None => bad("bad status code"),
        };
    }
    text(StatusCode::OK, format!("{name}\n"))
}

fn bad(why: &str) -> Answer {
    text(StatusCode::BAD_REQUEST, format!("{why}\n"))
}

/// A plain-text answer.
pub fn text(status: StatusCode, body: String) -> Answer {
    Answer {
        status,
        content_type: Some("text/plain; charset=utf-8"),
        body: body.into_bytes(),
    }
}
