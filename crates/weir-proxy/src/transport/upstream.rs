//! An upstream connection's stream, as the client codecs see it: read and
//! write by polling, the "has the backend gone" check before reuse, the
//! raw socket for what the kernel knows (a pending reset, the round-trip
//! time), addresses, and TLS details.
//!
//! An enum over the kinds of stream, so the hot path dispatches
//! statically. Upstream TLS is a new variant in a file of its own (its
//! `peer_gone` and `raw` look at the TCP socket under the session).

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

use super::connect::{connect, ConnectError};
use super::tls_info::TlsInfo;

pub enum UpstreamStream {
    Plain(TcpStream),
}

impl UpstreamStream {
    /// Opens a plain TCP connection to `addr` within `timeout`.
    pub async fn connect(
        addr: SocketAddr,
        timeout: std::time::Duration,
    ) -> Result<Self, ConnectError> {
        connect(addr, timeout).await.map(UpstreamStream::Plain)
    }

    /// Whether the backend closed or reset the connection, or sent bytes
    /// nobody asked for. Never blocks; costs a system call (a one-byte
    /// peek) only when the socket was reported readable.
    pub fn peer_gone(&self) -> bool {
        match self {
            UpstreamStream::Plain(s) => {
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
        }
    }

    /// The TCP socket under the stream, for what the kernel knows about the
    /// connection (`take_error`, `TCP_INFO`).
    pub fn raw(&self) -> &TcpStream {
        match self {
            UpstreamStream::Plain(s) => s,
        }
    }

    /// The TLS session's details; `None` on a plain connection.
    pub fn tls(&self) -> Option<&TlsInfo> {
        match self {
            UpstreamStream::Plain(_) => None,
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
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            UpstreamStream::Plain(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            UpstreamStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
