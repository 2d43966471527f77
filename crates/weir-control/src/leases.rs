//! Endpoint leases (self-registration): an endpoint whose spec has a `ttl` is deleted, and so
//! drained, when it is not renewed in time. Deadlines live in memory only; renewing one is a
//! heartbeat, not a config change, so it never touches the store.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use weir_store::{Kind, State};

use crate::compile::ttl_of;

#[derive(Default)]
pub struct Leases {
    /// By endpoint name (`POOL/ADDR`).
    map: Mutex<HashMap<String, Lease>>,
}

struct Lease {
    ttl: Duration,
    deadline: Instant,
}

/// How often expiry is checked: a lease ends at most this late.
pub(crate) const TICK: Duration = Duration::from_millis(100);

impl Leases {
    /// After a change: each `touched` endpoint with a ttl gets a fresh deadline (a PUT renews),
    /// one without loses its lease; leases of endpoints that no longer exist are dropped.
    pub fn sync(&self, state: &State, touched: &[(Kind, String)]) {
        let now = Instant::now();
        let mut map = self.map.lock().unwrap();
        for (kind, name) in touched {
            if *kind != Kind::Endpoint {
                continue;
            }
            let ttl = state
                .get(Kind::Endpoint, name)
                .and_then(|v| v.body.get("ttl"))
                .and_then(|t| ttl_of(t).ok());
            match ttl {
                Some(ttl) => {
                    map.insert(
                        name.clone(),
                        Lease {
                            ttl,
                            deadline: now + ttl,
                        },
                    );
                }
                None => {
                    map.remove(name);
                }
            }
        }
        map.retain(|name, _| state.get(Kind::Endpoint, name).is_some());
    }

    /// Renews a lease; None when the endpoint has none.
    pub fn renew(&self, name: &str) -> Option<Duration> {
        let mut map = self.map.lock().unwrap();
        let lease = map.get_mut(name)?;
        lease.deadline = Instant::now() + lease.ttl;
        Some(lease.ttl)
    }

    pub(crate) fn expired(&self, now: Instant) -> Vec<String> {
        let map = self.map.lock().unwrap();
        map.iter()
            .filter(|(_, l)| l.deadline <= now)
            .map(|(n, _)| n.clone())
            .collect()
    }
}

/// Why a heartbeat was refused.
#[derive(Debug, thiserror::Error)]
pub enum HeartbeatError {
    #[error("no such endpoint")]
    NotFound,
    #[error("the endpoint has no lease (it was added without a ttl)")]
    NoLease,
    /// The store that keeps the lease did not answer.
    #[error("{0}")]
    Unavailable(String),
}
