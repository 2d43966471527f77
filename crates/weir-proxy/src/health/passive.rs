//! Passive ejection: consecutive failures on real traffic take an endpoint
//! out for a while, without waiting for the next active check. The n-th
//! ejection lasts n × eject_time (at most 10×), and a pool never has more
//! than max_ejection_percent of its endpoints ejected at once.

use std::sync::atomic::Ordering::Relaxed;

use tracing::warn;

use crate::clock;
use crate::endpoint::EndpointRt;
use crate::pool::PoolRt;

/// A try on `ep` succeeded: its failure streak ends.
#[inline]
pub fn record_success(ep: &EndpointRt) {
    if ep.health.failures.load(Relaxed) != 0 {
        ep.health.failures.store(0, Relaxed);
    }
}

/// A try on `ep` failed (refused, reset, or an `eject_status` answer).
pub fn record_failure(pool: &PoolRt, ep: &EndpointRt, why: &str) {
    let policy = &pool.health;
    if policy.eject_after == 0 {
        return;
    }
    let n = ep.health.failures.fetch_add(1, Relaxed) + 1;
    if n < policy.eject_after || ep.health.ejected() {
        return;
    }
    // Decide under the pool's lock so that two failures at once cannot both
    // eject and exceed max_ejection_percent.
    let _one_at_a_time = pool.shared.eject_lock.lock().unwrap();
    if ep.health.ejected() {
        return;
    }
    let total = pool.endpoints.len() as u64;
    let allowed = total * policy.max_ejection_percent as u64 / 100;
    let ejected = pool.endpoints.iter().filter(|e| e.health.ejected()).count() as u64;
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
        pool = &*pool.name,
        endpoint = &*ep.addr_str,
        "endpoint ejected for {span} ms after {n} consecutive failures ({why})"
    );
}
