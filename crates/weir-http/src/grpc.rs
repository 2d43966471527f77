//! How weir's own answers are said to a gRPC client: HTTP 200 with `grpc-status` and
//! `grpc-message` in a trailers-only response, since gRPC clients read the status from
//! there and take any other HTTP status as a broken transport. What gRPC's fields say is
//! `codec::grpc`, re-exported here for the pipeline.

use http::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use http::{Response, StatusCode};

use crate::body::ProxyBody;
pub use weir_codec::grpc::{head_status, is_grpc, status_of, timeout};
use weir_codec::grpc::{GRPC_MESSAGE, GRPC_STATUS};
use weir_metrics::reason::Reason;

/// gRPC status codes weir answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Code {
    Cancelled = 1,
    Unknown = 2,
    DeadlineExceeded = 4,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    Unauthenticated = 16,
}

/// The status a gRPC client gets for weir's answer `status` with `reason`: by the reason
/// where it says more than the HTTP status, else gRPC's own mapping of HTTP statuses.
pub fn code(status: u16, reason: Option<Reason>) -> Code {
    match reason {
        Some(Reason::RouteNotFound) => return Code::Unimplemented,
        Some(Reason::QueueFull | Reason::QueueTimeout) => return Code::ResourceExhausted,
        Some(Reason::NoHealthyEndpoint | Reason::ConnectFailed | Reason::UpstreamReset) => {
            return Code::Unavailable
        }
        Some(Reason::UpstreamTimeout) => return Code::DeadlineExceeded,
        Some(Reason::ClientClosed) => return Code::Cancelled,
        // A message larger than the server takes, in gRPC's own words.
        Some(Reason::BodyTooLarge) => return Code::ResourceExhausted,
        _ => {}
    }
    match status {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        // A 429 is overload to gRPC too: the call may go elsewhere.
        429 | 502 | 503 => Code::Unavailable,
        504 => Code::DeadlineExceeded,
        _ => Code::Unknown,
    }
}

/// Turns weir's own answer into a trailers-only gRPC response: status 200, the gRPC code
/// and the answer's reason as `grpc-message`; `x-weir-reason` and the rest of its head
/// stay. The access log and metrics keep the reason.
pub fn own_answer(resp: &mut Response<ProxyBody>, reason: Option<Reason>) {
    let code = code(resp.status().as_u16(), reason) as u16;
    let message = reason.map_or_else(
        || resp.status().canonical_reason().unwrap_or("error"),
        Reason::as_str,
    );
    *resp.status_mut() = StatusCode::OK;
    *resp.body_mut() = ProxyBody::full(bytes::Bytes::new());
    let h = resp.headers_mut();
    h.remove(CONTENT_LENGTH);
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    h.insert(GRPC_STATUS, HeaderValue::from(code));
    // Reasons are plain ASCII words: no percent-encoding needed.
    h.insert(GRPC_MESSAGE, HeaderValue::from_static(message));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_by_reason_then_status() {
        assert_eq!(code(404, Some(Reason::RouteNotFound)), Code::Unimplemented);
        assert_eq!(code(503, Some(Reason::QueueFull)), Code::ResourceExhausted);
        assert_eq!(
            code(503, Some(Reason::NoHealthyEndpoint)),
            Code::Unavailable
        );
        assert_eq!(code(502, Some(Reason::ConnectFailed)), Code::Unavailable);
        assert_eq!(
            code(504, Some(Reason::UpstreamTimeout)),
            Code::DeadlineExceeded
        );
        // After retries the status tells what the last try was.
        assert_eq!(
            code(504, Some(Reason::RetriesExhausted)),
            Code::DeadlineExceeded
        );
        assert_eq!(code(502, Some(Reason::RetriesExhausted)), Code::Unavailable);
        assert_eq!(code(400, Some(Reason::BadRequest)), Code::Internal);
        assert_eq!(code(308, Some(Reason::HttpsRedirect)), Code::Unknown);
    }
}
