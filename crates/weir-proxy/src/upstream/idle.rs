//! The idle keep-alive connections of one endpoint.
//!
//! Why by hand rather than hyper-util's pool: weir must decide each
//! connection's expiry itself (the pool's idle timeout, lowered by the
//! backend's `Keep-Alive: timeout=` and later by what it learns from backends
//! that close idle connections), and must drop them when an endpoint drains.

use std::sync::Mutex;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;

/// Upper bound on idle connections kept per endpoint; beyond it the oldest close.
const MAX_IDLE: usize = 1024;

pub struct Idle {
    pub tx: SendRequest<Incoming>,
    pub expires: Instant,
}

#[derive(Default)]
pub struct IdleConns {
    /// Oldest first; checkout takes the newest (LIFO keeps few connections warm
    /// and lets the rest expire).
    conns: Mutex<Vec<Idle>>,
}

impl std::fmt::Debug for IdleConns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdleConns")
            .field("len", &self.len())
            .finish()
    }
}

impl IdleConns {
    /// A pooled connection that is open, ready and not expired.
    pub fn checkout(&self, now: Instant) -> Option<SendRequest<Incoming>> {
        let mut conns = self.conns.lock().unwrap();
        while let Some(c) = conns.pop() {
            // is_closed/is_ready reflect what the connection task saw: a FIN
            // from the backend makes the connection closed before we reuse it.
            if c.expires > now && c.tx.is_ready() {
                return Some(c.tx);
            }
        }
        None
    }

    pub fn checkin(&self, tx: SendRequest<Incoming>, expires: Instant) {
        if tx.is_closed() {
            return;
        }
        let mut conns = self.conns.lock().unwrap();
        if conns.len() >= MAX_IDLE {
            conns.remove(0);
        }
        conns.push(Idle { tx, expires });
    }

    pub fn prune(&self, now: Instant) {
        let mut conns = self.conns.lock().unwrap();
        conns.retain(|c| c.expires > now && !c.tx.is_closed());
    }

    pub fn clear(&self) {
        // Dropping the senders lets each idle connection's task finish, which
        // closes the socket.
        let drained = std::mem::take(&mut *self.conns.lock().unwrap());
        drop(drained);
    }

    pub fn len(&self) -> usize {
        self.conns.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
