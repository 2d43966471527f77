//! The pool's FIFO queue and its count of held slots: one per pool name,
//! kept across snapshots (`pool.rs::PoolShared`, in the registry); and the slots
//! themselves ([`Slot`]: one in-flight request or session on one endpoint). One file, as
//! they are one knot: a waiter waits for a slot, and a slot dropped hands itself to the
//! first waiter.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use tokio::sync::oneshot;

use super::pool::Pool;
use crate::balance::PickKey;
use crate::endpoint::EndpointRt;
use crate::health::HealthFilter;
use weir_metrics::reason::Reason;

#[derive(Debug, Default)]
pub struct Queue {
    state: Mutex<State>,
    /// Waiters in the queue (mirrors `state.waiters.len()`), readable without the lock.
    pub(super) waiting: AtomicUsize,
    /// Slots held across the pool.
    pub(super) total: AtomicU32,
}

#[derive(Debug, Default)]
struct State {
    waiters: VecDeque<Waiter>,
    next_id: u64,
    /// The newest snapshot of this pool: the one waiters are served from.
    /// A trait object, as the queue outlives any one snapshot type's use;
    /// it is only called while serving waiters, under the lock.
    current: Option<Weak<dyn Pool>>,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    key: PickKey,
    tx: oneshot::Sender<Slot>,
    #[allow(dead_code)]
    since: Instant,
}

pub(super) enum Outcome {
    Got(Slot),
    Wait(Ticket),
}

/// A place in the queue; dropping it before it is served gives the place up.
pub(super) struct Ticket {
    pub rx: oneshot::Receiver<Slot>,
    id: u64,
    queue: Arc<Queue>,
    served: bool,
}

impl Ticket {
    pub fn done(&mut self) {
        self.served = true;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.served {
            self.queue.leave(self.id);
        }
    }
}

impl Queue {
    /// Requests waiting for a slot.
    pub fn len(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots held across the pool.
    pub fn in_flight(&self) -> u32 {
        self.total.load(Ordering::Relaxed)
    }

    /// An endpoint of `pool` that the health policy admits and that has room
    /// under the limits. `pool` is the snapshot this queue belongs to.
    fn free<P: Pool + ?Sized>(&self, pool: &P, key: &PickKey) -> Option<usize> {
        let limits = pool.limits();
        if limits.max_conn_total > 0 && self.total.load(Ordering::SeqCst) >= limits.max_conn_total {
            return None;
        }
        let filter = pool.health_filter(key);
        let endpoints = pool.endpoints();
        pool.choose(key, &|i| {
            let ep = &endpoints[i];
            filter.admits(ep) && (limits.max_conn == 0 || ep.in_flight() < limits.max_conn)
        })
    }

    pub(super) fn try_acquire_or_enqueue<P: Pool>(
        self: &Arc<Self>,
        pool: &P,
        key: &PickKey,
    ) -> Result<Outcome, Reason> {
        if pool.endpoints().is_empty() || pool.health_filter(key) == HealthFilter::None {
            return Err(Reason::NoHealthyEndpoint);
        }
        let mut st = self.state.lock().unwrap();
        // FIFO: nobody overtakes a waiter.
        if st.waiters.is_empty() {
            if let Some(i) = self.free(pool, key) {
                return Ok(Outcome::Got(Slot::take(pool, self, i)));
            }
        }
        if st.waiters.len() >= pool.limits().max_queue as usize {
            return Err(Reason::QueueFull);
        }
        let (tx, rx) = oneshot::channel();
        let id = st.next_id;
        st.next_id += 1;
        st.waiters.push_back(Waiter {
            id,
            key: *key,
            tx,
            since: Instant::now(),
        });
        self.waiting.fetch_add(1, Ordering::SeqCst);
        // A slot may have been freed between our look and the count bump
        // (its releaser saw no waiter): serve the queue now.
        self.dispatch_locked(&mut st);
        Ok(Outcome::Wait(Ticket {
            rx,
            id,
            queue: self.clone(),
            served: false,
        }))
    }

    /// Hands free slots to waiters, first come first served.
    pub(super) fn dispatch(self: &Arc<Self>) {
        let mut st = self.state.lock().unwrap();
        self.dispatch_locked(&mut st);
    }

    fn dispatch_locked(self: &Arc<Self>, st: &mut State) {
        let Some(pool) = st.current.as_ref().and_then(Weak::upgrade) else {
            return;
        };
        while let Some(front) = st.waiters.front() {
            if front.tx.is_closed() {
                st.waiters.pop_front();
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let Some(i) = self.free(&*pool, &front.key) else {
                break;
            };
            let w = st.waiters.pop_front().expect("front exists");
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            let slot = Slot::take(&*pool, self, i);
            if let Err(slot) = w.tx.send(slot) {
                // The waiter left just now; the slot goes to the next one.
                slot.release_quietly();
            }
        }
    }

    fn leave(&self, id: u64) {
        let mut st = self.state.lock().unwrap();
        if let Some(pos) = st.waiters.iter().position(|w| w.id == id) {
            st.waiters.remove(pos);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Points the queue at the pool's newest snapshot and serves waiters that
    /// the new config has room for (more endpoints, a higher max_conn).
    pub fn install<P: Pool>(self: &Arc<Self>, pool: &Arc<P>) {
        let current: Weak<dyn Pool> = Arc::downgrade(pool) as Weak<P>;
        let mut st = self.state.lock().unwrap();
        st.current = Some(current);
        self.dispatch_locked(&mut st);
    }

    /// The pool left the config: its waiters are answered at once.
    pub fn close(&self) {
        let mut st = self.state.lock().unwrap();
        st.current = None;
        let n = st.waiters.len();
        st.waiters.clear();
        self.waiting.fetch_sub(n, Ordering::SeqCst);
    }
}

/// A held slot: one in-flight request (or session) on one endpoint. Dropping
/// it frees the slot and hands it to the first waiter of the pool's queue.
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
    pub(super) fn take<P: Pool + ?Sized>(pool: &P, queue: &Arc<Queue>, i: usize) -> Slot {
        let endpoint = pool.endpoints()[i].clone();
        endpoint.in_flight.fetch_add(1, Ordering::SeqCst);
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
