//! Capacity control: a request (or TCP session) holds a slot on its endpoint
//! while in flight; a pool with `max_conn` never exceeds it on any endpoint,
//! and requests that find no free slot wait in the pool's FIFO queue for the
//! first slot freed on any eligible endpoint.
//!
//! Unlimited pools never touch the queue's lock: a pick and two atomic
//! increments. Limited pools take one short lock per acquire and release, the
//! price of exact FIFO order and of never stranding a waiter.
//!
//! The pool is seen through [`Pool`] (limits, queue, endpoints, the health
//! filter and the algorithm's pick), so this module does not import
//! `pool.rs`.

mod queue;
mod slot;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use queue::Queue;
pub use slot::Slot;

use crate::balance::PickKey;
use crate::endpoint::EndpointRt;
use crate::health::HealthFilter;
use weir_metrics::reason::Reason;

/// A pool's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Slots per endpoint; 0 = no limit.
    pub max_conn: u32,
    /// Slots across the pool; 0 = no limit.
    pub max_conn_total: u32,
    /// Waiters in the queue.
    pub max_queue: u32,
    pub queue_timeout: Duration,
}

impl Limits {
    /// Whether requests can find the pool full (and then queue).
    #[inline]
    pub fn limited(&self) -> bool {
        self.max_conn > 0 || self.max_conn_total > 0
    }
}

/// What capacity control needs from a pool snapshot; `PoolRt` provides it.
/// [`acquire`] is generic over it (no virtual call on the request path);
/// only the queue, which outlives snapshots and serves waiters from the
/// newest one, holds it as `dyn Pool`.
pub trait Pool: Send + Sync + 'static {
    fn limits(&self) -> Limits;

    /// The pool's queue (one per pool name, kept across snapshots).
    fn queue(&self) -> &Arc<Queue>;

    fn endpoints(&self) -> &[Arc<EndpointRt>];

    /// Which endpoints the pool's health policy lets `key` use.
    fn health_filter(&self, key: &PickKey) -> HealthFilter;

    /// The pool's algorithm's pick among the endpoints `ok` accepts.
    fn choose(&self, key: &PickKey, ok: &dyn Fn(usize) -> bool) -> Option<usize>;

    /// A request waited `d` for a slot in a limited pool (for metrics).
    fn waited(&self, d: Duration);
}

/// A granted slot and how long the request waited for it.
pub struct Granted {
    pub slot: Slot,
    pub queued: Duration,
}

/// Takes a slot on an endpoint of `pool`, waiting in the queue if needed.
/// Errors: `NoHealthyEndpoint` (no endpoint at all), `QueueFull`,
/// `QueueTimeout`.
/// `deadline`: the request's own (a gRPC call's `grpc-timeout`), which cuts a queue
/// wait short of the pool's `queue_timeout` (the answer is then `queue_timeout` too).
pub async fn acquire<P: Pool>(
    pool: &Arc<P>,
    key: &PickKey,
    deadline: Option<Instant>,
) -> Result<Granted, Reason> {
    let limits = pool.limits();
    if !limits.limited() {
        let filter = pool.health_filter(key);
        let endpoints = pool.endpoints();
        let i = pool
            .choose(key, &|i| filter.admits(&endpoints[i]))
            .ok_or(Reason::NoHealthyEndpoint)?;
        return Ok(Granted {
            slot: Slot::take(&**pool, i),
            queued: Duration::ZERO,
        });
    }
    let start = Instant::now();
    let rx = match pool.queue().try_acquire_or_enqueue(&**pool, key)? {
        queue::Outcome::Got(slot) => {
            pool.waited(Duration::ZERO);
            return Ok(Granted {
                slot,
                queued: Duration::ZERO,
            });
        }
        queue::Outcome::Wait(rx) => rx,
    };
    // Dropping the ticket (client gone, timeout) leaves the queue at once.
    let mut ticket = rx;
    let wait = deadline.map_or(limits.queue_timeout, |d| {
        limits.queue_timeout.min(d.saturating_duration_since(start))
    });
    match tokio::time::timeout(wait, &mut ticket.rx).await {
        Ok(Ok(slot)) => {
            ticket.done();
            let queued = start.elapsed();
            pool.waited(queued);
            Ok(Granted { slot, queued })
        }
        // The pool was removed from the config while we waited.
        Ok(Err(_)) => Err(Reason::NoHealthyEndpoint),
        Err(_) => {
            pool.waited(start.elapsed());
            Err(Reason::QueueTimeout)
        }
    }
}
