//! Endpoint leases (self-registration): an endpoint whose spec has a `ttl` is deleted, and so
//! drained, when it is not renewed in time. Deadlines live in memory only; renewing one is a
//! heartbeat, not a config change, so it never touches the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::{info, warn};
use weir_store::{Change, Kind, Precondition, State};

use crate::compile::ttl_of;
use crate::control::{Refused, RunningConfig};

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
const TICK: Duration = Duration::from_millis(100);

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

    fn expired(&self, now: Instant) -> Vec<String> {
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

impl RunningConfig {
    /// `POST .../heartbeat`: renews the lease of endpoint `name`.
    pub async fn heartbeat(&self, name: &str) -> Result<Duration, HeartbeatError> {
        if self.state().get(Kind::Endpoint, name).is_none() {
            return Err(HeartbeatError::NotFound);
        }
        if self.source.keeps_leases() {
            return self.source.renew(name).await;
        }
        self.leases.renew(name).ok_or(HeartbeatError::NoLease)
    }

    /// Leases in memory follow the committed state, unless the source keeps them.
    pub(crate) fn sync_leases(&self, state: &State, touched: &[(Kind, String)]) {
        if !self.source.keeps_leases() {
            self.leases.sync(state, touched);
        }
    }

    /// Deletes endpoints whose lease ran out, until the RunningConfig is dropped.
    pub async fn expire_leases(self: Arc<RunningConfig>) {
        let weak = Arc::downgrade(&self);
        drop(self);
        let mut tick = tokio::time::interval(TICK);
        loop {
            tick.tick().await;
            let Some(control) = weak.upgrade() else {
                return;
            };
            for name in control.leases.expired(Instant::now()) {
                let Some(v) = control.state().get(Kind::Endpoint, &name).cloned() else {
                    continue;
                };
                let change = Change::Delete {
                    kind: Kind::Endpoint,
                    name: name.clone(),
                    pre: Precondition::Version(v.version),
                };
                match control.commit(vec![change]).await {
                    Ok(_) => info!(endpoint = %name, "lease expired: endpoint removed, draining"),
                    // Renewed or re-registered meanwhile: the new version has its own lease.
                    Err(Refused::Stale { .. } | Refused::NotFound { .. }) => {}
                    Err(e) => {
                        warn!(endpoint = %name, "lease expired but the endpoint could not be removed: {e}")
                    }
                }
            }
        }
    }
}
