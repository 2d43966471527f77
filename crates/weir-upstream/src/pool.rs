//! A pool as the data plane sees it: its endpoints (shared runtime state from
//! the registry), the balancing algorithm, limits, and the pool's timeouts.
//! It is where the lower modules meet: it provides `balance::PoolView` to the
//! algorithms and `capacity::Pool` to capacity control, and holds the state
//! each of them keeps across snapshots ([`PoolShared`]).

use std::sync::Arc;
use std::time::Duration;

use weir_config::HashKey;

use crate::balance::{Algorithm, PickKey, PoolView};
use crate::capacity::{self, Limits, Queue};
use crate::endpoint::EndpointRt;
use crate::health::{Ejection, HealthFilter, Loss};
use crate::kind::SessionKind;
use crate::metrics::pool::PoolMetrics;
use crate::retry::Budget;
use weir_codec::h2::keepalive::Ping;
use weir_transport::UpstreamTls;

/// A pool's runtime state that outlives snapshots, kept in the registry by
/// pool name (`snapshot.rs`); each part belongs to the module that uses it.
#[derive(Debug, Default, Clone)]
pub struct PoolShared {
    /// The FIFO queue and the count of held slots (`capacity/queue.rs`).
    pub queue: Arc<Queue>,
    /// The retry budget (`retry.rs`).
    pub budget: Arc<Budget>,
    /// Passive ejection's decisions (`health/passive.rs`).
    pub ejection: Arc<Ejection>,
    /// Queue wait times and retry counts (`metrics/pool.rs`).
    pub metrics: Arc<PoolMetrics>,
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
    /// Across every try (see weir-pipeline's `http/tries.rs`).
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    /// Passive ejection and the no-healthy policy (active checks run in
    /// their own tasks).
    pub health: weir_config::Health,
    pub retry: weir_config::Retry,
    pub max_conn_age: Option<Duration>,
    pub max_requests_per_conn: u32,
    /// What weir speaks to the endpoints (the session seam's protocol), and a
    /// multiplexed protocol's sessions per connection (HTTP/2's streams).
    pub protocol: SessionKind,
    pub max_streams_per_conn: u32,
    /// HTTP/2: PINGs to find dead connections (`ping_interval`, `ping_timeout`).
    pub ping: Option<Ping>,
    /// TLS to the endpoints (`[pools.NAME.tls]`), built when the tls table
    /// changes (`Proxy::prepare`) and kept across snapshots otherwise.
    pub tls: Option<Arc<UpstreamTls>>,
    /// A PROXY protocol header starts each upstream connection; such a connection carries
    /// one client's requests only, so it is never pooled (weir-pipeline's `http/tries.rs`).
    pub send_proxy: Option<weir_config::SendProxy>,
    /// What outlives snapshots.
    pub shared: PoolShared,
}

impl PoolRt {
    pub fn new(
        name: Arc<str>,
        cfg: &weir_config::Pool,
        endpoints: Vec<Arc<EndpointRt>>,
        shared: PoolShared,
        tls: Option<Arc<UpstreamTls>>,
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
            protocol: SessionKind::of(cfg.protocol),
            max_streams_per_conn: cfg.max_streams_per_conn,
            ping: cfg.ping_interval.map(|interval| Ping {
                interval,
                timeout: cfg.ping_timeout,
                dead: shared.metrics.ping_timeouts.clone(),
            }),
            tls,
            send_proxy: cfg.send_proxy,
            shared,
        }
    }

    /// Whether requests can find the pool full (and then queue).
    pub fn limited(&self) -> bool {
        self.max_conn > 0 || self.max_conn_total > 0
    }

    /// Which endpoints a request may use (see [`HealthFilter::new`]).
    pub fn health_filter(&self, key: &PickKey) -> HealthFilter {
        HealthFilter::new(&self.endpoints, key, self.health.no_healthy)
    }

    /// A try on `ep` failed (refused, reset, or an `eject_status` answer):
    /// passive ejection may take it out.
    pub fn record_failure(&self, ep: &EndpointRt, why: &str, loss: Loss) {
        self.shared
            .ejection
            .record_failure(&self.health, &self.endpoints, ep, why, loss);
    }

    /// The endpoint for a request, by the pool's algorithm, among those `ok` accepts.
    pub fn choose(&self, key: &PickKey, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        self.algorithm.pick(self, key, ok)
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

/// What capacity control reads (`capacity/pool.rs`).
impl capacity::Pool for PoolRt {
    #[inline]
    fn limits(&self) -> Limits {
        Limits {
            max_conn: self.max_conn,
            max_conn_total: self.max_conn_total,
            max_queue: self.max_queue,
            queue_timeout: self.queue_timeout,
        }
    }

    #[inline]
    fn endpoints(&self) -> &[Arc<EndpointRt>] {
        &self.endpoints
    }

    #[inline]
    fn health_filter(&self, key: &PickKey) -> HealthFilter {
        PoolRt::health_filter(self, key)
    }

    #[inline]
    fn choose(&self, key: &PickKey, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        PoolRt::choose(self, key, ok)
    }

    fn waited(&self, d: Duration) {
        self.shared.metrics.queue_wait.observe(d);
    }
}

/// The queue capacity control takes slots through (`capacity/acquire.rs`).
impl capacity::Queued for PoolRt {
    #[inline]
    fn queue(&self) -> &Arc<Queue> {
        &self.shared.queue
    }
}
