//! Where a request is counted (its label set, its duration histogram, the
//! reason when weir answered) and its access log entry, as far as they are
//! known before the response; `attach` hands both to the response body,
//! which records them when it is done (weir-http's `recorder.rs`).

use std::sync::Arc;
use std::time::Instant;

use http::header;
use http::{Request, Response};
use http_body::Body;

use crate::http::conn_ctx::ConnCtx;
use crate::http::tries::TryInfo;
use crate::router::TargetMetrics;
use crate::snapshot::ListenerSnap;
use weir_http::accesslog::{Entry, Sink};
use weir_http::body::ProxyBody;
use weir_http::counts::Counts;
use weir_http::recorder::Recorder;
use weir_metrics::hist::Histogram;
use weir_metrics::reason::Reason;
use weir_upstream::pool::PoolRt;

#[derive(Default)]
pub struct Accounting {
    /// The client behind trusted proxies (weir-http's `client_addr.rs`), when the connection's
    /// peer is one; `None`: the connection's client.
    pub client: Option<std::net::SocketAddr>,
    counted: Option<(Arc<Counts>, Arc<Histogram>, Option<Reason>)>,
    log: Option<(Sink, Box<Entry>)>,
}

impl Accounting {
    /// Counted under `m`'s labels (per endpoint when one answered or
    /// failed), with the reason if weir made the answer.
    pub fn count_as(&mut self, m: &TargetMetrics, endpoint: Option<usize>, reason: Option<Reason>) {
        let counts = endpoint
            .and_then(|i| m.by_endpoint.get(i))
            .unwrap_or(&m.no_endpoint)
            .clone();
        self.counted = Some((counts, m.duration.clone(), reason));
    }

    /// The reason the request is counted under, when weir made the answer.
    pub fn reason(&self) -> Option<Reason> {
        self.counted.as_ref().and_then(|c| c.2)
    }

    /// Starts the access log entry, if the listener keeps one.
    pub fn start_entry<B>(&mut self, l: &ListenerSnap, ctx: &ConnCtx, req: &Request<B>) {
        let Some(sink) = l.access_log.clone() else {
            return;
        };
        let mut entry = Entry::begin(l.name.clone(), self.client.unwrap_or(ctx.conn.client));
        if let Some(tls) = &ctx.conn.tls {
            entry.tls_version = Some(tls.version);
            entry.sni = tls.sni.clone();
        }
        describe(&mut entry, req);
        self.log = Some((sink, Box::new(entry)));
    }

    /// The request was routed to `route` and `pool`.
    pub fn routed(&mut self, route: Option<&str>, pool: &PoolRt) {
        if let Some((_, e)) = self.log.as_mut() {
            e.route = route.unwrap_or("").to_string();
            e.pool = pool.name.to_string();
        }
    }

    /// What the tries did, and the endpoint that answered or failed last.
    pub fn tried(&mut self, info: &TryInfo, start: Instant, pool: &PoolRt, index: Option<usize>) {
        let Some((_, e)) = self.log.as_mut() else {
            return;
        };
        e.queue_ms = info.queued.as_secs_f64() * 1000.0;
        e.connect_ms = info.connect.as_secs_f64() * 1000.0;
        e.first_byte_ms = info.first_byte.map_or(0.0, |t| {
            t.saturating_duration_since(start).as_secs_f64() * 1000.0
        });
        e.retries = info.retries;
        if let Some(ep) = index.and_then(|i| pool.endpoints.get(i)) {
            e.endpoint = ep.addr_str.to_string();
        }
    }

    /// The request's id (a headers filter's `request_id`), for the access log.
    pub fn request_id(&mut self, id: &http::HeaderValue) {
        if let Some((_, e)) = self.log.as_mut() {
            e.request_id = id.to_str().ok().map(str::to_owned);
        }
    }

    /// The user an auth filter let in, for the access log.
    pub fn user(&mut self, user: &str) {
        if let Some((_, e)) = self.log.as_mut() {
            e.user = Some(user.to_owned());
        }
    }

    /// Hands the counts and the entry to the response body, under the
    /// status the client gets (and for a gRPC call, the `grpc-status` of a trailers-only
    /// answer: weir's own, or a backend's that failed the call at once).
    pub fn attach(self, resp: &mut Response<ProxyBody>, start: Instant, grpc: bool) {
        let Some((counts, duration, reason)) = self.counted else {
            return;
        };
        let status = resp.status().as_u16();
        // Only a head that ends the answer can carry the status.
        let grpc = match grpc && resp.body().is_end_stream() {
            true => weir_http::grpc::status_of(resp.headers()),
            false => None,
        };
        let access = self.log.map(|(sink, mut entry)| {
            entry.status = status;
            entry.reason = reason.map(Reason::as_str);
            entry.grpc_status = grpc.flatten();
            (sink, entry)
        });
        let rec = Recorder {
            counts,
            duration,
            start,
            status,
            reason,
            access,
            bytes: 0,
            end: None,
            grpc,
        };
        resp.body_mut().set_recorder(rec);
    }
}

/// The request's method, protocol, host and path in its access log entry.
pub fn describe<B>(entry: &mut Entry, req: &Request<B>) {
    entry.host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("")
        .to_string();
    entry.method = req.method().to_string();
    entry.protocol = match req.version() {
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    };
    entry.path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
}
