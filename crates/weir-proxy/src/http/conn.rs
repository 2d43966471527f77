//! Serving one client connection: hyper's HTTP/1.1 server, plus the client
//! timeouts (see `conn_state`), graceful close on drain, and a hard stop when
//! the drain grace runs out.

use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::http::conn_state::{ConnState, Verdict, Watched};
use crate::http::forward::{handle, ConnCtx};

/// hyper refuses read buffers below this.
const HYPER_MIN_BUF: usize = 8192;

pub struct ClientLimits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_header_bytes: usize,
}

pub async fn serve(
    stream: TcpStream,
    ctx: Arc<ConnCtx>,
    limits: ClientLimits,
    drain: CancellationToken,
    kill: CancellationToken,
) {
    let state: Arc<ConnState> = ctx.state.clone();
    let io = TokioIo::new(Watched::new(stream, state.clone()));
    let mut builder = http1::Builder::new();
    builder
        .keep_alive(true)
        .max_buf_size(limits.max_header_bytes.max(HYPER_MIN_BUF));
    let conn = builder.serve_connection(io, service_fn(move |req| handle(ctx.clone(), req)));
    tokio::pin!(conn);

    let watchdog = tokio::time::sleep(ConnState::period(
        limits.header_timeout,
        limits.idle_timeout,
    ));
    tokio::pin!(watchdog);
    let mut draining = false;
    loop {
        tokio::select! {
            biased;
            r = conn.as_mut() => {
                if let Err(e) = r {
                    debug!("client connection ended: {e}");
                }
                return;
            }
            _ = drain.cancelled(), if !draining => {
                // Idle connections close now; a request in flight finishes
                // and its response carries `Connection: close`.
                conn.as_mut().graceful_shutdown();
                draining = true;
            }
            _ = kill.cancelled() => return,
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
}
