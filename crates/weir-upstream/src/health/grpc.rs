//! The grpc health check: `grpc.health.v1.Health/Check` (the standard health protocol,
//! github.com/grpc/grpc/blob/master/doc/health-checking.md), asking about the pool's
//! `service` ("" = the server as a whole); healthy only when the answer is SERVING.

use bytes::{BufMut, Bytes, BytesMut};
use http::request::Parts;
use http::{Request, Response};
use http_body_util::BodyExt;

use crate::body::UpstreamResponseBody;
use weir_codec::grpc::{GRPC_MESSAGE, GRPC_STATUS};

const PATH: &str = "/grpc.health.v1.Health/Check";
/// A HealthCheckResponse is a few bytes; anything past this is not one.
const MAX_MESSAGE: usize = 4096;

#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    service: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckResponse {
    /// UNKNOWN 0, SERVING 1, NOT_SERVING 2, SERVICE_UNKNOWN 3.
    #[prost(int32, tag = "1")]
    status: i32,
}

const SERVING: i32 = 1;

/// The check's request head and body (one length-prefixed message).
pub(super) fn request(host: &str, service: &str) -> Result<(Parts, Bytes), String> {
    let msg = prost::Message::encode_to_vec(&HealthCheckRequest {
        service: service.to_string(),
    });
    let mut body = BytesMut::with_capacity(5 + msg.len());
    body.put_u8(0); // not compressed
    body.put_u32(msg.len() as u32);
    body.put_slice(&msg);
    let (parts, ()) = Request::post(PATH)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header(http::header::TE, "trailers")
        .header(http::header::USER_AGENT, "weir-health-check")
        .body(())
        .map_err(|e| e.to_string())?
        .into_parts();
    Ok((parts, body.freeze()))
}

/// Healthy when the answer is 200, `grpc-status: 0` (in the trailers, or in the head
/// of a trailers-only answer) and the message says SERVING.
pub(super) async fn verdict(
    resp: Response<UpstreamResponseBody>,
    service: &str,
) -> Result<(), String> {
    if resp.status() != http::StatusCode::OK {
        return Err(format!("status {}", resp.status().as_u16()));
    }
    let head = resp.headers().clone();
    let collected = http_body_util::Limited::new(resp.into_body(), MAX_MESSAGE)
        .collect()
        .await
        .map_err(|e| format!("reading the answer: {e}"))?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let status = trailers
        .get(GRPC_STATUS)
        .or_else(|| head.get(GRPC_STATUS))
        .and_then(|v| v.to_str().ok())
        .ok_or("no grpc-status")?;
    if status != "0" {
        let message = trailers
            .get(GRPC_MESSAGE)
            .or_else(|| head.get(GRPC_MESSAGE))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        return Err(format!("grpc-status {status} {message}").trim_end().into());
    }
    let body = collected.to_bytes();
    let msg = match body.len() {
        5.. if body[0] == 0 => &body[5..],
        _ => return Err("no uncompressed message in the answer".into()),
    };
    let r: HealthCheckResponse =
        prost::Message::decode(msg).map_err(|e| format!("bad HealthCheckResponse: {e}"))?;
    match r.status {
        SERVING => Ok(()),
        s => {
            let what = match s {
                2 => "NOT_SERVING",
                3 => "SERVICE_UNKNOWN",
                _ => "UNKNOWN",
            };
            let service = match service {
                "" => "the server".to_string(),
                s => format!("service {s:?}"),
            };
            Err(format!("{service} is {what}"))
        }
    }
}
