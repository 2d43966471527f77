//! Serving one client connection: weir-codec's server side (`server::run`: the protocol
//! ALPN or the first bytes name, then its codec) with `forward::handle` as what serves
//! each request, plus the client timeouts (see `conn_state`), graceful close on drain,
//! and a hard stop when the drain grace runs out. Nothing here names a protocol.

use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::http::conn_ctx::ConnCtx;
use crate::http::forward::{handle, refused, refused_request};
use crate::http::upgrade;
use crate::race::race;
use weir_codec::client_body::ClientBody;
use weir_codec::server::{self, DrainFlags, Limits, Serve, Switched};
use weir_http::body::ProxyBody;
use weir_http::conn_state::{ConnState, Verdict};
use weir_http::error::error_response_as;
use weir_metrics::reason::Reason;
use weir_transport::ClientStream;

pub struct ClientLimits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_header_bytes: usize,
}

/// The proxy as every server codec's [`Serve`].
struct Proxy(Arc<ConnCtx>);

impl Serve for Proxy {
    type ReqBody = ClientBody;
    type Body = ProxyBody;

    fn call(
        &self,
        req: Request<ClientBody>,
    ) -> impl Future<Output = Response<ProxyBody>> + Send + '_ {
        handle(&self.0, req)
    }

    #[inline]
    fn request_arriving(&self) {
        self.0.conn.state.on_read();
    }

    fn refused(&self, status: u16, why: &dyn Display, req: Option<&Request<ClientBody>>) {
        match req {
            Some(req) => refused_request(&self.0, status, why, req),
            None => refused(&self.0, status, why),
        }
    }

    fn refusal(&self, status: u16) -> Option<Response<ProxyBody>> {
        Some(error_response_as(status, Reason::BadRequest))
    }

    fn switches(&self, body: &ProxyBody) -> bool {
        body.is_upgraded()
    }

    fn switched(&self, body: ProxyBody, client: Switched) -> impl Future<Output = ()> + Send + '_ {
        upgrade::relay(&self.0, body, client)
    }
}

/// Requests a client may have open at once on a connection that carries several (HTTP/2).
const MAX_STREAMS: u32 = 128;
/// How long the goodbye of a connection that says one (HTTP/2's GOAWAY) may take to go out
/// before an idle connection closes.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

pub async fn serve(
    stream: ClientStream,
    ctx: Arc<ConnCtx>,
    limits: ClientLimits,
    drain: CancellationToken,
    kill: CancellationToken,
) {
    let state: Arc<ConnState> = ctx.conn.state.clone();
    let proxy = Proxy(ctx);
    let ctl = DrainFlags::default();
    let idle = CancellationToken::new();
    let server_limits = Limits {
        max_head: limits.max_header_bytes,
        max_streams: MAX_STREAMS,
        stall: limits.idle_timeout,
    };
    // Boxed: the connection's future is kilobytes; here it is built once
    // in place, where every `async` layer above would copy it again.
    let conn = Box::pin(server::run(
        stream,
        &proxy,
        &ctl,
        &drain,
        &idle,
        server_limits,
    ));
    let watch = async {
        let watchdog = tokio::time::sleep(ConnState::period(
            limits.header_timeout,
            limits.idle_timeout,
        ));
        tokio::pin!(watchdog);
        let mut draining = false;
        loop {
            // Kill only ever follows a drain, so a connection waits on one
            // token at a time: registering with both cost every connection.
            tokio::select! {
                biased;
                _ = drain.cancelled(), if !draining => {
                    // A codec that says goodbye (HTTP/2's GOAWAY) does it itself and ends
                    // when its requests have.
                    if ctl.goes_away.load(Relaxed) {
                        draining = true;
                        continue;
                    }
                    // Idle connections close now; a request in flight
                    // finishes and its response carries `Connection: close`.
                    if !ctl.busy.load(Relaxed) {
                        return;
                    }
                    ctl.draining.store(true, Relaxed);
                    draining = true;
                }
                _ = kill.cancelled(), if draining => return,
                _ = watchdog.as_mut() => {
                    match state.verdict(limits.header_timeout, limits.idle_timeout) {
                        Verdict::Expired => {
                            debug!("client connection timed out");
                            if !ctl.goes_away.load(Relaxed) {
                                return;
                            }
                            // Goodbye first (HTTP/2's GOAWAY), and the end once it went
                            // out; a client that never reads it does not hold the socket.
                            idle.cancel();
                            tokio::time::sleep(GOAWAY_GRACE).await;
                            return;
                        }
                        Verdict::CheckAt(t) => watchdog.as_mut().reset(Instant::from_std(t)),
                    }
                }
            }
        }
    };
    race(conn, watch).await;
}
