//! What an endpoint has done: kept in its registry entry, so reloads do not
//! reset it, and reported only while the endpoint is in the config.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use weir_metrics::hist::{Histogram, Windowed};
use weir_metrics::reason::Reason;

#[derive(Debug, Default)]
pub struct EndpointMetrics {
    /// Answers received (any status).
    pub requests: AtomicU64,
    /// Time to the response head, per try.
    pub upstream: Histogram,
    /// The same, over the last minute (percentiles for stats).
    pub recent: Windowed,
    /// Failed tries by reason.
    errors: [AtomicU64; Reason::ALL.len()],
    /// Request body bytes sent upstream, response bytes sent to clients.
    pub bytes_in: Arc<AtomicU64>,
    pub bytes_out: AtomicU64,
}

impl EndpointMetrics {
    pub fn error(&self, r: Reason) {
        self.errors[r.index()].fetch_add(1, Relaxed);
    }

    /// Failed tries so far (the history samples it for errors per second).
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().map(|c| c.load(Relaxed)).sum()
    }

    /// Non-zero error counts by reason.
    pub fn errors(&self) -> Vec<(&'static str, u64)> {
        Reason::ALL
            .iter()
            .zip(&self.errors)
            .map(|(r, c)| (r.as_str(), c.load(Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}
