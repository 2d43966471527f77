//! Capacity control: a request (or TCP session) holds a slot on its endpoint
//! while in flight; a pool with `max_conn` never exceeds it on any endpoint,
//! and requests that find no free slot wait in the pool's FIFO queue for the
//! first slot freed on any eligible endpoint.
//!
//! Unlimited pools never touch the queue's lock: a pick and two atomic
//! increments. Limited pools take one short lock per acquire and release, the
//! price of exact FIFO order and of never stranding a waiter.

mod queue;
mod slot;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use queue::PoolShared;
pub use slot::Slot;

use crate::balance::PickKey;
use crate::pool::PoolRt;
use crate::reason::Reason;

/// A granted slot and how long the request waited for it.
pub struct Granted {
    pub slot: Slot,
    pub queued: Duration,
}

/// Takes a slot on an endpoint of `pool`, waiting in the queue if needed.
/// Errors: `NoHealthyEndpoint` (no endpoint at all), `QueueFull`,
/// `QueueTimeout`.
pub async fn acquire(pool: &Arc<PoolRt>, key: &PickKey) -> Result<Granted, Reason> {
    if !pool.limited() {
        let filter = pool.health_filter(key);
        let i = pool
            .choose(key, &|i| filter.admits(pool, i))
            .ok_or(Reason::NoHealthyEndpoint)?;
        return Ok(Granted {
            slot: Slot::take(pool, i),
            queued: Duration::ZERO,
        });
    }
    let start = Instant::now();
    let rx = match pool.shared.try_acquire_or_enqueue(pool, key)? {
        queue::Outcome::Got(slot) => {
            pool.shared.queue_wait.observe(Duration::ZERO);
            return Ok(Granted {
                slot,
                queued: Duration::ZERO,
            });
        }
        queue::Outcome::Wait(rx) => rx,
    };
    // Dropping the ticket (client gone, timeout) leaves the queue at once.
    let mut ticket = rx;
    match tokio::time::timeout(pool.queue_timeout, &mut ticket.rx).await {
        Ok(Ok(slot)) => {
            ticket.done();
            let queued = start.elapsed();
            pool.shared.queue_wait.observe(queued);
            Ok(Granted { slot, queued })
        }
        // The pool was removed from the config while we waited.
        Ok(Err(_)) => Err(Reason::NoHealthyEndpoint),
        Err(_) => {
            pool.shared.queue_wait.observe(start.elapsed());
            Err(Reason::QueueTimeout)
        }
    }
}
