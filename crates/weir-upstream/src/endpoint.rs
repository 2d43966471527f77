//! Per-endpoint runtime state. It lives in the registry keyed by pool and
//! address and survives snapshot swaps, so a reload never resets an unchanged
//! endpoint's in-flight count, latency estimate, slow-start ramp or pooled
//! connections.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::balance::{hash_bytes, Ewma, Ramp};
use crate::health::endpoint_health::EndpointHealth;
use crate::idle::IdleConns;
use crate::metrics::endpoint::EndpointMetrics;

#[derive(Debug)]
pub struct EndpointRt {
    pub pool: Arc<str>,
    pub addr: SocketAddr,
    /// The address as text, made once for logs and headers.
    pub addr_str: Arc<str>,
    /// Stable opaque identity (pool + address): sticky cookies and the hash
    /// ring use it, so both agree across reloads and weir replicas.
    pub id: u64,
    /// Requests (http) or sessions (tcp) holding a slot on this endpoint.
    pub in_flight: AtomicU32,
    pub ewma: Ewma,
    pub metrics: EndpointMetrics,
    pub health: EndpointHealth,
    /// Slow start, from when the endpoint joined (or, later, recovered).
    pub ramp: Ramp,
    /// Set when the endpoint left the config: it gets no new requests, and
    /// connections freed by in-flight requests close instead of being pooled.
    draining: AtomicBool,
    pub idle: IdleConns,
    /// Cancelled when a draining endpoint's grace is over: TCP sessions
    /// still open on it are then closed.
    pub cut: CancellationToken,
}

impl EndpointRt {
    /// `ramp`: whether slow start applies (an endpoint added after start);
    /// `up`: its health before any check.
    pub fn new(pool: Arc<str>, addr: SocketAddr, ramp: bool, up: bool) -> Self {
        let id = hash_bytes(format!("{pool}\0{addr}").as_bytes());
        EndpointRt {
            addr_str: addr.to_string().into(),
            pool,
            addr,
            id,
            in_flight: AtomicU32::new(0),
            ewma: Ewma::default(),
            metrics: EndpointMetrics::default(),
            health: EndpointHealth::new(up),
            ramp: Ramp::new(ramp),
            draining: AtomicBool::new(false),
            idle: IdleConns::default(),
            cut: CancellationToken::new(),
        }
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Stops pooling and closes the idle connections; in-flight requests
    /// finish, and TCP sessions get `grace` to end on their own.
    pub fn drain(&self, grace: Duration) {
        self.draining.store(true, Ordering::Relaxed);
        self.idle.clear();
        let cut = self.cut.clone();
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            cut.cancel();
        });
    }

    /// Closes idle connections past their expiry.
    pub fn sweep(&self, now: Instant) {
        self.idle.prune(now);
    }
}
