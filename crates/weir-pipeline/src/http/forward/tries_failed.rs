//! The answer when a request's tries failed: the pool's overflow answer when no slot could
//! be had, else weir's own for the last try's reason.

use http::Response;
use weir_http::body::ProxyBody;
use weir_metrics::reason::Reason;
use weir_upstream::error::TryError;
use weir_upstream::pool::PoolRt;

use super::fail::{fail_as, Where};
use super::overflow::overflow;

/// The answer when the tries failed. `reason` is what the request is
/// counted under: after retries `retries_exhausted`, but a last try that
/// timed out still answers 504 (the status of the last try's reason).
pub fn tries_failed(
    pool: &PoolRt,
    reason: Reason,
    error: &TryError,
    retries: u32,
    w: &Where<'_>,
) -> Response<ProxyBody> {
    match reason {
        Reason::QueueFull | Reason::QueueTimeout | Reason::NoHealthyEndpoint => {
            let cut_by = match error.cause {
                weir_upstream::error::Cause::NoSlot { cut_by } => cut_by,
                _ => None,
            };
            overflow(pool, reason, cut_by, w)
        }
        _ => fail_as(error.reason.status(), reason, w, &Detail(error, retries)),
    }
}

/// A failed request's log detail, rendered only when logged.
struct Detail<'a>(&'a TryError, u32);

impl std::fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            0 => self.0.fmt(f),
            n => write!(f, "{n} retries; last: {}", self.0),
        }
    }
}
