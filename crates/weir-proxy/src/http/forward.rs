//! One HTTP request: route it, pick an endpoint, send it upstream on a pooled
//! or new connection, and hand the response back as a streaming body.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http::header::{self, HeaderValue};
use http::{Request, Response, Uri, Version};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tracing::warn;

use crate::endpoint::EndpointRt;
use crate::http::body::{PoolReturn, ProxyBody};
use crate::http::conn_state::ConnState;
use crate::http::error::error_response;
use crate::http::headers::{add_forwarded, strip_hop_by_hop};
use crate::pool::PoolRt;
use crate::reason::Reason;
use crate::upstream::connect::connect;
use crate::upstream::keep_alive::idle_allowance;
use crate::Shared;

/// What a client connection's requests share.
pub struct ConnCtx {
    pub shared: Arc<Shared>,
    pub slot: usize,
    pub client: SocketAddr,
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
    warn!(
        listener = w.listener,
        route = w.route.unwrap_or("-"),
        pool = w.pool,
        endpoint = w.endpoint.unwrap_or("-"),
        reason = reason.as_str(),
        status = reason.status(),
        "request failed: {detail}"
    );
    error_response(reason)
}

pub async fn handle(
    ctx: Arc<ConnCtx>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let busy = ctx.state.begin_request();
    let resp = route_and_forward(&ctx, req).await;
    Ok(resp.map(|b| b.with_busy(busy)))
}

async fn route_and_forward(ctx: &ConnCtx, mut req: Request<Incoming>) -> Response<ProxyBody> {
    // RFC 9112 §3.2: an HTTP/1.1 request must carry exactly one Host.
    let mut hosts = req.headers().get_all(header::HOST).iter();
    let host_hdr = hosts.next().cloned();
    if hosts.next().is_some() || (host_hdr.is_none() && req.version() == Version::HTTP_11) {
        return error_response(Reason::BadRequest);
    }
    // An absolute-form target's authority overrides Host (RFC 9112 §3.2.2).
    let host_hdr = match req.uri().authority() {
        Some(a) => HeaderValue::from_str(a.as_str()).ok(),
        None => host_hdr,
    };
    let host = host_hdr.as_ref().and_then(|v| v.to_str().ok());

    let (listener, route, pool) = {
        let snap = ctx.shared.snapshot.load();
        let Some(Some(l)) = snap.listeners.get(ctx.slot) else {
            return error_response(Reason::RouteNotFound);
        };
        match l.routes.lookup(host, req.uri().path()) {
            Some(t) => (l.name.clone(), t.route.clone(), t.pool.clone()),
            None => {
                let w = Where {
                    listener: &l.name,
                    route: None,
                    pool: "-",
                    endpoint: None,
                };
                let detail = format!("no route for host {host:?} path {:?}", req.uri().path());
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
    // weir answers `Expect: 100-continue` itself (hyper sends 100 when the
    // body is first read, i.e. once the upstream is connected).
    h.remove(header::EXPECT);
    add_forwarded(h, ctx.client.ip(), host_hdr.as_ref());
    if let Some(v) = host_hdr {
        h.insert(header::HOST, v);
    }
    *req.version_mut() = Version::HTTP_11;

    let Some(ep) = pool.pick().cloned() else {
        let w = Where {
            listener: &listener,
            route: route.as_deref(),
            pool: &pool.name,
            endpoint: None,
        };
        return fail(Reason::NoHealthyEndpoint, &w, &"the pool has no endpoints");
    };
    let w = Where {
        listener: &listener,
        route: route.as_deref(),
        pool: &pool.name,
        endpoint: Some(&ep.addr_str),
    };
    send(&pool, ep.clone(), req, &w).await
}

async fn send(
    pool: &PoolRt,
    ep: Arc<EndpointRt>,
    mut req: Request<Incoming>,
    w: &Where<'_>,
) -> Response<ProxyBody> {
    let mut fresh_only = false;
    loop {
        let pooled = if fresh_only {
            None
        } else {
            ep.idle.checkout(Instant::now())
        };
        let mut tx = match pooled {
            Some(tx) => tx,
            None => match open(&ep, pool).await {
                Ok(tx) => tx,
                Err(e) => return fail(Reason::ConnectFailed, w, &e),
            },
        };
        let sent = tokio::time::timeout(pool.response_timeout, tx.try_send_request(req)).await;
        match sent {
            Ok(Ok(resp)) => {
                let (mut parts, body) = resp.into_parts();
                let idle = idle_allowance(&parts.headers, pool.idle_timeout);
                strip_hop_by_hop(&mut parts.headers);
                let ret = PoolReturn {
                    endpoint: ep,
                    tx,
                    idle,
                };
                return Response::from_parts(parts, ProxyBody::upstream(body, Some(ret)));
            }
            Ok(Err(mut e)) => match e.take_message() {
                // The connection died before a byte of the request was
                // written (a keep-alive the backend just closed): the request
                // never reached the application, so any method may go again,
                // once, on a new connection.
                Some(back) if !fresh_only => {
                    req = back;
                    fresh_only = true;
                }
                _ => return fail(Reason::UpstreamReset, w, e.error()),
            },
            Err(_) => {
                let detail = format!("no response within {:?}", pool.response_timeout);
                return fail(Reason::UpstreamTimeout, w, &detail);
            }
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum OpenError {
    #[error(transparent)]
    Connect(#[from] crate::upstream::connect::ConnectError),
    #[error("HTTP/1 handshake: {0}")]
    Handshake(#[from] hyper::Error),
}

async fn open(ep: &EndpointRt, pool: &PoolRt) -> Result<SendRequest<Incoming>, OpenError> {
    let stream = connect(ep.addr, pool.connect_timeout).await?;
    let (tx, conn) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await?;
    tokio::spawn(async move {
        // Ends when the backend closes or weir drops the sender.
        let _ = conn.await;
    });
    Ok(tx)
}
