//! What a gRPC backend counts and records of the calls it serves. Its own file because each
//! connection's server (serve.rs) writes it and the backend's handle (upstream.rs), which
//! starts those servers, reads it.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use http::HeaderMap;

/// What the backend saw of one call (health checks included).
#[derive(Clone, Debug)]
pub struct CallRecord {
    /// `/weir.test.Echo/Unary`, `/grpc.health.v1.Health/Check`, ...
    pub path: String,
    /// `:authority`, else `host`.
    pub authority: Option<String>,
    pub headers: HeaderMap,
    /// Per-upstream connection number (0, 1, ...): calls with the same id shared one
    /// HTTP/2 connection.
    pub conn_id: u64,
}

/// Counters and the call log, shared by every connection.
pub(crate) struct GrpcCounters {
    pub(crate) calls: Arc<AtomicU64>,
    pub(crate) health_checks: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) open: AtomicU64,
    pub(crate) record_log: bool,
    pub(crate) log: Mutex<Vec<CallRecord>>,
}
