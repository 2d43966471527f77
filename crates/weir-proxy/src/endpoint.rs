//! Per-endpoint runtime state. It lives in the registry keyed by pool and
//! address and survives snapshot swaps, so a reload never drops an unchanged
//! endpoint's pooled connections (and, later, its health and in-flight counts).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::upstream::idle::IdleConns;

#[derive(Debug)]
pub struct EndpointRt {
    pub pool: Arc<str>,
    pub addr: SocketAddr,
    /// The address as text, made once for logs and headers.
    pub addr_str: Arc<str>,
    /// Set when the endpoint left the config: it gets no new requests, and
    /// connections freed by in-flight requests close instead of being pooled.
    draining: AtomicBool,
    pub idle: IdleConns,
}

impl EndpointRt {
    pub fn new(pool: Arc<str>, addr: SocketAddr) -> Self {
        EndpointRt {
            pool,
            addr,
            addr_str: addr.to_string().into(),
            draining: AtomicBool::new(false),
            idle: IdleConns::default(),
        }
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Stops pooling and closes the idle connections; in-flight requests finish.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
        self.idle.clear();
    }

    /// Closes idle connections past their expiry.
    pub fn sweep(&self, now: Instant) {
        self.idle.prune(now);
    }
}
