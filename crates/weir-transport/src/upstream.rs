//! An upstream connection's stream, as the client codecs see it: read and
//! write by polling, the "has the backend gone" check before reuse, the
//! raw socket for what the kernel knows (a pending reset, the round-trip
//! time), addresses, and TLS details.
//!
//! An enum over the kinds of stream, so the hot path dispatches
//! statically. Upstream TLS is the `Tls` variant (`upstream_tls.rs`); its
//! `peer_gone`, `raw` and `tcp_state` look at the TCP socket under the session.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

use crate::alpn::Alpn;
use crate::connect::{connect_until, ConnectError};
use crate::tcp_state::TcpState;
use crate::tls_info::TlsInfo;
use crate::upstream_tls::{TlsStream, UpstreamTls};

pub enum UpstreamStream {
    Plain(TcpStream),
    Tls(TlsStream),
}

impl UpstreamStream {
    /// Opens a connection to `addr`, over TLS when the pool has `tls` (offering `alpn`),
    /// first writing `proxy_header` (a PROXY protocol header) when given; `timeout` covers
    /// the TCP connect, the header and the handshake.
    pub async fn connect(
        addr: SocketAddr,
        timeout: std::time::Duration,
        tls: Option<&UpstreamTls>,
        alpn: Alpn,
        proxy_header: Option<&[u8]>,
    ) -> Result<Self, ConnectError> {
        let timer = tokio::time::sleep(timeout);
        tokio::pin!(timer);
        Self::connect_until(addr, timeout, tls, alpn, proxy_header, timer).await
    }

    /// As [`UpstreamStream::connect`], bounded by `timer` (set to fire `timeout` from
    /// now; a TCP session keeps it as its idle timer).
    pub async fn connect_until(
        addr: SocketAddr,
        timeout: std::time::Duration,
        tls: Option<&UpstreamTls>,
        alpn: Alpn,
        proxy_header: Option<&[u8]>,
        mut timer: Pin<&mut tokio::time::Sleep>,
    ) -> Result<Self, ConnectError> {
        let mut tcp = connect_until(addr, timeout, timer.as_mut()).await?;
        if let Some(h) = proxy_header {
            // A few dozen bytes on a fresh socket: the send buffer takes them at once.
            use tokio::io::AsyncWriteExt;
            tokio::select! {
                biased;
                r = tcp.write_all(h) => r.map_err(|source| ConnectError::Io { addr, source })?,
                _ = timer.as_mut() => return Err(ConnectError::Timeout { addr, timeout }),
            }
        }
        match tls {
            None => Ok(UpstreamStream::Plain(tcp)),
            Some(tls) => tls
                .handshake(alpn, addr, tcp, timeout, timer)
                .await
                .map(UpstreamStream::Tls),
        }
    }

    /// Whether the backend closed or reset the connection, or sent bytes
    /// nobody asked for. Never blocks; costs a system call (a one-byte
    /// peek) only when the socket was reported readable. Under TLS the
    /// socket is the TCP one: any record arriving on an idle session (a
    /// close_notify, most likely) counts as gone, as bytes do on a plain one.
    pub fn peer_gone(&self) -> bool {
        let s = self.raw();
        let peeked = s.try_io(Interest::READABLE, || {
            let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 1];
            socket2::SockRef::from(s).peek(&mut b)
        });
        match peeked {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            // EOF, unsolicited bytes, or an error.
            _ => true,
        }
    }

    /// Ready once a read may find bytes: when the socket is readable, or at once over TLS
    /// (the session may hold plaintext already read). A codec makes room to read into only
    /// then, so that a request waiting on its answer holds no read buffer.
    #[inline]
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            UpstreamStream::Plain(s) => s.poll_read_ready(cx),
            UpstreamStream::Tls(_) => Poll::Ready(Ok(())),
        }
    }

    /// The TCP socket under the stream, for what the kernel knows about the
    /// connection (`take_error`, `TCP_INFO`).
    pub fn raw(&self) -> &TcpStream {
        match self {
            UpstreamStream::Plain(s) => s,
            UpstreamStream::Tls(s) => s.get_ref().0,
        }
    }

    /// What the kernel knows about the TCP connection (under TLS too); `None` if it
    /// would not say.
    pub fn tcp_state(&self) -> Option<TcpState> {
        TcpState::of(self.raw()).ok()
    }

    /// Whether records of a TLS session run over the connection: its last bytes in may
    /// be a close_notify rather than an answer.
    pub fn is_tls(&self) -> bool {
        matches!(self, UpstreamStream::Tls(_))
    }

    /// Has the kernel acknowledge now what arrived (`acks.rs`).
    pub fn ack_now(&self) {
        crate::acks::ack_now(self.raw());
    }

    /// The TLS session's details; `None` on a plain connection (and, until
    /// `TlsInfo` carries any, on a TLS one).
    pub fn tls(&self) -> Option<&TlsInfo> {
        match self {
            UpstreamStream::Plain(_) | UpstreamStream::Tls(_) => None,
        }
    }

    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.raw().peer_addr()
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.raw().local_addr()
    }
}

impl AsyncRead for UpstreamStream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            UpstreamStream::Tls(s) => {
                // The codecs never flush (a socket needs none), but TLS records a full
                // socket refused wait in rustls: whoever waits for the answer pushes them.
                let _ = Pin::new(&mut **s).poll_flush(cx);
                Pin::new(&mut **s).poll_read(cx, buf)
            }
        }
    }
}

impl AsyncWrite for UpstreamStream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            UpstreamStream::Tls(s) => tls_write(s, cx, |s, cx| s.poll_write(cx, buf)),
        }
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            UpstreamStream::Tls(s) => tls_write(s, cx, |s, cx| s.poll_write_vectored(cx, bufs)),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            UpstreamStream::Plain(s) => s.is_write_vectored(),
            UpstreamStream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_flush(cx),
            UpstreamStream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            UpstreamStream::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}

/// A write through TLS that leaves nothing behind in rustls when it can: records from an
/// earlier write go out first (a full socket pushes back here, as it would on a plain
/// one), and the new ones are pushed at once, so a request's last bytes do not wait in
/// memory while the codec reads for the answer.
fn tls_write(
    s: &mut TlsStream,
    cx: &mut Context<'_>,
    write: impl FnOnce(
        Pin<&mut tokio_rustls::client::TlsStream<TcpStream>>,
        &mut Context<'_>,
    ) -> Poll<io::Result<usize>>,
) -> Poll<io::Result<usize>> {
    let mut s = Pin::new(&mut **s);
    if s.get_ref().1.wants_write() {
        std::task::ready!(s.as_mut().poll_flush(cx))?;
    }
    let n = std::task::ready!(write(s.as_mut(), cx))?;
    // Pending here is fine: the bytes are taken, and the next write or read pushes them.
    let _ = s.poll_flush(cx);
    Poll::Ready(Ok(n))
}

impl crate::acks::AckNow for UpstreamStream {
    fn ack_now(&self) {
        UpstreamStream::ack_now(self);
    }
}
