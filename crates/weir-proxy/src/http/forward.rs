//! One HTTP request: check it, route it, rewrite its headers, work out what
//! the balancer needs from it, then hand it to `tries` and turn the outcome
//! into the response (or an error with its reason).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http::header::{self, HeaderValue};
use http::{Request, Response, Uri, Version};
use tracing::warn;
use weir_config::HashKey;

use crate::accesslog::{Entry, Sink};
use crate::balance::{hash_bytes, Algorithm, PickKey};
use crate::endpoint::EndpointRt;
use crate::error::TryError;
use crate::http::body::ProxyBody;
use crate::http::client_body::ClientBody;
use crate::http::conn_state::ConnState;
use crate::http::error::{error_response, error_response_as};
use crate::http::headers::{add_forwarded, strip_hop_by_hop};
use crate::http::tries::{self, Attempts, Ended, TryInfo};
use crate::http::upbody::prepare;
use crate::metrics::counts::Counts;
use crate::metrics::hist::Histogram;
use crate::metrics::recorder::Recorder;
use crate::pool::PoolRt;
use crate::reason::Reason;
use crate::router::TargetMetrics;
use crate::snapshot::ListenerSnap;
use crate::Shared;

/// What a client connection's requests share.
pub struct ConnCtx {
    pub shared: Arc<Shared>,
    pub slot: usize,
    pub client: SocketAddr,
    /// `client`'s IP as a header value, for X-Forwarded-For.
    pub client_ip: HeaderValue,
    pub state: Arc<ConnState>,
}

/// Names for the log line of a failed request.
struct Where<'a> {
    listener: &'a str,
    route: Option<&'a str>,
    pool: &'a str,
    endpoint: Option<&'a str>,
}

fn fail(reason: Reason, w: &Where<'_>, detail: &dyn std::fmt::Display) -> Response<ProxyBody> {
    fail_as(reason.status(), reason, w, detail)
}

fn fail_as(
    status: u16,
    reason: Reason,
    w: &Where<'_>,
    detail: &dyn std::fmt::Display,
) -> Response<ProxyBody> {
    warn!(
        listener = w.listener,
        route = w.route.unwrap_or("-"),
        pool = w.pool,
        endpoint = w.endpoint.unwrap_or("-"),
        reason = reason.as_str(),
        status,
        "request failed: {detail}"
    );
    error_response_as(status, reason)
}

pub async fn handle(ctx: &ConnCtx, req: Request<ClientBody>) -> Response<ProxyBody> {
    let start = Instant::now();
    let busy = ctx.state.begin_request();
    let mut counted = None;
    let mut log = None;
    let mut resp = route_and_forward(ctx, req, start, &mut counted, &mut log).await;
    if let Some((counts, duration, reason)) = counted {
        let status = resp.status().as_u16();
        let access = log.map(|(sink, mut entry): (Sink, Box<Entry>)| {
            entry.status = status;
            entry.reason = reason.map(Reason::as_str);
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
        };
        resp.body_mut().set_recorder(rec);
    }
    resp.body_mut().set_busy(busy);
    resp
}

/// A request the server refused before it could be routed (bad framing,
/// oversize head): counted, logged and access-logged like any failure, with
/// the listener's "no route" labels since it has no route.
pub fn refused(ctx: &ConnCtx, status: u16, why: &dyn std::fmt::Display) {
    let snap = ctx.shared.snapshot.load();
    let Some(Some(l)) = snap.listeners.get(ctx.slot) else {
        return;
    };
    let reason = Reason::BadRequest;
    warn!(
        listener = &*l.name,
        client = %ctx.client,
        reason = reason.as_str(),
        status,
        "request refused: {why}"
    );
    l.no_route.no_endpoint.record(status, Some(reason));
    l.no_route.duration.observe(std::time::Duration::ZERO);
    if let Some(sink) = &l.access_log {
        let mut e = Entry::begin(l.name.clone(), ctx.client);
        e.status = status;
        e.reason = Some(reason.as_str());
        sink.log(e);
    }
}

/// The access log entry as far as it is known before the response.
type Log = Option<(Sink, Box<Entry>)>;

fn start_entry(l: &ListenerSnap, ctx: &ConnCtx, req: &Request<ClientBody>) -> Log {
    let sink = l.access_log.clone()?;
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("")
        .to_string();
    let mut entry = Entry::begin(l.name.clone(), ctx.client);
    entry.method = req.method().to_string();
    entry.host = host;
    entry.path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    Some((sink, Box::new(entry)))
}

/// Where a request is counted: its label set, its duration histogram, and
/// the reason when weir generated the answer.
type Counted = Option<(Arc<Counts>, Arc<Histogram>, Option<Reason>)>;

fn count_as(
    counted: &mut Counted,
    m: &TargetMetrics,
    endpoint: Option<usize>,
    reason: Option<Reason>,
) {
    let counts = endpoint
        .and_then(|i| m.by_endpoint.get(i))
        .unwrap_or(&m.no_endpoint)
        .clone();
    *counted = Some((counts, m.duration.clone(), reason));
}

async fn route_and_forward(
    ctx: &ConnCtx,
    mut req: Request<ClientBody>,
    start: Instant,
    counted: &mut Counted,
    log: &mut Log,
) -> Response<ProxyBody> {
    // One look at the snapshot per request; the guard is gone before any await.
    let (listener, host_hdr, route, pool, metrics) = {
        let snap = ctx.shared.snapshot.load();
        let Some(Some(l)) = snap.listeners.get(ctx.slot) else {
            return error_response(Reason::RouteNotFound);
        };
        *log = start_entry(l, ctx, &req);
        // RFC 9112 §3.2: an HTTP/1.1 request must carry exactly one Host.
        let mut hosts = req.headers().get_all(header::HOST).iter();
        let host_hdr = hosts.next().cloned();
        if hosts.next().is_some() || (host_hdr.is_none() && req.version() == Version::HTTP_11) {
            count_as(counted, &l.no_route, None, Some(Reason::BadRequest));
            return error_response(Reason::BadRequest);
        }
        // An absolute-form target's authority overrides Host (RFC 9112 §3.2.2).
        let host_hdr = match req.uri().authority() {
            Some(a) => HeaderValue::from_str(a.as_str()).ok(),
            None => host_hdr,
        };
        let host = host_hdr.as_ref().and_then(|v| v.to_str().ok());
        match l.routes.lookup(host, req.uri().path()) {
            Some(t) => (
                l.name.clone(),
                host_hdr.clone(),
                t.route.clone(),
                t.pool.clone(),
                t.metrics.clone(),
            ),
            None => {
                let w = Where {
                    listener: &l.name,
                    route: None,
                    pool: "-",
                    endpoint: None,
                };
                let detail = format!("no route for host {host:?} path {:?}", req.uri().path());
                count_as(counted, &l.no_route, None, Some(Reason::RouteNotFound));
                return fail(Reason::RouteNotFound, &w, &detail);
            }
        }
    };

    // Rewrite the request for the upstream hop.
    if req.uri().authority().is_some() {
        let pq = req.uri().path_and_query().map_or("/", |p| p.as_str());
        *req.uri_mut() = Uri::try_from(pq).unwrap_or_else(|_| Uri::from_static("/"));
    }
    let h = req.headers_mut();
    strip_hop_by_hop(h);
    // weir answers `Expect: 100-continue` itself (`codec::h1::server` sends 100
    // when the body is first read, i.e. once the upstream is connected).
    h.remove(header::EXPECT);
    add_forwarded(h, &ctx.client_ip, host_hdr.as_ref());
    if let Some(v) = host_hdr {
        h.insert(header::HOST, v);
    }
    *req.version_mut() = Version::HTTP_11;

    let key = pick_key(&pool, &req, ctx.client);
    let w = Where {
        listener: &listener,
        route: route.as_deref(),
        pool: &pool.name,
        endpoint: None,
    };
    let (parts, body) = req.into_parts();
    let body = match prepare(body, pool.retry.buffer).await {
        Ok(b) => b,
        Err(e) => {
            // A body that breaks its framing (a bad chunk size) is the
            // client's mistake: 400; one that stops short, a client gone.
            let reason = match e.is_malformed() {
                true => Reason::BadRequest,
                false => Reason::ClientClosed,
            };
            count_as(counted, &metrics, None, Some(reason));
            return fail(reason, &w, &format!("reading the request body: {e}"));
        }
    };
    let sticky_from = key.sticky;
    let decorate = |resp: &mut Response<ProxyBody>, ep: &EndpointRt| {
        if let Some(codec) = pool.algorithm.sticky_codec() {
            if sticky_from != Some(ep.id) {
                set_sticky(
                    resp.headers_mut(),
                    &pool.sticky_cookie,
                    &codec.encode(ep.id),
                );
            }
        }
    };
    if let Some((_, e)) = log.as_mut() {
        e.route = route.as_deref().unwrap_or("").to_string();
        e.pool = pool.name.to_string();
    }
    let mut info = TryInfo::default();
    let attempts = Attempts {
        pool: &pool,
        key,
        parts,
        body,
        decorate: &decorate,
        info: &mut info,
    };
    let ended = tries::run(attempts).await;
    if let Some((_, e)) = log.as_mut() {
        e.queue_ms = info.queued.as_secs_f64() * 1000.0;
        e.connect_ms = info.connect.as_secs_f64() * 1000.0;
        e.first_byte_ms = info.first_byte.map_or(0.0, |t| {
            t.saturating_duration_since(start).as_secs_f64() * 1000.0
        });
        e.retries = info.retries;
        let index = match &ended {
            Ended::Response(_, i) => Some(*i),
            Ended::Failed { endpoint, .. } => endpoint.as_ref().map(|e| e.1),
        };
        if let Some(ep) = index.and_then(|i| pool.endpoints.get(i)) {
            e.endpoint = ep.addr_str.to_string();
        }
    }
    match ended {
        Ended::Response(resp, index) => {
            count_as(counted, &metrics, Some(index), None);
            resp
        }
        Ended::Failed {
            error,
            retries,
            endpoint,
        } => {
            let reason = Ended::reason(&error, retries);
            count_as(
                counted,
                &metrics,
                endpoint.as_ref().map(|e| e.1),
                Some(reason),
            );
            let w = Where {
                endpoint: endpoint.as_ref().map(|e| &*e.0),
                ..w
            };
            match reason {
                Reason::QueueFull | Reason::QueueTimeout | Reason::NoHealthyEndpoint => {
                    overflow(&pool, reason, &w)
                }
                // After retries the reason is `retries_exhausted`, but a
                // last try that timed out still answers 504.
                _ => fail_as(error.reason.status(), reason, &w, &Detail(&error, retries)),
            }
        }
    }
}

/// A failed request's log detail, rendered only when logged.
struct Detail<'a>(&'a TryError, u32);

impl std::fmt::Display for Detail<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            0 => self.0.fmt(f),
            n => write!(f, "{n} retries; last: {}", self.0),
        }
    }
}

/// What the pool's algorithm needs from the request: a hash of the
/// configured key, or the endpoint a sticky cookie names.
fn pick_key(pool: &PoolRt, req: &Request<ClientBody>, client: SocketAddr) -> PickKey {
    let mut key = PickKey::default();
    let (hashes, codec) = match &pool.algorithm {
        Algorithm::Hash { .. } => (true, None),
        Algorithm::Sticky { codec, base } => {
            (matches!(**base, Algorithm::Hash { .. }), Some(codec))
        }
        _ => return key,
    };
    if hashes {
        key.hash = match &pool.hash_key {
            HashKey::ClientIp => Some(ip_hash(client.ip())),
            HashKey::Path => Some(hash_bytes(req.uri().path().as_bytes())),
            HashKey::Header(h) => req
                .headers()
                .get(h.as_str())
                .map(|v| hash_bytes(v.as_bytes())),
            HashKey::Cookie(c) => cookie(req.headers(), c).map(|v| hash_bytes(v.as_bytes())),
        };
    }
    if let Some(codec) = codec {
        key.sticky = cookie(req.headers(), &pool.sticky_cookie).and_then(|v| codec.decode(v));
    }
    key
}

pub fn ip_hash(ip: std::net::IpAddr) -> u64 {
    match ip {
        std::net::IpAddr::V4(v4) => hash_bytes(&v4.octets()),
        std::net::IpAddr::V6(v6) => hash_bytes(&v6.octets()),
    }
}

/// The value of cookie `name` in the request's Cookie headers.
fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"'))
}

/// The answer when no slot could be had: the pool's overflow status with
/// `Retry-After`, so clients and autoscalers can back off.
fn overflow(pool: &PoolRt, reason: Reason, w: &Where<'_>) -> Response<ProxyBody> {
    let detail = match reason {
        Reason::QueueFull => format!("queue of {} is full", pool.max_queue),
        Reason::QueueTimeout => format!("no free slot within {:?}", pool.queue_timeout),
        _ => "the pool has no endpoints".to_string(),
    };
    let mut resp = fail(reason, w, &detail);
    if matches!(reason, Reason::QueueFull | Reason::QueueTimeout) {
        *resp.status_mut() = http::StatusCode::from_u16(pool.overflow_status)
            .unwrap_or(http::StatusCode::SERVICE_UNAVAILABLE);
        let secs = pool.queue_timeout.as_secs_f64().ceil().max(1.0) as u64;
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

fn set_sticky(h: &mut http::HeaderMap, name: &str, value: &str) {
    let c = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
    if let Ok(v) = HeaderValue::from_str(&c) {
        h.append(header::SET_COOKIE, v);
    }
}
