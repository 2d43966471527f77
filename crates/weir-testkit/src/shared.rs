//! What a fake HTTP backend's connections share with its handle: configuration, counters
//! and the request log. Its own file because the handle (http_upstream.rs) makes it, while
//! each connection (conn.rs), its tickets (ticket.rs) and the routes (routes.rs) count and
//! record in it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Uri, Version};

use crate::latency::Latency;

/// What the backend saw of one request (`/healthz` is not recorded).
#[derive(Clone, Debug)]
pub struct RequestRecord {
    pub method: Method,
    pub uri: Uri,
    pub path: String,
    pub version: Version,
    pub headers: HeaderMap,
    /// Bytes of request body read; for `/echo` (streamed) the declared Content-Length.
    pub body_len: u64,
    /// Per-upstream connection number (0, 1, ...), to tell reused connections apart.
    pub conn_id: u64,
    /// When the request head arrived.
    pub at: Instant,
}

/// Configuration and counters, shared by every connection task.
pub(crate) struct UpstreamState {
    pub(crate) name: String,
    pub(crate) name_body: Bytes,
    pub(crate) default_body: Bytes,
    pub(crate) x_upstream: HeaderValue,
    pub(crate) keep_alive: Option<HeaderValue>,
    pub(crate) latency: Latency,
    pub(crate) h2c: bool,
    pub(crate) slots: Option<Arc<tokio::sync::Semaphore>>,
    pub(crate) idle_close: Option<Duration>,
    pub(crate) record_log: bool,
    pub(crate) healthy: AtomicBool,
    pub(crate) requests: AtomicU64,
    pub(crate) health_checks: AtomicU64,
    pub(crate) in_flight: AtomicU64,
    pub(crate) max_in_flight: AtomicU64,
    pub(crate) connections: AtomicU64,
    /// Connections open right now.
    pub(crate) open: AtomicU64,
    pub(crate) next_conn_id: AtomicU64,
    pub(crate) log: Mutex<Vec<RequestRecord>>,
    /// Every `x-request-id` seen, to count requests that reached this
    /// backend more than once (what a proxy must never cause for a POST).
    pub(crate) ids: Mutex<std::collections::HashSet<Box<[u8]>>>,
    pub(crate) duplicates: AtomicU64,
    /// Bumped by `shutdown_gracefully`: open connections finish what they
    /// are doing and close.
    pub(crate) drain: tokio::sync::watch::Sender<u64>,
}

impl UpstreamState {
    /// Counts a request; builds its record only when the log is on (benchmarks skip it).
    pub(crate) fn record(&self, rec: impl FnOnce() -> RequestRecord) {
        self.requests.fetch_add(1, Relaxed);
        if self.record_log {
            self.log.lock().unwrap().push(rec());
        }
    }

    /// Notes the request's `x-request-id`, if it has one; counts a repeat.
    pub(crate) fn note_id(&self, headers: &HeaderMap) {
        if let Some(id) = headers.get("x-request-id") {
            if !self.ids.lock().unwrap().insert(id.as_bytes().into()) {
                self.duplicates.fetch_add(1, Relaxed);
            }
        }
    }
}
