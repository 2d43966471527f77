//! One HTTP request through the proxy, in the order it happens; each step
//! is a file of its own:
//!
//! 1. `host.rs`: the request's host (400 `bad_request` without exactly one);
//! 2. `route.rs`: the route and pool, from the snapshot (404 without one), for the path in
//!    normal form (`path.rs`; 400 when it has none);
//! 3. the route's request filters (`weir_filters`), which may change the request
//!    or answer it themselves;
//! 4. `rewrite.rs`: the request as the upstream hop gets it;
//! 5. `keys.rs`: what the balancer needs (hash, sticky cookie; the answer's
//!    sticky cookie is set by the tries, `http/sticky.rs`);
//! 6. the body made replayable if small (`upstream/upbody.rs`), then the tries
//!    (`http/tries.rs`: capacity, balance, upstream sessions, retries);
//! 7. the response, or `fail.rs` (weir's error answer, `Retry-After` on
//!    overflow, the log line); then the response phases of the filters whose
//!    request phase ran, in reverse order;
//!
//! and throughout, `accounting.rs`: the labels the request is counted
//! under and its access log entry, handed to the response body. A gRPC
//! call (weir-http's `grpc.rs`) differs in three places: its `grpc-timeout` caps
//! the tries, its body is not waited for to make it replayable (a
//! streaming call's client may wait for answers first), and weir's own
//! answers to it are said the gRPC way.
//!
//! Filters are steps 3 and 7: `Routed` carries the route's chain (built
//! with the snapshot, so a route without filters pays one emptiness check
//! and takes the path it always took, `proxy`); a request-phase filter may
//! change the request or answer itself (counted like any answer weir makes,
//! with its reason), and a response-phase filter sees the response before
//! it is handed to the server codec (`filtered.rs`).

mod accounting;
mod fail;
mod filtered;
mod host;
mod keys;
mod overflow;
mod path;
mod refused;
mod rewrite;
mod route;
mod sub;
mod tries_failed;

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use http::{Request, Response};

use crate::http::tries::{self, Attempts, Ended};
use crate::router::Target;
use weir_codec::client_body::ClientBody;
use weir_http::body::ProxyBody;
use weir_http::conn_state::ConnState;
use weir_http::error::error_response;
use weir_http::grpc;
use weir_upstream::upbody::prepare;

use accounting::Accounting;
use fail::{fail, Where};
use filtered::Filtered;
use route::Routed;
use tries_failed::tries_failed;

use crate::http::conn_ctx::ConnCtx;
pub use keys::pick_key;
pub use refused::{refused, refused_request};

// `handle`, `forward` and `proxy` are plain functions returning an `async` block, not
// `async fn`s: an `async fn` moves each argument into a local of its state, and a coroutine
// keeps both (the argument, and the local even once moved from) for its whole life. With
// the request (256 bytes) passed down three levels, that was ~1 KiB more in every request's
// future, and a copy of the request at each level (`-Zprint-type-sizes`).
pub fn handle<'a>(
    ctx: &'a Arc<ConnCtx>,
    req: Request<ClientBody>,
) -> impl Future<Output = Response<ProxyBody>> + 'a {
    let start = Instant::now();
    let busy = ConnState::begin_request(ctx.clone());
    let mut acct = Accounting::default();
    // Behind trusted proxies, the client their headers name (the connection's otherwise).
    if let Some(trusted) = &ctx.conn.trusted {
        acct.client = Some(weir_http::client_addr::resolve(
            trusted,
            ctx.conn.client,
            req.headers(),
        ));
    }
    let grpc = grpc::is_grpc(req.headers());
    async move {
        let mut resp = forward(ctx, req, start, grpc, &mut acct).await;
        if grpc && resp.body().is_generated() {
            grpc::own_answer(&mut resp, acct.reason());
        }
        acct.attach(&mut resp, start, grpc);
        resp.body_mut().set_busy(busy);
        resp
    }
}

// Not `async fn` on purpose (see `handle`): the request is held across the filters' wait.
#[allow(clippy::manual_async_fn)]
fn forward<'a>(
    ctx: &'a ConnCtx,
    mut req: Request<ClientBody>,
    start: Instant,
    grpc: bool,
    acct: &'a mut Accounting,
) -> impl Future<Output = Response<ProxyBody>> + 'a {
    async move {
        let mut routed = match route::route(ctx, &mut req, acct) {
            Ok(r) => r,
            Err(reason) => return error_response(reason),
        };
        // HSTS only means something over TLS (browsers ignore it on plain HTTP).
        let hsts = routed
            .target
            .hsts
            .clone()
            .filter(|_| ctx.conn.tls.is_some());
        let mut filtered = Filtered::start(ctx, &req, &routed, acct, grpc, start);
        let answer = match &mut filtered {
            Some(f) => f.request(&mut req, &mut routed).await,
            None => None,
        };
        let mut resp = match answer {
            Some((resp, reason)) => {
                acct.routed(routed.target.route.as_deref(), &routed.target.pool);
                acct.count_as(&routed.target.metrics, None, Some(reason));
                *resp
            }
            None => proxy(ctx, req, routed, start, grpc, acct).await,
        };
        if let Some(f) = filtered {
            f.response(&mut resp, acct).await;
        }
        if let Some(v) = hsts {
            resp.headers_mut()
                .insert(http::header::STRICT_TRANSPORT_SECURITY, v);
        }
        resp
    }
}

fn proxy<'a>(
    ctx: &'a ConnCtx,
    mut req: Request<ClientBody>,
    routed: Routed,
    start: Instant,
    grpc: bool,
    acct: &'a mut Accounting,
) -> impl Future<Output = Response<ProxyBody>> + 'a {
    let Routed {
        listener,
        host,
        upstream_host,
        target,
    } = routed;
    let upgrade = crate::http::upgrade::asked(&req);
    let added = rewrite::for_upstream(&mut req, ctx, host, upstream_host, upgrade);
    let client = acct.client.unwrap_or(ctx.conn.client);
    let key = keys::pick_key(&target.pool, &req, &added, client);
    // A gRPC call's deadline, from its arrival.
    let deadline = grpc
        .then(|| grpc::timeout(req.headers()))
        .flatten()
        .map(|t| weir_upstream::error::Deadline::after(start, "grpc-timeout", t));
    let (parts, body) = req.into_parts();
    async move {
        let Target {
            route,
            pool,
            metrics,
            ..
        } = &*target;
        let w = Where {
            listener: &listener,
            route: route.as_deref(),
            pool: &pool.name,
            endpoint: None,
        };
        let body = match prepare(body, pool.retry.buffer, !grpc).await {
            Ok(b) => b,
            Err(e) => {
                // A body that breaks its framing (a bad chunk size) is the
                // client's mistake: 400; one that stops short, a client gone.
                let reason = e.reason();
                acct.count_as(metrics, None, Some(reason));
                return fail(reason, &w, &format!("reading the request body: {e}"));
            }
        };
        acct.routed(route.as_deref(), pool);
        let ended = tries::run(Attempts {
            pool,
            key,
            parts,
            added,
            body,
            deadline,
            proxy_header: pool.send_proxy.map(|v| {
                let addrs = Some((client, ctx.conn.local));
                weir_transport::proxy_protocol::header(v, addrs, ctx.conn.proxy_tlvs.as_deref())
            }),
        })
        .await;
        match ended {
            Ended::Response {
                resp,
                endpoint,
                info,
            } => {
                acct.tried(&info, start, pool, Some(endpoint));
                acct.count_as(metrics, Some(endpoint), None);
                resp
            }
            Ended::Failed {
                error,
                endpoint,
                info,
            } => {
                let index = endpoint.as_ref().map(|e| e.1);
                acct.tried(&info, start, pool, index);
                let reason = Ended::reason(&error, &info);
                acct.count_as(metrics, index, Some(reason));
                let w = Where {
                    endpoint: endpoint.as_ref().map(|e| &*e.0),
                    ..w
                };
                tries_failed(pool, reason, &error, info.retries, &w)
            }
        }
    }
}
