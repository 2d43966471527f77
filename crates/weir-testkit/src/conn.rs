//! One accepted HTTP connection: hyper serves it, while two side channels can cut it short —
//! the idle closer (stale keep-alive race) and `/close` (hand-written close-delimited reply).

use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::routes;
use crate::shared::UpstreamState;
use crate::ticket::{ConnState, Ticket};

/// Serves one connection until the client leaves, the idle closer fires, or `/close`.
/// Subscribes to graceful shutdown at once (not at first poll), so a shutdown
/// that starts right after the accept still reaches this connection.
pub(crate) fn serve(
    shared: Arc<UpstreamState>,
    stream: TcpStream,
) -> impl std::future::Future<Output = ()> + Send {
    let drain = shared.drain.subscribe();
    serve_conn(shared, stream, drain)
}

async fn serve_conn(
    shared: Arc<UpstreamState>,
    stream: TcpStream,
    mut drain: tokio::sync::watch::Receiver<u64>,
) {
    let id = shared.next_conn_id.fetch_add(1, Relaxed);
    shared.connections.fetch_add(1, Relaxed);
    shared.open.fetch_add(1, Relaxed);
    struct Open(Arc<UpstreamState>);
    impl Drop for Open {
        fn drop(&mut self) {
            self.0.open.fetch_sub(1, Relaxed);
        }
    }
    let _open = Open(shared.clone());
    let state = Arc::new(ConnState::new(id));
    // The sender lives only in the service, so no cycle keeps a queued ticket alive.
    let (close_tx, mut close_rx) = mpsc::channel::<Ticket>(1);
    let svc = {
        let (shared, state) = (shared.clone(), state.clone());
        service_fn(move |req| routes::handle(shared.clone(), state.clone(), close_tx.clone(), req))
    };
    let track = shared.idle_close.map(|_| state.clone());
    let io = TokioIo::new(ActivityIo {
        inner: stream,
        track,
    });
    if shared.h2c {
        // A graceful shutdown sends GOAWAY: streams in progress finish, no new ones start.
        let conn = http2::Builder::new(TokioExecutor::new()).serve_connection(io, svc);
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => return,
            Ok(()) = drain.changed() => conn.as_mut().graceful_shutdown(),
        }
        let _ = conn.await;
        return;
    }
    let mut conn = http1::Builder::new().serve_connection(io, svc);

    enum End {
        Done,
        Idle,
        Close(Ticket),
    }
    let end = tokio::select! {
        _ = &mut conn => End::Done,
        Ok(()) = drain.changed() => {
            // Graceful: idle connections close now, a request in progress
            // finishes with `Connection: close`.
            Pin::new(&mut conn).graceful_shutdown();
            tokio::select! {
                _ = &mut conn => End::Done,
                Some(t) = close_rx.recv() => End::Close(t),
            }
        }
        _ = idle_closer(&state, shared.idle_close) => End::Idle,
        Some(t) = close_rx.recv() => End::Close(t),
    };
    match end {
        // Dropping the connection sends FIN (or RST if request bytes sit unread): exactly
        // what a backend's keep-alive timeout does to a request racing it.
        End::Done | End::Idle => drop(conn),
        End::Close(ticket) => {
            // hyper cannot send a close-delimited body on HTTP/1.1, so take the socket back
            // and write the reply by hand.
            let mut stream = conn.into_parts().io.into_inner().inner;
            let head = format!(
                "HTTP/1.1 200 OK\r\nx-upstream: {}\r\nx-upstream-conn: {id}\r\nconnection: close\r\n\r\n",
                shared.name
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&shared.name_body).await;
            drop(ticket);
            let _ = stream.shutdown().await;
        }
    }
    // A ticket sent just as the connection ended must still release its slot.
    close_rx.close();
    while close_rx.try_recv().is_ok() {}
}

/// Resolves once the connection has had no traffic and no request for `limit`.
async fn idle_closer(state: &ConnState, limit: Option<Duration>) {
    let Some(limit) = limit else {
        return std::future::pending().await;
    };
    loop {
        let idle = state.idle_for();
        let busy = state.is_busy();
        if !busy && idle >= limit {
            return;
        }
        // While busy, re-check later; the ticket's drop restarts the idle clock.
        tokio::time::sleep(if busy { limit } else { limit - idle }).await;
    }
}

/// TcpStream that records when bytes last moved (only when idle closing is on).
struct ActivityIo {
    inner: TcpStream,
    track: Option<Arc<ConnState>>,
}

impl ActivityIo {
    fn touch(&self) {
        if let Some(t) = &self.track {
            t.touch();
        }
    }
}

impl AsyncRead for ActivityIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.touch();
        }
        res
    }
}

impl AsyncWrite for ActivityIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(res, Poll::Ready(Ok(n)) if n > 0) {
            self.touch();
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
