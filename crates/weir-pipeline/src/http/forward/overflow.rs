//! The answer when a request found no slot: the pool's overflow status
//! (503 or 429) with `Retry-After`.

use http::header::{self, HeaderValue};
use http::Response;

use super::fail::{fail, Where};
use weir_http::body::ProxyBody;
use weir_metrics::reason::Reason;
use weir_upstream::error::Limit;
use weir_upstream::pool::PoolRt;

/// The answer when no slot could be had: the pool's overflow status with
/// `Retry-After`, so clients and autoscalers can back off. `cut_by`: the request's own
/// deadline ended the wait before the pool's `queue_timeout`.
pub fn overflow(
    pool: &PoolRt,
    reason: Reason,
    cut_by: Option<Limit>,
    w: &Where<'_>,
) -> Response<ProxyBody> {
    let detail = match (reason, cut_by) {
        (Reason::QueueFull, _) => format!("queue of {} is full", pool.max_queue),
        (Reason::QueueTimeout, Some(l)) => {
            format!("no free slot within the {} ({:?})", l.name, l.of)
        }
        (Reason::QueueTimeout, None) => {
            format!(
                "no free slot within the queue_timeout ({:?})",
                pool.queue_timeout
            )
        }
        _ => "the pool has no endpoints".to_string(),
    };
    let mut resp = fail(reason, w, &detail);
    if matches!(reason, Reason::QueueFull | Reason::QueueTimeout) {
        *resp.status_mut() = http::StatusCode::from_u16(pool.overflow_status)
            .unwrap_or(http::StatusCode::SERVICE_UNAVAILABLE);
        let secs = pool.queue_timeout.as_secs_f64().ceil().max(1.0) as u64;
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}
