//! An answer of the API: a response, or a problem (RFC 9457) to answer instead, and the JSON
//! and text bodies it sends. Its own file because the dispatcher (mod.rs) and the handlers it
//! calls (resource.rs, transaction.rs) all answer this way.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::Full;

use super::problem::Problem;

pub type Reply = Result<Response<Full<Bytes>>, Problem>;

pub fn json_response(status: StatusCode, v: &impl serde::Serialize) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(v).unwrap_or_default();
    text(status, "application/json", body)
}

pub(super) fn text(
    status: StatusCode,
    ctype: &'static str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
