//! A held slot: one in-flight request (or session) on one endpoint. Dropping
//! it frees the slot and hands it to the first waiter of the pool's queue.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Pool, Queue};
use crate::endpoint::EndpointRt;

#[derive(Debug)]
pub struct Slot {
    pub endpoint: Arc<EndpointRt>,
    /// Index of the endpoint in the pool snapshot it was taken from.
    pub index: usize,
    queue: Arc<Queue>,
    /// False once released by hand (see `release_quietly`).
    armed: bool,
}

impl Slot {
    /// Counts one more in flight on endpoint `i`. Callers of limited pools
    /// hold the queue lock and have checked for room.
    pub(super) fn take<P: Pool + ?Sized>(pool: &P, i: usize) -> Slot {
        let endpoint = pool.endpoints()[i].clone();
        endpoint.in_flight.fetch_add(1, Ordering::SeqCst);
        let queue = pool.queue();
        queue.total.fetch_add(1, Ordering::SeqCst);
        Slot {
            endpoint,
            index: i,
            queue: queue.clone(),
            armed: true,
        }
    }

    /// Frees the slot without waking waiters: for use under the queue lock.
    pub(super) fn release_quietly(mut self) {
        self.armed = false;
        self.endpoint.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.queue.total.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.endpoint.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.queue.total.fetch_sub(1, Ordering::SeqCst);
        // Pairs with the waiter count bump in `try_acquire_or_enqueue`: either
        // we see the waiter, or it sees the slot we just freed.
        if self.queue.waiting.load(Ordering::SeqCst) > 0 {
            self.queue.dispatch();
        }
    }
}
