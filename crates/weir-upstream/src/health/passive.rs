//! Passive ejection: consecutive failures on real traffic take an endpoint
//! out for a while, without waiting for the next active check. The n-th
//! ejection lasts n × eject_time (at most 10×), and a pool never has more
//! than max_ejection_percent of its endpoints ejected at once.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use tracing::warn;

use crate::endpoint::EndpointRt;
use weir_metrics::clock;

/// A try on `ep` succeeded: its failure streak ends, and so does the memory of a crash.
#[inline]
pub fn record_success(ep: &EndpointRt) {
    if ep.health.failures.load(Relaxed) != 0 {
        ep.health.failures.store(0, Relaxed);
    }
    if ep.health.dropped.load(Relaxed) {
        ep.health.dropped.store(false, Relaxed);
    }
}

/// What a failed try lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Nothing the endpoint had taken: it refused, timed out, or answered (an `eject_status`).
    Nothing,
    /// A request it had taken: closed or reset after the request went out, or a response cut
    /// short. What a crash looks like from here.
    InFlight,
}

/// A pool's ejection decisions: kept across snapshots with the pool's other
/// shared state (`pool.rs::PoolShared`), as the cap counts the whole pool.
#[derive(Debug, Default)]
pub struct Ejection {
    /// Serialises decisions, so that two failures at once cannot both eject
    /// and exceed max_ejection_percent.
    one_at_a_time: Mutex<()>,
}

impl Ejection {
    /// A try on `ep`, one of `peers` (the pool's endpoints), failed
    /// (refused, reset, or an `eject_status` answer).
    pub fn record_failure(
        &self,
        policy: &weir_config::Health,
        peers: &[Arc<EndpointRt>],
        ep: &EndpointRt,
        why: &str,
        loss: Loss,
    ) {
        if policy.eject_after == 0 {
            return;
        }
        if loss == Loss::InFlight {
            ep.health.dropped.store(true, Relaxed);
        }
        let n = ep.health.failures.fetch_add(1, Relaxed) + 1;
        if n < policy.eject_after || ep.health.ejected() {
            return;
        }
        let _one_at_a_time = self.one_at_a_time.lock().unwrap();
        if ep.health.ejected() {
            return;
        }
        let total = peers.len() as u64;
        let allowed = total * policy.max_ejection_percent as u64 / 100;
        let ejected = peers.iter().filter(|e| e.health.ejected()).count() as u64;
        if ejected >= allowed {
            return;
        }
        let times = ep.health.ejections.fetch_add(1, Relaxed) as u64 + 1;
        let span = policy.eject_time.as_millis() as u64 * times.min(10);
        ep.health
            .ejected_until
            .store(clock::now_ms() + span, Relaxed);
        ep.health.failures.store(0, Relaxed);
        warn!(
            pool = &*ep.pool,
            endpoint = &*ep.addr_str,
            "endpoint ejected for {span} ms after {n} consecutive failures ({why})"
        );
    }
}
