//! What the request counts (`counts.rs`) say about failures, per listener, route, pool and
//! endpoint: every answer weir made itself is an error under its reason (but the
//! redirects and allowed CORS preflights a route asked for), and so is every 5xx an
//! upstream answered (`upstream_5xx`); and the answers by status class. Read at scrape
//! and sampling time, never on the request path.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;

use weir_http::counts::Counts;
use weir_metrics::reason::Reason;
use weir_pipeline::snapshot::Snapshot;

/// The error reason of upstream answers with a 5xx status.
pub const UPSTREAM_5XX: &str = "upstream_5xx";

/// The reason requests answered `code` (for `reason`, when weir answered) count under as
/// errors, or `None` when they did not fail.
pub fn error_of(code: u16, reason: Option<Reason>) -> Option<&'static str> {
    match reason {
        Some(r) => r.is_failure().then(|| r.as_str()),
        None => (code >= 500).then_some(UPSTREAM_5XX),
    }
}

/// Answers by status class, whoever made them; TCP sessions have no status and are left out.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Statuses {
    #[serde(rename = "1xx")]
    pub informational: u64,
    #[serde(rename = "2xx")]
    pub success: u64,
    #[serde(rename = "3xx")]
    pub redirection: u64,
    #[serde(rename = "4xx")]
    pub client_error: u64,
    #[serde(rename = "5xx")]
    pub server_error: u64,
}

impl Statuses {
    fn add(&mut self, code: u16, n: u64) {
        let class = match code {
            100..=199 => &mut self.informational,
            200..=299 => &mut self.success,
            300..=399 => &mut self.redirection,
            400..=499 => &mut self.client_error,
            500..=599 => &mut self.server_error,
            _ => return,
        };
        *class += n;
    }

    fn merge(&mut self, o: &Statuses) {
        self.informational += o.informational;
        self.success += o.success;
        self.redirection += o.redirection;
        self.client_error += o.client_error;
        self.server_error += o.server_error;
    }
}

/// Requests (and TCP sessions), errors by reason, statuses by class and gRPC calls by
/// status over some label sets, since start.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub requests: u64,
    pub errors: BTreeMap<&'static str, u64>,
    pub statuses: Statuses,
    pub grpc: BTreeMap<&'static str, u64>,
}

impl Tally {
    pub fn of(c: &Counts) -> Tally {
        let mut t = Tally::default();
        c.each_outcome(|code, reason, n| {
            t.requests += n;
            t.statuses.add(code, n);
            if let Some(e) = error_of(code, reason) {
                *t.errors.entry(e).or_default() += n;
            }
        });
        c.each_grpc(|code, n| *t.grpc.entry(code).or_default() += n);
        t
    }

    pub fn merge(&mut self, o: &Tally) {
        self.requests += o.requests;
        self.statuses.merge(&o.statuses);
        for (k, n) in &o.errors {
            *self.errors.entry(k).or_default() += n;
        }
        for (k, n) in &o.grpc {
            *self.grpc.entry(k).or_default() += n;
        }
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// The tallies of a snapshot's request counts by listener, by (listener, route), by pool
/// and by (pool, endpoint address).
#[derive(Debug, Default)]
pub struct Tallies {
    pub listeners: HashMap<Arc<str>, Tally>,
    pub routes: HashMap<(Arc<str>, Arc<str>), Tally>,
    pub pools: HashMap<Arc<str>, Tally>,
    pub endpoints: HashMap<(Arc<str>, Arc<str>), Tally>,
}

impl Tallies {
    pub fn of(snap: &Snapshot) -> Tallies {
        let mut out = Tallies::default();
        for c in snap.all_counts() {
            let t = Tally::of(&c);
            let l = &c.labels;
            out.listeners
                .entry(l.listener.clone())
                .or_default()
                .merge(&t);
            if !l.route.is_empty() {
                out.routes
                    .entry((l.listener.clone(), l.route.clone()))
                    .or_default()
                    .merge(&t);
            }
            if !l.pool.is_empty() {
                out.pools.entry(l.pool.clone()).or_default().merge(&t);
                if !l.endpoint.is_empty() {
                    out.endpoints
                        .entry((l.pool.clone(), l.endpoint.clone()))
                        .or_default()
                        .merge(&t);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir_http::counts::Labels;

    #[test]
    fn weirs_own_answers_and_upstream_5xx_are_errors() {
        let c = Counts::new(Labels {
            listener: "web".into(),
            route: "".into(),
            pool: "app".into(),
            endpoint: "".into(),
        });
        c.record(200, None);
        c.record(200, None);
        c.record(404, None);
        c.record(500, None);
        c.record(503, None);
        c.record(503, Some(Reason::NoHealthyEndpoint));
        c.record(404, Some(Reason::RouteNotFound));
        c.record(504, Some(Reason::UpstreamTimeout));
        c.record(308, Some(Reason::HttpsRedirect));
        c.record(204, Some(Reason::CorsPreflight));
        c.record(200, Some(Reason::UpstreamReset));
        let t = Tally::of(&c);
        assert_eq!(t.requests, 11);
        let errors: Vec<_> = t.errors.iter().map(|(&k, &n)| (k, n)).collect();
        assert_eq!(
            errors,
            [
                ("no_healthy_endpoint", 1),
                ("route_not_found", 1),
                ("upstream_5xx", 2),
                ("upstream_reset", 1),
                ("upstream_timeout", 1),
            ]
        );
        assert_eq!(t.errors_total(), 6);
        assert_eq!(
            t.statuses,
            Statuses {
                informational: 0,
                success: 4,
                redirection: 1,
                client_error: 2,
                server_error: 4,
            }
        );
    }

    #[test]
    fn refused_tcp_sessions_are_errors_without_a_status() {
        let c = Counts::new(Labels {
            listener: "db".into(),
            route: "".into(),
            pool: "db".into(),
            endpoint: "".into(),
        });
        c.record_session(None);
        c.record_session(Some(Reason::NoHealthyEndpoint));
        let t = Tally::of(&c);
        assert_eq!(t.requests, 2);
        assert_eq!(t.errors.get("no_healthy_endpoint"), Some(&1));
        assert_eq!(t.statuses, Statuses::default());
    }
}
