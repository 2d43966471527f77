//! Taking a slot: at once on an unlimited pool (a pick and two atomic increments), through
//! the pool's queue on a limited one (`queue.rs`), bounded by the queue timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::pool::Pool;
use super::queue::{Outcome, Queue, Slot};
use crate::balance::PickKey;
use weir_metrics::reason::Reason;

/// A pool with its queue (one per pool name, kept across snapshots): what [`acquire`]
/// takes slots from. Apart from [`Pool`], which the queue holds.
pub trait Queued: Pool {
    fn queue(&self) -> &Arc<Queue>;
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
pub async fn acquire<P: Queued>(
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
            slot: Slot::take(&**pool, pool.queue(), i),
            queued: Duration::ZERO,
        });
    }
    let start = Instant::now();
    let rx = match pool.queue().try_acquire_or_enqueue(&**pool, key)? {
        Outcome::Got(slot) => {
            pool.waited(Duration::ZERO);
            return Ok(Granted {
                slot,
                queued: Duration::ZERO,
            });
        }
        Outcome::Wait(rx) => rx,
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
