//! A connection's busy and idle state, and a request's hold on it (a ticket). Its own file
//! because the connection (conn.rs) makes them, the routes (routes.rs) take a ticket per
//! request, and a response body (body.rs) keeps it until the body ends.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;

use crate::shared::UpstreamState;

/// Per-connection state shared by the IO wrapper, the handlers and the idle closer.
pub(crate) struct ConnState {
    pub(crate) id: u64,
    busy: AtomicUsize, // requests on this connection not yet fully answered
    base: Instant,
    last_nanos: AtomicU64, // last byte read or written, relative to `base`
}

impl ConnState {
    pub(crate) fn new(id: u64) -> ConnState {
        ConnState {
            id,
            busy: AtomicUsize::new(0),
            base: Instant::now(),
            last_nanos: AtomicU64::new(0),
        }
    }

    /// Whether a request on this connection is not yet fully answered.
    pub(crate) fn is_busy(&self) -> bool {
        self.busy.load(Relaxed) > 0
    }

    pub(crate) fn touch(&self) {
        self.last_nanos
            .store(self.base.elapsed().as_nanos() as u64, Relaxed);
    }

    pub(crate) fn idle_for(&self) -> Duration {
        self.base
            .elapsed()
            .saturating_sub(Duration::from_nanos(self.last_nanos.load(Relaxed)))
    }
}

/// A request's hold on its connection (busy) and, once it starts work, on a worker slot.
/// Dropped when the response body ends, or when the connection dies.
pub(crate) struct Ticket {
    conn: Arc<ConnState>,
    shared: Arc<UpstreamState>,
    working: bool,
    permit: Option<OwnedSemaphorePermit>,
}

impl Ticket {
    pub(crate) fn new(conn: Arc<ConnState>, shared: Arc<UpstreamState>) -> Ticket {
        conn.busy.fetch_add(1, Relaxed);
        Ticket {
            conn,
            shared,
            working: false,
            permit: None,
        }
    }

    /// Waits for a free worker (when capped), then counts the request as in flight.
    pub(crate) async fn start_work(&mut self) {
        if let Some(slots) = &self.shared.slots {
            self.permit = Some(slots.clone().acquire_owned().await.expect("never closed"));
        }
        let n = self.shared.in_flight.fetch_add(1, Relaxed) + 1;
        self.shared.max_in_flight.fetch_max(n, Relaxed);
        self.working = true;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // in_flight drops before the permit is released (field drop comes after this), so
        // the next worker's increment can never push max_in_flight above the cap.
        if self.working {
            self.shared.in_flight.fetch_sub(1, Relaxed);
        }
        self.conn.touch();
        self.conn.busy.fetch_sub(1, Relaxed);
    }
}
