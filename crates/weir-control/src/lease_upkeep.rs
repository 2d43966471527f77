//! What the running config does with endpoint leases between changes: renewing one on a
//! heartbeat, and deleting the endpoints whose lease ran out. Apart from leases.rs (the
//! deadlines alone) because it commits through `RunningConfig` (control.rs), which holds
//! the leases.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};
use weir_store::{Change, Kind, Precondition};

use crate::control::RunningConfig;
use crate::leases::{HeartbeatError, TICK};
use crate::refused::Refused;

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
