//! The pool's FIFO queue and the counters that survive reloads (one
//! `PoolShared` per pool name, kept in a registry like endpoints).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use tokio::sync::oneshot;

use crate::balance::PickKey;
use crate::capacity::slot::Slot;
use crate::pool::PoolRt;
use crate::reason::Reason;

#[derive(Debug, Default)]
pub struct PoolShared {
    state: Mutex<State>,
    /// Waiters in the queue (mirrors `state.waiters.len()`), readable without the lock.
    pub(crate) waiting: AtomicUsize,
    /// Slots held across the pool.
    pub(crate) total: AtomicU32,
    /// Serialises ejection decisions (see `health::passive`).
    pub(crate) eject_lock: Mutex<()>,
    pub(crate) budget: crate::retry::Budget,
    /// Time requests waited for a slot (limited pools only).
    pub queue_wait: crate::metrics::hist::Histogram,
    /// Retries by the reason of the try that failed.
    pub retries: Mutex<std::collections::BTreeMap<&'static str, u64>>,
}

#[derive(Debug, Default)]
struct State {
    waiters: VecDeque<Waiter>,
    next_id: u64,
    /// The newest snapshot of this pool: the one waiters are served from.
    current: Weak<PoolRt>,
}

#[derive(Debug)]
struct Waiter {
    id: u64,
    key: PickKey,
    tx: oneshot::Sender<Slot>,
    #[allow(dead_code)]
    since: Instant,
}

pub(crate) enum Outcome {
    Got(Slot),
    Wait(Ticket),
}

/// A place in the queue; dropping it before it is served gives the place up.
pub(crate) struct Ticket {
    pub rx: oneshot::Receiver<Slot>,
    id: u64,
    shared: Arc<PoolShared>,
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
            self.shared.leave(self.id);
        }
    }
}

impl PoolShared {
    pub fn queue_len(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    pub fn in_flight(&self) -> u32 {
        self.total.load(Ordering::Relaxed)
    }

    fn free(pool: &PoolRt, key: &PickKey) -> Option<usize> {
        if pool.max_conn_total > 0
            && pool.shared.total.load(Ordering::SeqCst) >= pool.max_conn_total
        {
            return None;
        }
        let filter = pool.health_filter(key);
        pool.choose(key, &|i| filter.admits(pool, i) && pool.has_room(i))
    }

    pub(crate) fn try_acquire_or_enqueue(
        self: &Arc<Self>,
        pool: &PoolRt,
        key: &PickKey,
    ) -> Result<Outcome, Reason> {
        if pool.endpoints.is_empty() || pool.health_filter(key) == crate::pool::HealthFilter::None {
            return Err(Reason::NoHealthyEndpoint);
        }
        let mut st = self.state.lock().unwrap();
        // FIFO: nobody overtakes a waiter.
        if st.waiters.is_empty() {
            if let Some(i) = Self::free(pool, key) {
                return Ok(Outcome::Got(Slot::take(pool, i)));
            }
        }
        if st.waiters.len() >= pool.max_queue as usize {
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
            shared: self.clone(),
            served: false,
        }))
    }

    /// Hands free slots to waiters, first come first served.
    pub(crate) fn dispatch(&self) {
        let mut st = self.state.lock().unwrap();
        self.dispatch_locked(&mut st);
    }

    fn dispatch_locked(&self, st: &mut State) {
        let Some(pool) = st.current.upgrade() else {
            return;
        };
        while let Some(front) = st.waiters.front() {
            if front.tx.is_closed() {
                st.waiters.pop_front();
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let Some(i) = Self::free(&pool, &front.key) else {
                break;
            };
            let w = st.waiters.pop_front().expect("front exists");
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            let slot = Slot::take(&pool, i);
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
    pub fn install(&self, pool: &Arc<PoolRt>) {
        let mut st = self.state.lock().unwrap();
        st.current = Arc::downgrade(pool);
        self.dispatch_locked(&mut st);
    }

    /// The pool left the config: its waiters are answered at once.
    pub fn close(&self) {
        let mut st = self.state.lock().unwrap();
        st.current = Weak::new();
        let n = st.waiters.len();
        st.waiters.clear();
        self.waiting.fetch_sub(n, Ordering::SeqCst);
    }
}
