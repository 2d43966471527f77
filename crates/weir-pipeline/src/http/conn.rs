//! Serving one client connection: weir's HTTP/1.1 server (`codec::h1::server`) with
//! `forward::handle` as the handler, plus the client timeouts (see
//! `conn_state`), graceful close on drain, and a hard stop when the drain
//! grace runs out.

use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use http::{Request, Response};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::http::forward::{handle, refused, refused_request, ConnCtx};
use crate::http::upgrade;
use crate::race::race;
use weir_codec::client_body::ClientBody;
use weir_codec::h1::server::{self, DrainFlags, Handler, Switched};
use weir_codec::h2;
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

/// The proxy as the server's handler.
struct Proxy(Arc<ConnCtx>);

impl Handler for Proxy {
    type ReqBody = ClientBody;
    type Body = ProxyBody;

    fn call(
        &self,
        req: Request<ClientBody>,
    ) -> impl Future<Output = Response<ProxyBody>> + Send + '_ {
        handle(&self.0, req)
    }

    #[inline]
    fn head_bytes(&self) {
        self.0.conn.state.on_read();
    }

    fn refused(&self, status: u16, why: &dyn Display) {
        refused(&self.0, status, why);
    }

    fn switches(&self, body: &ProxyBody) -> bool {
        body.is_upgraded()
    }

    fn switched(&self, body: ProxyBody, client: Switched) -> impl Future<Output = ()> + Send {
        upgrade::relay(&self.0, body, upgrade::Client::H1(client))
    }
}

impl h2::server::Handler for Proxy {
    type ReqBody = ClientBody;
    type Body = ProxyBody;

    fn call(
        &self,
        req: Request<ClientBody>,
    ) -> impl Future<Output = Response<ProxyBody>> + Send + '_ {
        handle(&self.0, req)
    }

    #[inline]
    fn stream_opened(&self) {
        self.0.conn.state.on_read();
    }

    fn refuse(
        &self,
        status: u16,
        why: &dyn Display,
        req: &Request<ClientBody>,
    ) -> Response<ProxyBody> {
        refused_request(&self.0, status, why, req);
        error_response_as(status, Reason::BadRequest)
    }

    fn abuse(&self, why: h2::server::Abuse) {
        weir_codec::h2::goaways::abuse(why);
    }

    fn is_switched(&self, body: &ProxyBody) -> bool {
        body.is_upgraded()
    }

    fn tunnel(
        &self,
        body: ProxyBody,
        io: h2::tunnel::Tunnel,
    ) -> impl Future<Output = ()> + Send + '_ {
        upgrade::relay(&self.0, body, upgrade::Client::H2(io))
    }
}

/// Streams an HTTP/2 client may have open at once.
const H2_MAX_STREAMS: u32 = 128;
/// How long an idle HTTP/2 connection's GOAWAY may take to go out before the close.
const H2_GOAWAY_GRACE: Duration = Duration::from_secs(1);

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
    // Boxed: the connection's future is kilobytes; here it is built once
    // in place, where every `async` layer above would copy it again.
    // HTTP/2 once the connection says so: ALPN `h2` on TLS, else the preface (h2c with
    // prior knowledge) where an HTTP/1 request would start.
    let h2_mode = AtomicBool::new(false);
    let idle = CancellationToken::new();
    let h2_limits = h2::server::Limits {
        max_streams: H2_MAX_STREAMS,
        max_header_list: u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX),
        stall: limits.idle_timeout,
    };
    let alpn_h2 = stream
        .tls()
        .is_some_and(|t| t.alpn.as_deref() == Some(b"h2".as_slice()));
    let conn = Box::pin(async {
        let io = if alpn_h2 {
            let (r, w) = stream.into_split();
            h2::io::Joined::new(BytesMut::new(), r, w)
        } else {
            match server::run(stream, &proxy, &ctl, limits.max_header_bytes).await {
                None => return,
                Some(h) => h2::io::Joined::new(h.buffered, h.reader, h.writer),
            }
        };
        h2_mode.store(true, Relaxed);
        // Boxed: inline, HTTP/2's state would enlarge every connection's future, idle
        // HTTP/1.1 ones too.
        Box::pin(h2::server::run(io, &proxy, &ctl, &drain, &idle, h2_limits)).await;
    });
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
                    // HTTP/2 sends GOAWAY itself and ends when its streams have.
                    if h2_mode.load(Relaxed) {
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
                            if !h2_mode.load(Relaxed) {
                                return;
                            }
                            // HTTP/2 says GOAWAY first, and ends once it went out; a
                            // client that never reads it does not hold the socket.
                            idle.cancel();
                            tokio::time::sleep(H2_GOAWAY_GRACE).await;
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
