//! Sending a request upstream, with the retries docs/DESIGN.md §4 allows:
//!
//! - a try that provably never reached the application is retried for any
//!   method, on a fresh connection, preferably to another endpoint: the
//!   connect failed, or the backend reset the connection before any response
//!   byte (it closed with the request unread; see
//!   `codec::h1::client::SendError::may_have_been_processed`). A backend's
//!   idle close met by the request (a pooled connection closed before or as
//!   it went out) is no failed try: the exchange sends it on a new
//!   connection itself (`upstream/exchange.rs`), a few times at most;
//! - a timeout, a clean close after the request was written (the backend
//!   may have acted on it and died before answering), any failure after a
//!   response byte arrived (a malformed head too), or an answer listed in
//!   `on_status` (or a trailers-only gRPC status in `on_grpc_status`) is
//!   retried only for idempotent methods or requests carrying
//!   `Idempotency-Key`;
//! - nothing is retried once response bytes went to the client (tries end
//!   before the response is handed back), nor a body too large to replay
//!   once a byte of it went out (one given back unsent, after a refused
//!   connect, goes to the next try);
//! - the pool's retry budget has the last word; when retries run out, the
//!   client gets the last real upstream answer.
//!
//! A request asking for an upgrade (`http/upgrade.rs`; it alone still
//! carries `Upgrade` here) goes on a fresh connection and is tried again
//! only when that connection could not be opened: once written, the backend
//! may have switched, and the switch cannot be replayed.
//!
//! A failed try is one [`TryError`]; these rules read it (its `delivery`,
//! and for an upgrade its cause) and nothing else about how the try failed.

use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::request::Parts;
use http::{Method, Response};

use crate::http::sticky::set_sticky;
use weir_codec::added::Added;
use weir_codec::send::{HeadTimer, Payload};
use weir_http::body::{PoolReturn, ProxyBody};
use weir_http::headers::strip_hop_by_hop;
use weir_metrics::reason::Reason;
use weir_upstream::balance::PickKey;
use weir_upstream::capacity::{self, Granted};
use weir_upstream::error::{Cause, Deadline, Limit, Side, TryError};
use weir_upstream::health::Loss;
use weir_upstream::keep_alive::idle_allowance;
use weir_upstream::pool::PoolRt;
use weir_upstream::upbody::{Prepared, UpBody};
use weir_upstream::{exchange, Exchange, Exchanged};

/// An upstream answer to one try, with its slot, and whether its status
/// is one the pool retries (`on_status`).
struct Answer(Response<ProxyBody>, Granted, bool);

/// What the tries did, for the access log.
#[derive(Debug, Default, Clone, Copy)]
pub struct TryInfo {
    pub queued: Duration,
    /// Time spent opening the last try's connection (zero when reused).
    pub connect: Duration,
    /// When the response head arrived.
    pub first_byte: Option<Instant>,
    pub retries: u32,
}

/// A request ready to be tried, and what the tries need to know about it.
pub struct Attempts<'a> {
    pub pool: &'a Arc<PoolRt>,
    pub key: PickKey,
    pub parts: Parts,
    /// The forwarding fields weir adds beside `parts`' map (`codec::added`).
    pub added: Added<'a>,
    pub body: Prepared,
    /// The request's own deadline (a gRPC call's `grpc-timeout`, a filter's sub-request
    /// `timeout`): it caps the pool's `request_timeout` and queue wait.
    pub deadline: Option<Deadline>,
    /// A `send_proxy` pool: the PROXY header for this request's client, written at the
    /// start of the fresh connection each try opens (one client's header on a connection
    /// means that connection carries nothing else: never pooled, never shared).
    pub proxy_header: Option<Vec<u8>>,
}

/// How the tries ended: a response to send, or an error to generate;
/// either way with what the tries did, for the access log.
#[allow(clippy::large_enum_variant)] // the response is the common case
pub enum Ended {
    Response {
        resp: Response<ProxyBody>,
        /// The index of the endpoint that answered.
        endpoint: usize,
        info: TryInfo,
    },
    Failed {
        /// The last try's failure.
        error: TryError,
        endpoint: Option<(Arc<str>, usize)>,
        info: TryInfo,
    },
}

impl Ended {
    /// The reason a failure is counted and logged under: after retries,
    /// `retries_exhausted`.
    pub fn reason(error: &TryError, info: &TryInfo) -> Reason {
        match info.retries {
            0 => error.reason,
            _ => Reason::RetriesExhausted,
        }
    }
}

fn idempotent(parts: &Parts) -> bool {
    matches!(
        parts.method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) || parts.headers.contains_key(IDEMPOTENCY_KEY)
}

// Made once: a lookup by `&str` parses the name first, for every POST.
const IDEMPOTENCY_KEY: http::HeaderName = http::HeaderName::from_static("idempotency-key");

// The response is built once, where it is returned: wrapping `Ended` in
// another struct cost a copy of it per request (~90 instructions, callgrind).
//
// Taken apart before the future is made: an `async fn` would keep `a` whole in its state
// beside the parts taken from it (see `http/forward`), ~460 bytes per request in flight.
pub fn run(a: Attempts<'_>) -> impl Future<Output = Ended> + '_ {
    let Attempts {
        pool,
        mut key,
        parts,
        added,
        body,
        deadline,
        proxy_header,
    } = a;
    async move {
        let mut info = TryInfo::default();
        let policy = &pool.retry;
        pool.shared.budget.deposit(policy.budget_percent);
        let upgrade = parts.headers.contains_key(http::header::UPGRADE);
        let idempotent = idempotent(&parts) && !upgrade;
        let (mut replay, mut once) = match body {
            Prepared::Replayable(b) => (Some(b), None),
            Prepared::Once(b) => (None, Some(b)),
        };
        let mut tries = 0u32;
        // `request_timeout`: from the first try's start, across every try.
        let mut total: Option<(Instant, Limit)> = None;
        let limit = pool.retry.per_try_timeout.unwrap_or(pool.response_timeout);
        let mut last_answer: Option<(Response<ProxyBody>, usize)> = None;
        let mut last_failure: (TryError, Option<(Arc<str>, usize)>) =
            (TryError::no_slot(Reason::NoHealthyEndpoint), None);
        // A pooled connection could be found dead only after the upgrade was
        // written, which may not be retried.
        let mut fresh_only = upgrade || proxy_header.is_some();
        loop {
            let granted = match capacity::acquire(pool, &key, deadline.map(|d| d.at)).await {
                Ok(g) => g,
                Err(reason) if tries == 0 => {
                    let mut error = TryError::no_slot(reason);
                    // The request's own deadline, not the pool's queue_timeout, ended the wait.
                    if let Some(d) = deadline.filter(|d| d.at <= Instant::now()) {
                        error.cause = Cause::NoSlot {
                            cut_by: Some(d.limit),
                        };
                    }
                    return Ended::Failed {
                        error,
                        endpoint: None,
                        info,
                    };
                }
                // A retry found no slot: the last answer or failure stands.
                Err(_) => break,
            };
            // Clock reads cost ~27 ns each here and a request once made ten of
            // them: a reused connection's exchange reads it twice (start, answer).
            let started = Instant::now();
            let (until, cap_of) = *total.get_or_insert_with(|| {
                let t = started + pool.request_timeout;
                match deadline {
                    Some(d) if d.at < t => (d.at, d.limit),
                    _ => (t, Limit::request_timeout(pool.request_timeout)),
                }
            });
            let ep = granted.slot.endpoint.clone();
            let index = granted.slot.index;
            info.queued += granted.queued;
            // A body streamed without waiting keeps a copy while it is small (`Tee`).
            let tee = once.as_ref().and_then(UpBody::tee);
            let body = match (&replay, once.take()) {
                (Some(b), _) => {
                    ep.metrics.bytes_in.fetch_add(b.len() as u64, Relaxed);
                    Payload::Bytes(b.clone())
                }
                (None, Some(b)) => Payload::Stream(b.counting(ep.metrics.bytes_in.clone())),
                (None, None) => break,
            };
            // A streamed body is sent once: its wait counts only once it is out.
            let timer = match &body {
                Payload::Bytes(_) => HeadTimer {
                    started,
                    limit,
                    cap: Some(until),
                },
                Payload::Stream(_) => HeadTimer {
                    started,
                    limit: limit.min(pool.request_timeout),
                    cap: deadline.map(|d| d.at),
                },
            };
            let mut unsent = None;
            let outcome = try_once(
                pool,
                granted,
                &parts,
                &added,
                body,
                fresh_only,
                proxy_header.as_deref(),
                timer,
                cap_of,
                key.sticky,
                &mut info,
                &mut unsent,
            )
            .await;
            // A streamed body not a byte of which went out can go to the next try; one
            // whose copy has it whole is replayable, should a retry need it.
            let may_retry = match &outcome {
                Ok(Answer(_, _, retry_status)) => *retry_status,
                Err(_) => true,
            };
            if let Some(Payload::Stream(b)) = unsent {
                once = Some(b);
            } else if let Some(whole) = tee.filter(|_| may_retry).and_then(|t| t.replay()) {
                replay = Some(whole);
            }
            let mut free = false;
            let retried_for;
            let retry = match outcome {
                Ok(Answer(resp, granted, retry_status)) => {
                    // A success is recorded when the body ends cleanly
                    // (`http/body.rs`), since it may still be cut short.
                    let status = resp.status().as_u16();
                    if pool.health.eject_status.contains(&status) {
                        pool.record_failure(&ep, "ejecting status", Loss::Nothing);
                    }
                    if !(retry_status && idempotent && replay.is_some()) {
                        return Ended::Response {
                            resp: attach(resp, granted),
                            endpoint: index,
                            info,
                        };
                    }
                    // Keep the answer for the client, but free its slot now so
                    // the retry can use it.
                    drop(granted);
                    last_answer = Some((resp, index));
                    retried_for = "retry_status";
                    true
                }
                Err(error) => {
                    let reason = error.reason;
                    // A request body the client broke off says nothing about the endpoint; a
                    // timeout says it is slow, not that it failed.
                    let upstream = error.side == Side::Upstream;
                    if upstream && reason != Reason::UpstreamTimeout {
                        let loss = match reason == Reason::UpstreamReset && !error.not_delivered() {
                            true => Loss::InFlight,
                            false => Loss::Nothing,
                        };
                        pool.record_failure(&ep, reason.as_str(), loss);
                    }
                    if upstream {
                        ep.metrics.error(reason);
                    }
                    retried_for = reason.as_str();
                    // A body to send again: the replay copy, or the streamed one given back.
                    let resendable = replay.is_some() || once.is_some();
                    let retry = match error.not_delivered() {
                        true if upgrade => {
                            free = true;
                            resendable && matches!(error.cause, Cause::Connect(_))
                        }
                        // The application never saw it: any method may go again.
                        true => {
                            free = true;
                            resendable
                        }
                        false => idempotent && replay.is_some(),
                    };
                    last_failure = (error, Some((ep.addr_str.clone(), index)));
                    retry
                }
            };
            // The budget guards backends against retry storms; a try that never
            // reached the application (refused, stale keep-alive) cost them
            // nothing, so retrying it is not charged.
            if !retry
            || tries >= policy.attempts
            // No time left for another try: the last failure stands.
            || total.is_some_and(|(t, _)| Instant::now() >= t)
            || !(free || pool.shared.budget.withdraw(policy.budget_min_per_sec))
            {
                break;
            }
            tries += 1;
            info.retries = tries;
            fresh_only = true;
            pool.shared.metrics.retried(retried_for);
            // Prefer another endpoint, even one marked down (see
            // `PoolRt::health_filter`), over the one that just failed.
            let index = pool.endpoints.iter().position(|e| Arc::ptr_eq(e, &ep));
            if let Some(i) = index {
                if (0..pool.endpoints.len()).any(|j| j != i && !key.avoids(j)) {
                    key.avoid(i);
                }
            }
            tracing::debug!(
                pool = &*pool.name,
                endpoint = &*ep.addr_str,
                try_ = tries,
                "retrying"
            );
        }
        if let Some((resp, index)) = last_answer {
            return Ended::Response {
                resp,
                endpoint: index,
                info,
            };
        }
        let (error, endpoint) = last_failure;
        Ended::Failed {
            error,
            endpoint,
            info,
        }
    }
}

fn attach(mut resp: Response<ProxyBody>, granted: Granted) -> Response<ProxyBody> {
    resp.body_mut().set_slot(granted.slot);
    resp
}

// Each argument is one fact the try needs; a struct would only rename them.
#[allow(clippy::too_many_arguments)]
async fn try_once(
    pool: &Arc<PoolRt>,
    granted: Granted,
    parts: &Parts,
    added: &Added<'_>,
    body: Payload<UpBody>,
    fresh_only: bool,
    proxy_header: Option<&[u8]>,
    timer: HeadTimer,
    cap_of: Limit,
    sticky_from: Option<u64>,
    info: &mut TryInfo,
    unsent: &mut Option<Payload<UpBody>>,
) -> Result<Answer, TryError> {
    // Borrowed from the slot the try holds throughout: a clone and its drop are two
    // locked operations on the endpoint's count, per request.
    let ep = &granted.slot.endpoint;
    let x = Exchange {
        endpoint: ep,
        parts,
        added,
        connect_timeout: pool.connect_timeout,
        tls: pool.tls.as_deref(),
        cap_of,
        fresh_only,
        proxy_header,
        protocol: pool.protocol,
        max_streams: pool.max_streams_per_conn,
        idle_timeout: pool.idle_timeout,
        ping: pool.ping.as_ref(),
        max_age: pool.max_conn_age,
        max_uses: pool.max_requests_per_conn,
    };
    let Exchanged {
        resp,
        born,
        uses,
        sent_at,
    } = exchange(x, body, timer, &mut info.connect, unsent).await?;
    let answered = Instant::now();
    info.first_byte = Some(answered);
    let took = answered.saturating_duration_since(sent_at);
    // Only the ewma balancer reads it; its two exp() are not free.
    if pool.algorithm.uses_latency() {
        ep.ewma.observe(took);
    }
    ep.metrics.requests.fetch_add(1, Relaxed);
    ep.metrics.upstream.observe(took);
    ep.metrics.recent.observe(took);
    let (mut parts, body) = resp.into_parts();
    let idle = idle_allowance(&parts.headers, pool.idle_timeout);
    // A switch's `Upgrade` goes to the client with the 101; nothing else
    // hop-by-hop does.
    let switched = body
        .is_upgraded()
        .then(|| parts.headers.get(http::header::UPGRADE).cloned())
        .flatten();
    strip_hop_by_hop(&mut parts.headers);
    if let Some(u) = switched {
        crate::http::upgrade::keep(&mut parts.headers, u);
    }
    let retry_status = pool.retry.on_status.contains(&parts.status.as_u16())
        || (!pool.retry.on_grpc_status.is_empty()
            && weir_http::grpc::head_status(&parts.headers)
                .is_some_and(|c| pool.retry.on_grpc_status.contains(&c)));
    let success = !pool.health.eject_status.contains(&parts.status.as_u16());
    let ret = PoolReturn {
        success,
        pool: pool.clone(),
        endpoint: ep.clone(),
        born,
        uses,
        idle,
        max_age: pool.max_conn_age,
        // One client's PROXY header went out on it: it goes back to no pool.
        max_uses: match proxy_header {
            Some(_) => 1,
            None => pool.max_requests_per_conn,
        },
    };
    let mut resp = Response::from_parts(parts, ProxyBody::upstream(body, Some(ret)));
    set_sticky(pool, sticky_from, resp.headers_mut(), ep.id);
    Ok(Answer(resp, granted, retry_status))
}
