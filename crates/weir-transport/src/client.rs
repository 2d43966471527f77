//! A client connection's stream, as the server codecs see it: read and
//! write halves (a codec reads and writes from different places in the
//! connection's one task), readiness by polling, the "has the client gone"
//! check while a request is in flight, addresses, and TLS details.
//!
//! Enums over the kinds of stream, so the hot path dispatches statically
//! (one variant compiles to no branch at all). TLS termination is a new
//! variant in a file of its own: its halves share the TLS session, and
//! `poll_gone` and `registered` still look at the raw socket under it.

use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::lazy;
use crate::tls::{TlsConn, TlsReader, TlsWriter};
use crate::tls_info::TlsInfo;

/// An accepted client connection.
pub enum ClientStream {
    /// Plain TCP, registered with epoll only once it must wait.
    Plain(lazy::Socket),
    /// Terminated TLS (`tls/`); boxed, as a session is kilobytes.
    Tls(Box<TlsConn>),
}

pub enum ClientReader {
    Plain(lazy::ReadHalf),
    Tls(TlsReader),
}

pub enum ClientWriter {
    Plain(lazy::WriteHalf),
    Tls(TlsWriter),
}

impl ClientStream {
    /// `sock` must be in non-blocking mode (as `transport::accept` makes it).
    pub fn plain(sock: std::net::TcpStream) -> Self {
        ClientStream::Plain(lazy::Socket::new(sock))
    }

    pub fn into_split(self) -> (ClientReader, ClientWriter) {
        match self {
            ClientStream::Plain(s) => {
                let (r, w) = s.into_split();
                (ClientReader::Plain(r), ClientWriter::Plain(w))
            }
            ClientStream::Tls(t) => {
                let (r, w) = t.into_split();
                (ClientReader::Tls(r), ClientWriter::Tls(w))
            }
        }
    }

    /// A plain connection's halves as tokio's `TcpStream` again (for splice), or the
    /// halves back when they are TLS. The inner error: the socket could not join the
    /// runtime (it is closed with it).
    #[allow(clippy::type_complexity)]
    pub fn reunite_plain(
        r: ClientReader,
        w: ClientWriter,
    ) -> Result<io::Result<tokio::net::TcpStream>, (ClientReader, ClientWriter)> {
        match (r, w) {
            (ClientReader::Plain(r), ClientWriter::Plain(w)) => match lazy::reunite(r, w) {
                Ok(sock) => Ok(tokio::net::TcpStream::from_std(sock)),
                Err((r, w)) => Err((ClientReader::Plain(r), ClientWriter::Plain(w))),
            },
            (r, w) => Err((r, w)),
        }
    }

    /// The TLS session's details; `None` on a plain connection.
    pub fn tls(&self) -> Option<&TlsInfo> {
        match self {
            ClientStream::Plain(_) => None,
            ClientStream::Tls(t) => Some(&t.info),
        }
    }

    /// A system call each: the accept loop already has the peer's address
    /// for the request path.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        match self {
            ClientStream::Plain(s) => s.tcp().peer_addr(),
            ClientStream::Tls(t) => t.tcp().peer_addr(),
        }
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            ClientStream::Plain(s) => s.tcp().local_addr(),
            ClientStream::Tls(t) => t.tcp().local_addr(),
        }
    }
}

impl ClientReader {
    /// Whether waiting on the stream would cost no more system calls (the
    /// raw socket is in the runtime's epoll set).
    #[inline]
    pub fn registered(&self) -> bool {
        match self {
            ClientReader::Plain(r) => r.registered(),
            ClientReader::Tls(_) => true,
        }
    }

    /// While a request is in flight: `Ready(true)` once the client closed
    /// or reset the connection, `Ready(false)` once it sent more bytes.
    /// Looks at the raw socket without consuming (a peek), so nothing is
    /// copied and nothing the codec has not read is taken.
    pub fn poll_gone(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        match self {
            ClientReader::Plain(r) => {
                let mut b = [0u8; 1];
                let mut rb = ReadBuf::new(&mut b);
                match std::task::ready!(r.poll_peek(cx, &mut rb)) {
                    Ok(0) | Err(_) => Poll::Ready(true),
                    Ok(_) => Poll::Ready(false),
                }
            }
            ClientReader::Tls(r) => r.poll_gone(cx),
        }
    }

    /// Has the kernel acknowledge now what arrived (`acks.rs`).
    pub fn ack_now(&self) {
        match self {
            ClientReader::Plain(r) => crate::acks::ack_now(r.tcp()),
            ClientReader::Tls(r) => r.ack_now(),
        }
    }
}

impl AsyncRead for ClientReader {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientReader::Plain(r) => Pin::new(r).poll_read(cx, buf),
            ClientReader::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl ClientWriter {
    /// Drops the half without shutting down writing: closing the stream
    /// sends the FIN (after a TLS close_notify, if the socket takes it now).
    pub fn forget(self) {
        match self {
            ClientWriter::Plain(w) => w.forget(),
            ClientWriter::Tls(w) => w.close(),
        }
    }
}

impl AsyncWrite for ClientWriter {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientWriter::Plain(w) => Pin::new(w).poll_write(cx, buf),
            ClientWriter::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientWriter::Plain(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            ClientWriter::Tls(w) => Pin::new(w).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ClientWriter::Plain(w) => w.is_write_vectored(),
            ClientWriter::Tls(w) => w.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientWriter::Plain(w) => Pin::new(w).poll_flush(cx),
            ClientWriter::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientWriter::Plain(w) => Pin::new(w).poll_shutdown(cx),
            ClientWriter::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use tokio::io::AsyncWriteExt;

    use super::*;

    async fn pair() -> (ClientStream, tokio::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = tokio::net::TcpStream::connect(l.local_addr().unwrap())
            .await
            .unwrap();
        let (s, _) = l.accept().unwrap();
        s.set_nonblocking(true).unwrap();
        (ClientStream::plain(s), c)
    }

    /// More bytes from the client are not "gone", and are left for the
    /// codec; a close is.
    #[tokio::test]
    async fn gone_tells_a_close_from_more_bytes() {
        let (s, mut c) = pair().await;
        assert!(s.tls().is_none());
        assert_eq!(s.peer_addr().unwrap(), c.local_addr().unwrap());
        let (mut r, _w) = s.into_split();
        c.write_all(b"x").await.unwrap();
        assert!(!poll_fn(|cx| r.poll_gone(cx)).await);
        let mut b = [0u8; 4];
        let n = tokio::io::AsyncReadExt::read(&mut r, &mut b).await.unwrap();
        assert_eq!(&b[..n], b"x");
        drop(c);
        assert!(poll_fn(|cx| r.poll_gone(cx)).await);
    }
}
