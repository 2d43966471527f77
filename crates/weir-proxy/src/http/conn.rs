//! Serving one client connection: weir's HTTP/1.1 server (`codec::h1::server`) with
//! `forward::handle` as the handler, plus the client timeouts (see
//! `conn_state`), graceful close on drain, and a hard stop when the drain
//! grace runs out.

use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::codec::client_body::ClientBody;
use crate::codec::h1::server::{self, DrainFlags, Handler, Switched};
use crate::http::body::ProxyBody;
use crate::http::conn_state::{ConnState, Verdict};
use crate::http::forward::{handle, refused, ConnCtx};
use crate::http::upgrade;
use crate::race::race;
use crate::transport::ClientStream;

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
        self.0.state.on_read();
    }

    fn refused(&self, status: u16, why: &dyn Display) {
        refused(&self.0, status, why);
    }

    fn switches(&self, body: &ProxyBody) -> bool {
        body.is_upgraded()
    }

    fn switched(&self, body: ProxyBody, client: Switched) -> impl Future<Output = ()> + Send {
        upgrade::relay(&self.0, body, client)
    }
}

pub async fn serve(
    stream: ClientStream,
    ctx: Arc<ConnCtx>,
    limits: ClientLimits,
    drain: CancellationToken,
    kill: CancellationToken,
) {
    let state: Arc<ConnState> = ctx.state.clone();
    let proxy = Proxy(ctx);
    let ctl = DrainFlags::default();
    // Boxed: the connection's future is kilobytes; here it is built once
    // in place, where every `async` layer above would copy it again.
    let conn = Box::pin(server::run(stream, &proxy, &ctl, limits.max_header_bytes));
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
