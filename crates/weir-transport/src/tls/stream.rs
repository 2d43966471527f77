//! A terminated TLS connection as the codecs see it: read and write halves over one rustls
//! session. Both halves are used by the connection's one task, so the lock between them is
//! never contended (a few nanoseconds next to the record's crypto).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use crate::tls_info::TlsInfo;

type Inner = TlsStream<TcpStream>;

pub struct TlsConn {
    inner: Inner,
    pub info: TlsInfo,
}

impl TlsConn {
    pub fn new(inner: Inner, info: TlsInfo) -> TlsConn {
        TlsConn { inner, info }
    }

    pub fn tcp(&self) -> &TcpStream {
        self.inner.get_ref().0
    }

    pub fn into_split(self) -> (TlsReader, TlsWriter) {
        let shared = Arc::new(Mutex::new(self.inner));
        (TlsReader(shared.clone()), TlsWriter(shared))
    }
}

pub struct TlsReader(Arc<Mutex<Inner>>);
pub struct TlsWriter(Arc<Mutex<Inner>>);

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    // A panic elsewhere on this connection leaves nothing half-changed that matters here.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl TlsReader {
    /// Closed or reset, looked at on the raw socket (see `ClientReader::poll_gone`). TLS
    /// records the client sends (a next request, a close_notify) are bytes: not gone.
    pub fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let g = lock(&self.0);
        let mut b = [0u8; 1];
        let mut rb = ReadBuf::new(&mut b);
        match std::task::ready!(g.get_ref().0.poll_peek(cx, &mut rb)) {
            Ok(0) | Err(_) => Poll::Ready(true),
            Ok(_) => Poll::Ready(false),
        }
    }

    /// Has the kernel acknowledge now what arrived on the socket under the session
    /// (`transport/acks.rs`).
    pub fn ack_now(&self) {
        crate::acks::ack_now(lock(&self.0).get_ref().0);
    }
}

impl AsyncRead for TlsReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut g = lock(&self.0);
        let r = Pin::new(&mut *g).poll_read(cx, buf);
        // What reading made rustls say (the `no_renegotiation` alert to a TLS 1.2 client's
        // new ClientHello, a key update's answer) goes out now: tokio-rustls writes only
        // when written to, and that client waits for an answer before it sends anything.
        let (tcp, session) = g.get_mut();
        let mut w = TryWrite(tcp);
        while session.wants_write() {
            if session.write_tls(&mut w).is_err() {
                break;
            }
        }
        r
    }
}

impl TlsWriter {
    /// The connection is over: a close_notify goes out if the socket takes it now (the
    /// client then knows the response was not cut short), without waiting.
    pub fn close(self) {
        let mut g = lock(&self.0);
        let (tcp, session) = g.get_mut();
        session.send_close_notify();
        let mut w = TryWrite(tcp);
        while session.wants_write() {
            if session.write_tls(&mut w).is_err() {
                break;
            }
        }
    }
}

/// `io::Write` over a non-blocking socket, for writing what rustls has without an await.
pub(super) struct TryWrite<'a>(pub(super) &'a TcpStream);

impl io::Write for TryWrite<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsyncWrite for TlsWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *lock(&self.0)).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *lock(&self.0)).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *lock(&self.0)).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *lock(&self.0)).poll_shutdown(cx)
    }
}
