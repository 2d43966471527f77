//! `/api/v1/stats`: the state of traffic as JSON, for the dashboard and for
//! people: per listener, route, pool and endpoint, read from the current
//! snapshot and the atomics behind it (errors and status classes as `outcome.rs`
//! counts them), with the per-second rates of the newest sample of `history.rs`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use weir_config::{Balance, ClientAuth, HostMatch, Protocol, TlsVersion};

use crate::metrics::history::{History, Rate};
use crate::metrics::outcome::{Statuses, Tallies, Tally, UPSTREAM_5XX};
use weir_metrics::clock;
use weir_metrics::hist::Windowed;
use weir_metrics::GLOBAL;
use weir_pipeline::snapshot::Snapshot;
use weir_transport::tls::TlsServer;
use weir_upstream::pool::PoolRt;

#[derive(Debug, Serialize)]
pub struct Stats {
    pub version: u64,
    pub uptime_secs: f64,
    pub listeners: Vec<ListenerStats>,
    pub routes: Vec<RouteStats>,
    pub pools: Vec<PoolStats>,
}

#[derive(Debug, Serialize)]
pub struct ListenerStats {
    pub name: String,
    pub bind: String,
    pub protocol: &'static str,
    pub pool: Option<String>,
    /// HTTP requests answered (and TCP sessions ended) on this listener since start.
    pub requests_total: u64,
    /// Over the last second sampled.
    pub requests_per_sec: f64,
    pub errors_per_sec: f64,
    /// Of the requests, those that failed, by reason (`outcome.rs`).
    pub errors: BTreeMap<&'static str, u64>,
    /// The requests by status class.
    pub statuses: Statuses,
    /// gRPC calls by the `grpc-status` their client got (`weir_grpc_calls_total`).
    pub grpc: BTreeMap<&'static str, u64>,
    /// TLS termination, when the listener has `[tls]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsStats>,
}

/// A TLS listener: its settings, the certificates served now (after any reload) and
/// its handshakes. Paths only, never what the key files hold.
#[derive(Debug, Serialize)]
pub struct TlsStats {
    pub min_version: &'static str,
    pub client_auth: &'static str,
    pub certificates: Vec<CertificateStats>,
    /// Handshakes since start by result (`weir_tls_handshakes_total` summed over
    /// versions).
    pub handshakes: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Serialize)]
pub struct CertificateStats {
    /// The certificate file, as configured.
    pub cert: String,
    /// The leaf's DNS names (subjectAltName).
    pub names: Vec<String>,
    pub default: bool,
    /// The leaf's validity, in seconds since the Unix epoch.
    pub not_before: i64,
    pub not_after: i64,
    /// Days until `not_after`, to two decimals; negative once expired.
    pub days_left: f64,
}

fn tls_stats(s: &TlsServer, now: i64) -> TlsStats {
    let current = s.certs.current();
    let certificates = current
        .identities
        .iter()
        .zip(s.certs.sources())
        .map(|(id, src)| CertificateStats {
            cert: src.cert.display().to_string(),
            names: id.names.clone(),
            default: src.default,
            not_before: id.not_before,
            not_after: id.not_after,
            days_left: ((id.not_after - now) as f64 / 864.0).round() / 100.0,
        })
        .collect();
    let mut handshakes: BTreeMap<&'static str, u64> = BTreeMap::new();
    for (_, outcome, n) in s.metrics.handshakes() {
        *handshakes.entry(outcome.as_str()).or_default() += n;
    }
    TlsStats {
        min_version: match s.settings.min_version {
            TlsVersion::V12 => "1.2",
            TlsVersion::V13 => "1.3",
        },
        client_auth: match s.settings.client_auth {
            ClientAuth::None => "none",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "required",
        },
        certificates,
        handshakes,
    }
}

#[derive(Debug, Serialize)]
pub struct RouteStats {
    pub name: String,
    pub listener: String,
    pub host: Option<String>,
    pub path_prefix: String,
    pub pool: String,
    pub requests_total: u64,
    pub requests_per_sec: f64,
    pub errors_per_sec: f64,
    pub errors: BTreeMap<&'static str, u64>,
    pub statuses: Statuses,
    pub grpc: BTreeMap<&'static str, u64>,
}

#[derive(Debug, Serialize)]
pub struct Latency {
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl Latency {
    fn of(w: &Windowed) -> Latency {
        Latency {
            p50: w.quantile_ms(0.5),
            p90: w.quantile_ms(0.9),
            p99: w.quantile_ms(0.99),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PoolStats {
    pub name: String,
    pub balance: &'static str,
    pub max_conn: u32,
    pub queue_depth: usize,
    pub max_queue: u32,
    pub in_flight: u32,
    /// Requests routed to the pool since start, whoever answered them.
    pub requests_total: u64,
    pub requests_per_sec: f64,
    pub errors_per_sec: f64,
    /// Of the requests, those that failed, by reason: weir's own answers (no healthy
    /// endpoint, queue full, ...) and upstream 5xx.
    pub errors: BTreeMap<&'static str, u64>,
    pub statuses: Statuses,
    pub latency_ms: Latency,
    pub endpoints: Vec<EndpointStats>,
    /// The endpoints the pool gives by DNS name, as last resolved (absent without any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<NameStats>,
}

/// A DNS name a pool follows.
#[derive(Debug, Serialize)]
pub struct NameStats {
    /// As the config writes it: `HOST:PORT` or an SRV name.
    pub name: String,
    /// The last resolution's result: `ok`, `empty`, `failed` or `timeout`.
    pub result: &'static str,
    /// Why the last resolution failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The addresses serving from it: the last good answer's.
    pub addresses: Vec<String>,
    /// When it is asked again.
    pub next_query_in_ms: u64,
}

#[derive(Debug, Serialize)]
pub struct EndpointStats {
    pub addr: String,
    pub weight: u32,
    /// "active", "draining" or "down" (unhealthy or ejected).
    pub state: &'static str,
    pub healthy: bool,
    pub ejected: bool,
    pub in_flight: u32,
    pub max_conn: u32,
    /// Answers it gave (every try that got a response head).
    pub requests_total: u64,
    pub requests_per_sec: f64,
    pub errors_per_sec: f64,
    /// Its failed tries by reason, and its answers relayed with a 5xx (`upstream_5xx`).
    pub errors: BTreeMap<&'static str, u64>,
    pub latency_ms: Latency,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

fn pool_stats(p: &PoolRt, balance: Balance, tallies: &Tallies, history: &History) -> PoolStats {
    let endpoints: Vec<EndpointStats> = p
        .endpoints
        .iter()
        .zip(&p.weights)
        .map(|(e, &weight)| {
            let healthy = e.health.is_up();
            let ejected = e.health.ejected();
            let key = (p.name.clone(), e.addr_str.clone());
            let mut errors: BTreeMap<&'static str, u64> = e.metrics.errors().into_iter().collect();
            if let Some(&n) = tallies
                .endpoints
                .get(&key)
                .and_then(|t| t.errors.get(UPSTREAM_5XX))
            {
                errors.insert(UPSTREAM_5XX, n);
            }
            let rate = history
                .rates
                .endpoints
                .get(&key)
                .copied()
                .unwrap_or_default();
            EndpointStats {
                addr: e.addr_str.to_string(),
                weight,
                state: if e.is_draining() {
                    "draining"
                } else if healthy && !ejected {
                    "active"
                } else {
                    "down"
                },
                healthy,
                ejected,
                in_flight: e.in_flight(),
                max_conn: p.max_conn,
                requests_total: e.metrics.requests.load(Relaxed),
                requests_per_sec: rate.requests,
                errors_per_sec: rate.errors,
                errors,
                latency_ms: Latency::of(&e.metrics.recent),
                bytes_in: e.metrics.bytes_in.load(Relaxed),
                bytes_out: e.metrics.bytes_out.load(Relaxed),
            }
        })
        .collect();
    // The pool's latency: the busiest endpoint's view is a poor summary, so
    // merge every endpoint's last minute.
    let merged = Windowed::default();
    for e in &p.endpoints {
        merged.absorb(&e.metrics.recent);
    }
    let t = tallies.pools.get(&p.name).cloned().unwrap_or_default();
    let rate = history
        .rates
        .pools
        .get(&p.name)
        .copied()
        .unwrap_or_default();
    PoolStats {
        name: p.name.to_string(),
        balance: balance.as_str(),
        max_conn: p.max_conn,
        queue_depth: p.shared.queue.len(),
        max_queue: p.max_queue,
        in_flight: p.shared.queue.in_flight(),
        requests_total: t.requests,
        requests_per_sec: rate.requests,
        errors_per_sec: rate.errors,
        errors: t.errors,
        statuses: t.statuses,
        latency_ms: Latency::of(&merged),
        endpoints,
        names: names(&p.name),
    }
}

fn names(pool: &str) -> Vec<NameStats> {
    let now = std::time::Instant::now();
    weir_metrics::dns::names(pool)
        .into_iter()
        .map(|(name, s)| NameStats {
            name,
            result: s.result,
            error: s.error,
            addresses: s.addresses,
            next_query_in_ms: s.next_query.saturating_duration_since(now).as_millis() as u64,
        })
        .collect()
}

pub fn stats(snap: &Snapshot, history: &History) -> Stats {
    let cfg = &snap.config;
    let tallies = Tallies::of(snap);
    let listener = |name: &str| -> (Tally, Rate) {
        (
            tallies.listeners.get(name).cloned().unwrap_or_default(),
            history
                .rates
                .listeners
                .get(name)
                .copied()
                .unwrap_or_default(),
        )
    };
    let route = |listener: &str, name: &str| -> (Tally, Rate) {
        let key = (Arc::from(listener), Arc::from(name));
        (
            tallies.routes.get(&key).cloned().unwrap_or_default(),
            history.rates.routes.get(&key).copied().unwrap_or_default(),
        )
    };
    let tls: BTreeMap<&str, &TlsServer> = snap
        .listeners
        .iter()
        .flatten()
        .filter_map(|l| Some((&*l.name, l.tls.as_deref()?)))
        .collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let listeners = cfg
        .listeners
        .iter()
        .map(|(name, l)| {
            let (t, rate) = listener(name);
            ListenerStats {
                name: name.clone(),
                bind: l.bind.to_string(),
                protocol: match l.protocol {
                    Protocol::Http => "http",
                    Protocol::Tcp => "tcp",
                },
                pool: l.pool.clone(),
                requests_total: t.requests,
                requests_per_sec: rate.requests,
                errors_per_sec: rate.errors,
                errors: t.errors,
                statuses: t.statuses,
                grpc: t.grpc,
                tls: tls.get(name.as_str()).map(|s| tls_stats(s, now)),
            }
        })
        .collect();
    let routes = cfg
        .routes
        .iter()
        .map(|(name, r)| (name, r, route(&r.listener, name)))
        .map(|(name, r, (t, rate))| RouteStats {
            requests_total: t.requests,
            requests_per_sec: rate.requests,
            errors_per_sec: rate.errors,
            errors: t.errors,
            statuses: t.statuses,
            grpc: t.grpc,
            name: name.clone(),
            listener: r.listener.clone(),
            host: r.host.as_ref().map(|h| match h {
                HostMatch::Exact(s) => s.clone(),
                HostMatch::Suffix(s) => format!("*{s}"),
            }),
            path_prefix: r.path_prefix.clone(),
            pool: r.pool.clone(),
        })
        .collect();
    let pools = cfg
        .pools
        .iter()
        .filter_map(|(name, p)| {
            snap.pools
                .get(name.as_str())
                .map(|rt| pool_stats(rt, p.balance, &tallies, history))
        })
        .collect();
    Stats {
        version: GLOBAL.version.load(Relaxed),
        uptime_secs: clock::now_ms() as f64 / 1000.0,
        listeners,
        routes,
        pools,
    }
}
