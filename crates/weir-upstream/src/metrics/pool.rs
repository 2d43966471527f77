//! What a pool did beyond its endpoints' counts: kept across snapshots with
//! the pool's other shared state (`pool.rs::PoolShared`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::{Arc, Mutex};

use weir_metrics::hist::Histogram;

#[derive(Debug, Default)]
pub struct PoolMetrics {
    /// Time requests waited for a slot (limited pools only).
    pub queue_wait: Histogram,
    /// Retries by the reason of the try that failed (rare: a lock is fine).
    retries: Mutex<BTreeMap<&'static str, u64>>,
    /// Connections switched to another protocol (WebSocket) and relayed now.
    pub upgraded: AtomicI64,
    /// HTTP/2 connections given up because a PING went unanswered (weir-codec's `h2/keepalive.rs`).
    pub ping_timeouts: Arc<AtomicU64>,
}

impl PoolMetrics {
    /// One retry after a try that failed for `reason`.
    pub fn retried(&self, reason: &'static str) {
        *self.retries.lock().unwrap().entry(reason).or_default() += 1;
    }

    /// Retries so far, by reason.
    pub fn retries(&self) -> Vec<(&'static str, u64)> {
        let r = self.retries.lock().unwrap();
        r.iter().map(|(&k, &n)| (k, n)).collect()
    }
}
