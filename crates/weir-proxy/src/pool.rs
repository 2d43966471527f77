//! A pool as the data plane sees it: its endpoints (shared runtime state from
//! the registry), the balancing algorithm, limits, and the pool's timeouts.

use std::sync::Arc;
use std::time::Duration;

use weir_config::HashKey;

use crate::balance::{Algorithm, PickKey, PoolView};
use crate::capacity::PoolShared;
use crate::endpoint::EndpointRt;

/// See [`PoolRt::health_filter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthFilter {
    Available,
    All,
    None,
}

impl HealthFilter {
    #[inline]
    pub fn admits(self, pool: &PoolRt, i: usize) -> bool {
        match self {
            HealthFilter::Available => pool.available(i),
            HealthFilter::All => true,
            HealthFilter::None => false,
        }
    }
}

#[derive(Debug)]
pub struct PoolRt {
    pub name: Arc<str>,
    pub endpoints: Vec<Arc<EndpointRt>>,
    pub weights: Vec<u32>,
    pub algorithm: Algorithm,
    pub hash_key: HashKey,
    pub sticky_cookie: String,
    /// Per endpoint; 0 = no limit.
    pub max_conn: u32,
    /// Across the pool; 0 = no limit.
    pub max_conn_total: u32,
    pub max_queue: u32,
    pub queue_timeout: Duration,
    pub overflow_status: u16,
    pub slow_start: Duration,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    /// Across every try (see `http/tries.rs`).
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    /// Passive ejection and the no-healthy policy (active checks run in
    /// their own tasks).
    pub health: weir_config::Health,
    pub retry: weir_config::Retry,
    pub max_conn_age: Option<Duration>,
    pub max_requests_per_conn: u32,
    /// The queue and counters that outlive snapshots.
    pub shared: Arc<PoolShared>,
}

impl PoolRt {
    pub fn new(
        name: Arc<str>,
        cfg: &weir_config::Pool,
        endpoints: Vec<Arc<EndpointRt>>,
        shared: Arc<PoolShared>,
    ) -> Self {
        let ids: Vec<u64> = endpoints.iter().map(|e| e.id).collect();
        PoolRt {
            name,
            weights: cfg.endpoints.iter().map(|e| e.weight).collect(),
            algorithm: Algorithm::new(cfg, cfg.balance, &ids),
            endpoints,
            hash_key: cfg.hash_key.clone(),
            sticky_cookie: cfg.sticky.cookie.clone(),
            max_conn: cfg.max_conn,
            max_conn_total: cfg.max_conn_total,
            max_queue: cfg.max_queue,
            queue_timeout: cfg.queue_timeout,
            overflow_status: cfg.overflow_status,
            slow_start: cfg.slow_start,
            connect_timeout: cfg.connect_timeout,
            response_timeout: cfg.response_timeout,
            request_timeout: cfg.request_timeout.unwrap_or(cfg.response_timeout),
            idle_timeout: cfg.idle_timeout,
            health: cfg.health.clone(),
            retry: cfg.retry.clone(),
            max_conn_age: cfg.max_conn_age,
            max_requests_per_conn: cfg.max_requests_per_conn,
            shared,
        }
    }

    /// Whether requests can find the pool full (and then queue).
    pub fn limited(&self) -> bool {
        self.max_conn > 0 || self.max_conn_total > 0
    }

    /// Whether endpoint `i` can take one more request under `max_conn`.
    #[inline]
    pub fn has_room(&self, i: usize) -> bool {
        self.max_conn == 0 || self.in_flight(i) < self.max_conn
    }

    /// Whether endpoint `i` passes its health checks and is not ejected.
    #[inline]
    pub fn available(&self, i: usize) -> bool {
        self.endpoints[i].health.available()
    }

    /// Which endpoints a request may use: the available ones it does not
    /// avoid; when there is none, all of them (`fail_open`: a retry then
    /// tries an endpoint marked down rather than the one that just failed)
    /// or none (`fail_closed`).
    pub fn health_filter(&self, key: &PickKey) -> HealthFilter {
        if (0..self.endpoints.len()).any(|i| !key.avoids(i) && self.available(i)) {
            HealthFilter::Available
        } else if self.health.no_healthy == weir_config::NoHealthy::FailOpen {
            HealthFilter::All
        } else {
            HealthFilter::None
        }
    }

    /// The endpoint for a request, by the pool's algorithm, among those `ok` accepts.
    pub fn choose(&self, key: &PickKey, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        self.algorithm.pick(self, key, ok)
    }

    #[cfg(test)]
    pub fn for_test(name: &str) -> Self {
        let cfg = weir_config::Pool::default();
        PoolRt::new(
            name.into(),
            &cfg,
            Vec::new(),
            Arc::new(PoolShared::default()),
        )
    }
}

/// What the balancing algorithms read (`balance/view.rs`).
impl PoolView for PoolRt {
    #[inline]
    fn len(&self) -> usize {
        self.endpoints.len()
    }

    #[inline]
    fn weight(&self, i: usize) -> u32 {
        self.weights[i]
    }

    #[inline]
    fn in_flight(&self, i: usize) -> u32 {
        self.endpoints[i].in_flight()
    }

    #[inline]
    fn latency(&self, i: usize) -> f64 {
        self.endpoints[i].ewma.cost()
    }

    #[inline]
    fn id(&self, i: usize) -> u64 {
        self.endpoints[i].id
    }

    #[inline]
    fn ramp(&self, i: usize) -> f64 {
        self.endpoints[i].ramp.factor(self.slow_start)
    }

    fn ramping(&self) -> bool {
        !self.slow_start.is_zero() && (0..self.endpoints.len()).any(|i| self.ramp(i) < 1.0)
    }
}
