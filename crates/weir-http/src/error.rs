//! Responses weir generates itself: the status that fits the reason, and the
//! reason in the body and in `x-weir-reason`, so clients and logs agree.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};

use crate::body::ProxyBody;
use weir_metrics::reason::Reason;

pub fn error_response(reason: Reason) -> Response<ProxyBody> {
    error_response_as(reason.status(), reason)
}

/// An error with `reason` but another reason's status (retries_exhausted
/// after a timeout is still a 504).
pub fn error_response_as(status: u16, reason: Reason) -> Response<ProxyBody> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY);
    let body = format!(
        "{} {}: {}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error"),
        reason.as_str()
    );
    let mut resp = Response::new(ProxyBody::full(Bytes::from(body)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert("x-weir-reason", HeaderValue::from_static(reason.as_str()));
    resp
}
