//! `/metrics`: the OpenMetrics text exposition (which Prometheus scrapes),
//! written with the `prometheus-client` crate from a custom collector that
//! reads weir's atomics at scrape time. Only label sets in the running
//! config are reported, so cardinality stays bounded.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use weir_metrics::admin_auth;
use weir_metrics::hist::Histogram;
use weir_metrics::GLOBAL;
use weir_pipeline::snapshot::Snapshot;
use weir_pipeline::snapshot::SnapshotCell;

type Labels = Vec<(&'static str, String)>;

#[derive(Debug)]
struct Weir(Arc<SnapshotCell>);

/// The whole exposition for the data plane's current state.
pub fn render(shared: &Arc<SnapshotCell>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Weir(shared.clone())));
    registry.register_collector(Box::new(super::sni::PassthroughCollector(shared.clone())));
    registry.register_collector(Box::new(super::proxy_protocol::ProxyErrorsCollector(
        shared.clone(),
    )));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

fn counter(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, u64)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, v) in rows {
        m.encode_family(labels)?
            .encode_counter::<NoLabelSet, u64, u64>(v, None::<&Exemplar<NoLabelSet, u64>>)?;
    }
    Ok(())
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, i64)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, v) in rows {
        m.encode_family(labels)?.encode_gauge(v)?;
    }
    Ok(())
}

fn histogram(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: &[(Labels, &Histogram)],
) -> Result<(), std::fmt::Error> {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, h) in rows {
        let (sum, count, buckets) = h.snapshot();
        m.encode_family(labels)?
            .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
    }
    Ok(())
}

impl Collector for Weir {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self.0.snapshot.load_full();

        let mut rows = Vec::new();
        for c in snap.all_counts() {
            let l = &c.labels;
            c.each(|code, reason, n| {
                let labels = vec![
                    ("listener", l.listener.to_string()),
                    ("route", l.route.to_string()),
                    ("pool", l.pool.to_string()),
                    ("endpoint", l.endpoint.to_string()),
                    // TCP sessions have no status: an empty code.
                    (
                        "code",
                        if code == 0 {
                            String::new()
                        } else {
                            code.to_string()
                        },
                    ),
                    ("reason", reason.to_string()),
                ];
                rows.push((labels, n));
            });
        }
        counter(&mut enc, "weir_requests", "Requests answered, by where they went, status and (for answers weir generated) reason; TCP sessions ended, with an empty code.", &rows)?;

        let mut rows = Vec::new();
        for c in snap.all_counts() {
            let l = &c.labels;
            c.each_grpc(|code, n| {
                let labels = vec![
                    ("listener", l.listener.to_string()),
                    ("route", l.route.to_string()),
                    ("pool", l.pool.to_string()),
                    ("endpoint", l.endpoint.to_string()),
                    ("grpc_code", code.to_string()),
                ];
                rows.push((labels, n));
            });
        }
        counter(&mut enc, "weir_grpc_calls", "gRPC calls answered with a grpc-status (the backend's, or weir's own answer's), by where they went and that status: each is also one HTTP 200 in weir_requests_total.", &rows)?;

        let mut durations: Vec<(Labels, Arc<Histogram>)> = Vec::new();
        for l in snap.listeners.iter().flatten() {
            let rows = l
                .routes
                .targets()
                .map(|t| {
                    (
                        t.route.as_deref().unwrap_or(""),
                        t.pool_name(),
                        &t.metrics.duration,
                    )
                })
                .chain(std::iter::once(("", "", &l.no_route.duration)));
            for (route, pool, h) in rows {
                if durations.iter().any(|(_, d)| Arc::ptr_eq(d, h)) {
                    continue;
                }
                let labels = vec![
                    ("listener", l.name.to_string()),
                    ("route", route.to_string()),
                    ("pool", pool.to_string()),
                ];
                durations.push((labels, h.clone()));
            }
        }
        let durations: Vec<(Labels, &Histogram)> =
            durations.iter().map(|(l, h)| (l.clone(), &**h)).collect();
        histogram(
            &mut enc,
            "weir_request_duration_seconds",
            "Time from the request head to the end of the response.",
            &durations,
        )?;

        let mut pools: Vec<_> = snap.pools.values().cloned().collect();
        pools.sort_by(|a, b| a.name.cmp(&b.name));
        let ep_labels =
            |p: &str, e: &str| vec![("pool", p.to_string()), ("endpoint", e.to_string())];
        let upstream: Vec<(Labels, &Histogram)> = pools
            .iter()
            .flat_map(|p| {
                p.endpoints
                    .iter()
                    .map(move |e| (ep_labels(&p.name, &e.addr_str), &e.metrics.upstream))
            })
            .collect();
        histogram(
            &mut enc,
            "weir_upstream_duration_seconds",
            "Time from sending a try upstream to its response head.",
            &upstream,
        )?;
        let queue: Vec<(Labels, &Histogram)> = pools
            .iter()
            .filter(|p| p.limited())
            .map(|p| {
                (
                    vec![("pool", p.name.to_string())],
                    &p.shared.metrics.queue_wait,
                )
            })
            .collect();
        histogram(
            &mut enc,
            "weir_queue_duration_seconds",
            "Time requests waited for a free slot (pools with max_conn).",
            &queue,
        )?;

        let depth: Vec<(Labels, i64)> = pools
            .iter()
            .map(|p| {
                (
                    vec![("pool", p.name.to_string())],
                    p.shared.queue.len() as i64,
                )
            })
            .collect();
        gauge(
            &mut enc,
            "weir_queue_depth",
            "Requests waiting for a slot.",
            &depth,
        )?;
        let upgraded: Vec<(Labels, i64)> = pools
            .iter()
            .map(|p| {
                (
                    vec![("pool", p.name.to_string())],
                    p.shared.metrics.upgraded.load(Relaxed),
                )
            })
            .collect();
        gauge(
            &mut enc,
            "weir_upgraded_connections",
            "Upgraded connections (WebSocket) being relayed.",
            &upgraded,
        )?;
        let in_flight: Vec<(Labels, i64)> = pools
            .iter()
            .flat_map(|p| {
                p.endpoints
                    .iter()
                    .map(move |e| (ep_labels(&p.name, &e.addr_str), e.in_flight() as i64))
            })
            .collect();
        gauge(
            &mut enc,
            "weir_endpoint_in_flight",
            "Requests or sessions in flight on the endpoint.",
            &in_flight,
        )?;
        let healthy: Vec<(Labels, i64)> = pools
            .iter()
            .flat_map(|p| {
                p.endpoints
                    .iter()
                    .map(move |e| (ep_labels(&p.name, &e.addr_str), e.health.available() as i64))
            })
            .collect();
        gauge(
            &mut enc,
            "weir_endpoint_healthy",
            "1 when the endpoint passes its checks and is not ejected.",
            &healthy,
        )?;

        let mut retries = Vec::new();
        for p in &pools {
            for (reason, n) in p.shared.metrics.retries() {
                retries.push((
                    vec![("pool", p.name.to_string()), ("reason", reason.to_string())],
                    n,
                ));
            }
        }
        counter(
            &mut enc,
            "weir_retries",
            "Retries, by the reason of the try that failed.",
            &retries,
        )?;
        let ping_timeouts: Vec<(Labels, u64)> = pools
            .iter()
            .filter(|p| p.ping.is_some())
            .map(|p| {
                (
                    vec![("pool", p.name.to_string())],
                    p.shared.metrics.ping_timeouts.load(Relaxed),
                )
            })
            .collect();
        counter(
            &mut enc,
            "weir_upstream_ping_timeouts",
            "HTTP/2 upstream connections given up as dead: a PING went unanswered (pools with ping_interval).",
            &ping_timeouts,
        )?;
        let ejections: Vec<(Labels, u64)> = pools
            .iter()
            .flat_map(|p| {
                p.endpoints
                    .iter()
                    .map(move |e| (ep_labels(&p.name, &e.addr_str), e.health.ejection_count()))
            })
            .collect();
        counter(
            &mut enc,
            "weir_ejections",
            "Passive ejections of the endpoint.",
            &ejections,
        )?;

        let idle: i64 = pools
            .iter()
            .flat_map(|p| p.endpoints.iter())
            .map(|e| e.idle.len() as i64)
            .sum();
        let conns = vec![
            (
                vec![
                    ("side", "client".to_string()),
                    ("state", "open".to_string()),
                ],
                GLOBAL.client_open.load(Relaxed),
            ),
            (
                vec![
                    ("side", "upstream".to_string()),
                    ("state", "open".to_string()),
                ],
                GLOBAL.upstream_open.load(Relaxed),
            ),
            (
                vec![
                    ("side", "upstream".to_string()),
                    ("state", "idle".to_string()),
                ],
                idle,
            ),
        ];
        gauge(
            &mut enc,
            "weir_connections",
            "Connections, by side and state.",
            &conns,
        )?;
        gauge(
            &mut enc,
            "weir_config_version",
            "How many configurations have been applied.",
            &[(vec![], GLOBAL.version.load(Relaxed) as i64)],
        )?;
        let reloads = vec![
            (
                vec![("result", "ok".to_string())],
                GLOBAL.reloads_ok.load(Relaxed),
            ),
            (
                vec![("result", "failed".to_string())],
                GLOBAL.reloads_failed.load(Relaxed),
            ),
        ];
        counter(
            &mut enc,
            "weir_config_reloads",
            "Configuration reloads, by result.",
            &reloads,
        )?;
        counter(
            &mut enc,
            "weir_tls_sni_ip_address",
            "TLS ClientHellos whose server name was an IP address (RFC 6066 forbids it; served as if no name was sent).",
            &[(vec![], GLOBAL.tls_sni_ip_address.load(Relaxed))],
        )?;
        histogram(
            &mut enc,
            "weir_config_apply_seconds",
            "Time to validate a config change and publish it to the data plane (the store's fsync excluded).",
            &[(Labels::default(), &*weir_metrics::config_apply::APPLY)],
        )?;
        if let Some(up) = weir_metrics::config_store::up() {
            gauge(
                &mut enc,
                "weir_config_store_up",
                "Whether the config store shared by the replicas (etcd) answered the last time it was asked: 1 yes, 0 no (the running config stays).",
                &[(vec![], up as i64)],
            )?;
            counter(
                &mut enc,
                "weir_config_store_ignored",
                "Keys under the shared store's prefix that did not read (not JSON, not a resource) and were ignored.",
                &[(
                    vec![],
                    weir_metrics::config_store::IGNORED.load(Relaxed),
                )],
            )?;
            gauge(
                &mut enc,
                "weir_config_store_invalid",
                "Resources in the shared store that do not validate (written there by others), held back now: the rest of the config runs, these with their last valid version or not at all.",
                &[(
                    vec![],
                    weir_metrics::config_store::INVALID.load(Relaxed) as i64,
                )],
            )?;
        }
        let dns: Vec<(Labels, u64)> = weir_metrics::dns::counts()
            .into_iter()
            .map(|((pool, result), n)| (vec![("pool", pool), ("result", result.to_string())], n))
            .collect();
        if !dns.is_empty() {
            counter(
                &mut enc,
                "weir_dns_resolutions",
                "Resolutions of the endpoints pools give by DNS name, by pool and result (ok; empty: no such name or no address records; failed; timeout). Whatever the result, the last good answer keeps serving.",
                &dns,
            )?;
        }
        counter(
            &mut enc,
            "weir_admin_auth_failures",
            "Failed attempts at the admin API's bearer token, by reason (wrong_token: checked and wrong; throttled: refused with 429 unchecked, its source having sent too many wrong ones).",
            &[
                (
                    vec![("reason", "wrong_token".to_string())],
                    admin_auth::WRONG.load(Relaxed),
                ),
                (
                    vec![("reason", "throttled".to_string())],
                    admin_auth::THROTTLED.load(Relaxed),
                ),
            ],
        )?;
        counter(
            &mut enc,
            "weir_admin_auth_sources_evicted",
            "Sources of wrong admin tokens forgotten early because the most the admin listener remembers were there.",
            &[(vec![], admin_auth::EVICTED.load(Relaxed))],
        )?;
        tls(&mut enc, &snap)?;
        let goaways: Vec<(Labels, u64)> = weir_codec::h2::goaways::counts()
            .into_iter()
            .map(|(reason, n)| (vec![("reason", reason.to_string())], n))
            .collect();
        counter(
            &mut enc,
            "weir_http2_goaway",
            "HTTP/2 connections weir closed with GOAWAY because the client broke or abused the protocol, by reason (rapid_reset: more streams reset per second than allowed; continuation_flood: a header block past any allowed size; control_flood: SETTINGS or PING faster than their answers are read; stream_errors: too many streams reset for the client's errors; protocol_error: any other breach).",
            &goaways,
        )?;
        let dropped = weir_http::accesslog::DROPPED.load(Relaxed);
        counter(
            &mut enc,
            "weir_access_log_dropped",
            "Access log lines dropped because a writer fell behind.",
            &[(vec![], dropped)],
        )?;
        Ok(())
    }
}

/// The TLS listeners' handshakes, certificate reloads and certificate expiry; pools' TLS
/// file reloads.
fn tls(enc: &mut DescriptorEncoder, snap: &Snapshot) -> Result<(), std::fmt::Error> {
    let servers: Vec<_> = snap
        .listeners
        .iter()
        .flatten()
        .filter_map(|l| l.tls.as_ref())
        .collect();
    let mut handshakes = Vec::new();
    let mut reloads = Vec::new();
    let mut expiry = Vec::new();
    for s in &servers {
        let name = s.listener.to_string();
        for (v, o, n) in s.metrics.handshakes() {
            handshakes.push((
                vec![
                    ("listener", name.clone()),
                    ("version", v.as_str().to_string()),
                    ("result", o.as_str().to_string()),
                ],
                n,
            ));
        }
        for (result, n) in [
            ("ok", s.metrics.reloads_ok.load(Relaxed)),
            ("failed", s.metrics.reloads_failed.load(Relaxed)),
        ] {
            reloads.push((
                vec![("listener", name.clone()), ("result", result.to_string())],
                n,
            ));
        }
        let current = s.certs.current();
        for (id, src) in current.identities.iter().zip(s.certs.sources()) {
            // The certificate's first name, else its file.
            let cert = id
                .names
                .first()
                .cloned()
                .unwrap_or_else(|| src.cert.display().to_string());
            expiry.push((
                vec![("listener", name.clone()), ("name", cert)],
                id.not_after,
            ));
        }
    }
    counter(
        enc,
        "weir_tls_handshakes",
        "TLS handshakes on listeners, by listener, negotiated version (empty when none was) and result.",
        &handshakes,
    )?;
    counter(
        enc,
        "weir_tls_certificate_reloads",
        "Certificate files read again after they changed, by result (failed: the previous pair stays in use).",
        &reloads,
    )?;
    gauge(
        enc,
        "weir_tls_certificate_expiry_timestamp_seconds",
        "When each certificate served now expires (Unix time), by listener and the certificate's first name.",
        &expiry,
    )?;
    let mut pools: Vec<_> = snap.pools.values().filter(|p| p.tls.is_some()).collect();
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    let mut upstream = Vec::new();
    for p in pools {
        let Some(t) = &p.tls else { continue };
        for (result, n) in [
            ("ok", t.reloads_ok.load(Relaxed)),
            ("failed", t.reloads_failed.load(Relaxed)),
        ] {
            upstream.push((
                vec![("pool", p.name.to_string()), ("result", result.to_string())],
                n,
            ));
        }
    }
    counter(
        enc,
        "weir_upstream_tls_reloads",
        "A pool's TLS files (CA, certificate, key) read again after they changed, by result (failed: the settings before stay in use).",
        &upstream,
    )
}
