//! The immutable view of the configuration the data plane reads: built by the
//! control plane, published by one atomic pointer swap, read once per request
//! (or TCP session) without locks.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use weir_config::{Config, HealthCheck, InitialState, Protocol};

use crate::router::{RouteTable, Target, TargetMetrics};
use crate::tcp::passthrough::Passthrough;
use weir_filters::Chain;
use weir_http::counts::{Counts, Labels};
use weir_metrics::hist::Histogram;
use weir_transport::tls::TlsServer;
use weir_transport::UpstreamTls;
use weir_upstream::endpoint::EndpointRt;
use weir_upstream::health::checker::{self, Checker};
use weir_upstream::kind::SessionKind;
use weir_upstream::pool::{PoolRt, PoolShared};

#[derive(Debug, Default)]
pub struct Snapshot {
    /// The configuration this snapshot was built from (for stats).
    pub config: Arc<Config>,
    /// Indexed by listener slot (stable per bind address across reloads);
    /// `None` for slots whose listener was removed.
    pub listeners: Vec<Option<ListenerSnap>>,
    pub pools: HashMap<Arc<str>, Arc<PoolRt>>,
}

/// What the data plane reads: the current snapshot, swapped whole by a config change.
#[derive(Debug)]
pub struct SnapshotCell {
    pub snapshot: arc_swap::ArcSwap<Snapshot>,
}

/// A listener's limits for each of its client connections (which keep the ones they were
/// accepted under).
#[derive(Debug, Clone, Copy)]
pub struct ClientLimits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_header_bytes: usize,
}

#[derive(Debug, Clone)]
pub struct ListenerSnap {
    pub name: Arc<str>,
    /// Where this listener's access log goes, if it has one.
    pub access_log: Option<weir_http::accesslog::Sink>,
    /// Where requests that match no route are counted.
    pub no_route: TargetMetrics,
    pub protocol: Protocol,
    pub routes: RouteTable,
    /// The TCP listener's pool.
    pub pool: Option<Arc<PoolRt>>,
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    /// An upgraded connection (WebSocket) silent both ways this long is closed.
    pub upgrade_idle_timeout: Duration,
    pub max_header_bytes: usize,
    /// The three above, as each HTTP connection keeps them (one shared copy).
    pub client_limits: Arc<ClientLimits>,
    /// A tcp listener with `sni_routing`: its hello-stage counts (`routes` then holds
    /// its `sni` routes, looked up like hosts).
    pub passthrough: Option<Arc<Passthrough>>,
    /// TLS termination, when the listener has `[tls]`.
    pub tls: Option<Arc<TlsServer>>,
    /// `trusted_proxies`, when the listener has them (weir-http's `client_addr.rs`).
    pub trusted: Option<Arc<[weir_config::Cidr]>>,
    /// `proxy_protocol`: its refusal counts (`transport/proxy_protocol/`).
    pub proxy_protocol: Option<Arc<weir_transport::proxy_protocol::refusals::ProxyErrors>>,
    /// Some pool it sends to has `send_proxy`, so a connection's own address (the PROXY
    /// header's destination) is looked up when the listener's bind is a wildcard.
    pub sends_proxy: bool,
    /// A tcp listener's `filters` (address lists), which each connection passes first.
    pub filters: Chain,
    /// How request paths are put in normal form before routing (`http/forward/route.rs`).
    pub path: weir_config::path::PathRules,
}

/// Runtime state that outlives snapshots: endpoints keyed by pool and
/// address, pool queues keyed by pool name.
#[derive(Debug, Default)]
pub struct Registry {
    pub endpoints: HashMap<(Arc<str>, SocketAddr), Arc<EndpointRt>>,
    pub pools: HashMap<Arc<str>, PoolShared>,
    /// Set after the first config: endpoints added later slow-start.
    pub started: bool,
    /// Active health checkers, one per checked endpoint.
    pub checkers: HashMap<(Arc<str>, SocketAddr), Checker>,
    /// Request counters and duration histograms by label set; rebuilt with
    /// each snapshot so that label sets leaving the config stop being reported.
    pub series: HashMap<Labels, Arc<Counts>>,
    pub durations: HashMap<Labels, Arc<Histogram>>,
    /// SNI passthrough counts by listener, rebuilt like `series`.
    pub passthrough: crate::tcp::passthrough::Series,
    /// PROXY protocol refusals by listener, rebuilt like `series`.
    pub proxy_protocol: weir_transport::proxy_protocol::refusals::Series,
    /// TLS listeners' server sides by listener name, kept while their settings stay
    /// the same (certificates loaded once, watched, session tickets kept).
    pub listener_tls: HashMap<String, Arc<TlsServer>>,
    /// Each route filter as configured and as built, so an unchanged one is kept.
    pub filters: HashMap<String, (weir_config::Filter, Arc<weir_filters::Filter>)>,
    /// Each TLS pool's settings, by pool name: kept while its tls table is unchanged.
    pub tls: HashMap<Arc<str>, Arc<UpstreamTls>>,
}

/// Finds or makes the counters for each target of a new snapshot, keeping
/// only those still in use.
struct SeriesBuilder<'a> {
    old_series: &'a mut HashMap<Labels, Arc<Counts>>,
    old_durations: &'a mut HashMap<Labels, Arc<Histogram>>,
    series: HashMap<Labels, Arc<Counts>>,
    durations: HashMap<Labels, Arc<Histogram>>,
}

impl<'a> SeriesBuilder<'a> {
    fn new(
        old_series: &'a mut HashMap<Labels, Arc<Counts>>,
        old_durations: &'a mut HashMap<Labels, Arc<Histogram>>,
    ) -> Self {
        SeriesBuilder {
            old_series,
            old_durations,
            series: HashMap::new(),
            durations: HashMap::new(),
        }
    }

    fn counts(&mut self, labels: Labels) -> Arc<Counts> {
        let c = self
            .old_series
            .get(&labels)
            .cloned()
            .unwrap_or_else(|| Arc::new(Counts::new(labels.clone())));
        self.series.insert(labels, c.clone());
        c
    }

    fn duration(&mut self, labels: Labels) -> Arc<Histogram> {
        let h = self.old_durations.get(&labels).cloned().unwrap_or_default();
        self.durations.insert(labels, h.clone());
        h
    }

    fn target(&mut self, listener: &Arc<str>, route: &str, pool: &PoolRt) -> TargetMetrics {
        let labels = |endpoint: &Arc<str>| Labels {
            listener: listener.clone(),
            route: route.into(),
            pool: pool.name.clone(),
            endpoint: endpoint.clone(),
        };
        let none: Arc<str> = "".into();
        TargetMetrics {
            by_endpoint: pool
                .endpoints
                .iter()
                .map(|e| self.counts(labels(&e.addr_str)))
                .collect(),
            no_endpoint: self.counts(labels(&none)),
            duration: self.duration(labels(&none)),
        }
    }

    fn no_route(&mut self, listener: &Arc<str>) -> TargetMetrics {
        let labels = Labels {
            listener: listener.clone(),
            route: "".into(),
            pool: "".into(),
            endpoint: "".into(),
        };
        TargetMetrics {
            by_endpoint: Arc::new([]),
            no_endpoint: self.counts(labels.clone()),
            duration: self.duration(labels),
        }
    }

    fn finish(self) {
        *self.old_series = self.series;
        *self.old_durations = self.durations;
    }
}

/// Starts, restarts (its settings, the pool's TLS or protocol changed) or stops the
/// endpoint's checker; the endpoint's health state itself is kept either way.
pub fn sync_checker(
    checkers: &mut HashMap<(Arc<str>, SocketAddr), Checker>,
    key: &(Arc<str>, SocketAddr),
    ep: &Arc<EndpointRt>,
    pool: &weir_config::Pool,
    tls: Option<&Arc<UpstreamTls>>,
) {
    if pool.health.check == HealthCheck::None {
        if checkers.remove(key).is_some() {
            // Nobody checks any more: do not leave it marked down forever.
            ep.health.set_up(true);
        }
        return;
    }
    let tls_id = tls.map_or(0, |t| t.id);
    if checkers.get(key).is_some_and(|c| {
        c.cfg == pool.health
            && c.tls == tls_id
            && c.protocol == SessionKind::of(pool.protocol)
            && c.send_proxy == pool.send_proxy
    }) {
        return;
    }
    let slow_start = !pool.slow_start.is_zero();
    checkers.insert(
        key.clone(),
        checker::start(
            ep.clone(),
            pool.health.clone(),
            slow_start,
            tls.cloned(),
            SessionKind::of(pool.protocol),
            pool.send_proxy,
        ),
    );
}

impl Snapshot {
    /// Every label set of request counts (each once: a set of labels has one `Counts`),
    /// for metrics and stats.
    pub fn all_counts(&self) -> Vec<Arc<Counts>> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<Arc<Counts>> = Vec::new();
        let mut push = |c: &Arc<Counts>| {
            if seen.insert(Arc::as_ptr(c)) {
                out.push(c.clone());
            }
        };
        for l in self.listeners.iter().flatten() {
            push(&l.no_route.no_endpoint);
            for t in l.routes.targets() {
                push(&t.metrics.no_endpoint);
                t.metrics.by_endpoint.iter().for_each(&mut push);
            }
        }
        out
    }

    /// Builds a snapshot; endpoints already in `registry` keep their state,
    /// new ones are added. `slots` maps each listener name to its slot; `tls`
    /// holds each TLS pool's settings (`Proxy::prepare`).
    pub fn build(
        cfg: &Config,
        slots: &HashMap<String, usize>,
        registry: &mut Registry,
        logs: &HashMap<weir_config::AccessLog, weir_http::accesslog::Sink>,
        listener_tls: HashMap<String, Arc<TlsServer>>,
        tls: HashMap<Arc<str>, Arc<UpstreamTls>>,
        filters: HashMap<String, Arc<weir_filters::Filter>>,
    ) -> Self {
        let mut pools = HashMap::new();
        let mut next: HashMap<(Arc<str>, SocketAddr), Arc<EndpointRt>> = HashMap::new();
        let mut next_pools: HashMap<Arc<str>, PoolShared> = HashMap::new();
        for (name, p) in &cfg.pools {
            let name: Arc<str> = name.as_str().into();
            let pool_tls = tls.get(&name).cloned();
            let tls_id = |t: Option<&Arc<UpstreamTls>>| t.map_or(0, |t| t.id);
            // New TLS settings (or TLS switched on or off): connections pooled under the
            // old ones close now rather than idle out (none would be reused anyway).
            let tls_changed = tls_id(registry.tls.get(&name)) != tls_id(pool_tls.as_ref());
            let endpoints = p
                .endpoints
                .iter()
                .map(|e| {
                    let key = (name.clone(), e.addr);
                    let up = p.health.check == HealthCheck::None
                        || p.health.initial == InitialState::Healthy;
                    let rt = registry.endpoints.get(&key).cloned().unwrap_or_else(|| {
                        Arc::new(EndpointRt::new(name.clone(), e.addr, registry.started, up))
                    });
                    sync_checker(&mut registry.checkers, &key, &rt, p, pool_tls.as_ref());
                    if tls_changed {
                        rt.idle.clear();
                    }
                    next.insert(key, rt.clone());
                    rt
                })
                .collect();
            let shared = registry.pools.get(&name).cloned().unwrap_or_default();
            next_pools.insert(name.clone(), shared.clone());
            pools.insert(
                name.clone(),
                Arc::new(PoolRt::new(name, p, endpoints, shared, pool_tls)),
            );
        }
        // Endpoints that left the config drain: no new requests (they are not in
        // any pool of this snapshot), and their idle connections close now.
        for (key, ep) in registry.endpoints.iter() {
            if !next.contains_key(key) {
                ep.drain(cfg.global.drain_grace);
            }
        }
        // Requests queued for a pool that is gone get their answer now.
        for (name, shared) in registry.pools.iter() {
            if !next_pools.contains_key(name) {
                shared.queue.close();
            }
        }
        registry.checkers.retain(|k, _| next.contains_key(k));
        registry.endpoints = next;
        registry.pools = next_pools;
        registry.tls = tls;
        registry.started = true;

        let size = slots.values().copied().max().map_or(0, |m| m + 1);
        let mut listeners: Vec<Option<ListenerSnap>> = (0..size).map(|_| None).collect();
        let mut series = SeriesBuilder::new(&mut registry.series, &mut registry.durations);
        let mut passthrough = crate::tcp::passthrough::Series::new();
        let mut proxy_errors = weir_transport::proxy_protocol::refusals::Series::new();
        for (name, l) in &cfg.listeners {
            let lname: Arc<str> = name.as_str().into();
            let default = l.pool.as_deref().map(|p| {
                let pool = pools[p].clone();
                Target {
                    route: None,
                    metrics: series.target(&lname, "", &pool),
                    pool,
                    hsts: None,
                    filters: Chain::default(),
                }
            });
            let pool = default.as_ref().map(|t| t.pool.clone());
            let mut sends_proxy = pool.as_ref().is_some_and(|p| p.send_proxy.is_some());
            let mut routes = RouteTable::new(default);
            for (rname, r) in cfg.routes.iter().filter(|(_, r)| r.listener == *name) {
                let pool = pools[r.pool.as_str()].clone();
                sends_proxy |= pool.send_proxy.is_some();
                let target = Target {
                    route: Some(rname.as_str().into()),
                    metrics: series.target(&lname, rname, &pool),
                    pool,
                    hsts: r
                        .hsts
                        .as_deref()
                        .and_then(|v| http::HeaderValue::from_str(v).ok()),
                    filters: Chain::of(
                        &r.filters,
                        &filters,
                        r.https_redirect.then_some(r.https_port),
                    ),
                };
                // An SNI is looked up as a host is (exact, then the longest `*.` suffix).
                let matcher = if l.sni_routing { &r.sni } else { &r.host };
                routes.insert(matcher.as_ref(), &r.path_prefix, target);
            }
            let no_route = series.no_route(&lname);
            let counts = l.sni_routing.then(|| {
                let c = registry
                    .passthrough
                    .get(&lname)
                    .cloned()
                    .unwrap_or_default();
                passthrough.insert(lname.clone(), c.clone());
                c
            });
            let proxy_counts = l.proxy_protocol.then(|| {
                let c = registry
                    .proxy_protocol
                    .get(&lname)
                    .cloned()
                    .unwrap_or_default();
                proxy_errors.insert(lname.clone(), c.clone());
                c
            });
            listeners[slots[name]] = Some(ListenerSnap {
                access_log: l.access_log.as_ref().and_then(|d| logs.get(d).cloned()),
                no_route,
                name: lname,
                protocol: l.protocol,
                routes,
                pool,
                header_timeout: l.header_timeout,
                idle_timeout: l.idle_timeout,
                upgrade_idle_timeout: l.upgrade_idle_timeout,
                max_header_bytes: l.max_header_bytes,
                client_limits: Arc::new(ClientLimits {
                    header_timeout: l.header_timeout,
                    idle_timeout: l.idle_timeout,
                    max_header_bytes: l.max_header_bytes,
                }),
                passthrough: counts,
                tls: listener_tls.get(name).cloned(),
                trusted: (!l.trusted_proxies.is_empty()).then(|| l.trusted_proxies.clone().into()),
                proxy_protocol: proxy_counts,
                sends_proxy,
                filters: Chain::of(&l.filters, &filters, None),
                path: l.path,
            });
        }
        series.finish();
        registry.passthrough = passthrough;
        registry.proxy_protocol = proxy_errors;
        registry.listener_tls = listener_tls;
        registry.filters = cfg
            .filters
            .iter()
            .filter_map(|(n, f)| Some((n.clone(), (f.clone(), filters.get(n)?.clone()))))
            .collect();
        Snapshot {
            listeners,
            pools,
            config: Arc::new(cfg.clone()),
        }
    }

    /// After the swap: queues serve from the new pools (a raised limit or a
    /// new endpoint lets waiters through at once).
    pub fn install_queues(&self) {
        for pool in self.pools.values() {
            pool.shared.queue.install(pool);
        }
    }
}
