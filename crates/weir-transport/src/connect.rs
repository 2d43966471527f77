//! Opening a connection to an endpoint, bounded by the pool's connect timeout.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Sleep;

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("connect to {addr} timed out after {timeout:?}")]
    Timeout { addr: SocketAddr, timeout: Duration },
    #[error("connect to {addr}: {source}")]
    Io {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// The TLS handshake failed: the reason says what to fix (the pool's `ca`,
    /// `server_name`, client certificate, or an endpoint that does not speak TLS).
    #[error("TLS handshake with {addr} (as {name}): {source}")]
    Tls {
        addr: SocketAddr,
        name: String,
        #[source]
        source: crate::handshake_error::HandshakeError,
    },
    #[error("TLS handshake with {addr} not done within the connect timeout ({timeout:?})")]
    HandshakeTimeout { addr: SocketAddr, timeout: Duration },
    #[error("{addr} chose the protocol {chosen:?} by ALPN; this pool speaks {} to its endpoints (list only \"{}\" in the pool's tls alpn, or set its protocol)", speaks.as_str(), speaks.as_str())]
    Alpn {
        addr: SocketAddr,
        chosen: String,
        speaks: crate::alpn::Alpn,
    },
}

pub async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ConnectError> {
    let timer = tokio::time::sleep(timeout);
    tokio::pin!(timer);
    connect_until(addr, timeout, timer).await
}

/// As [`connect`], bounded by `timer`, set to fire `timeout` from now. The
/// caller keeps the timer: a TCP session re-arms it as its idle timer, one
/// timer registration per session instead of two.
pub async fn connect_until(
    addr: SocketAddr,
    timeout: Duration,
    timer: Pin<&mut Sleep>,
) -> Result<TcpStream, ConnectError> {
    let io = |source| ConnectError::Io { addr, source };
    let stream = start(addr).map_err(io)?;
    let ready = tokio::select! {
        biased;
        r = stream.ready(Interest::WRITABLE) => r.map_err(io)?,
        _ = timer => return Err(ConnectError::Timeout { addr, timeout }),
    };
    // A refused or reset connect reports HUP (write closed); a socket still
    // connecting is not writable. So writable and open is connected, without
    // the SO_ERROR read tokio's connect makes (one system call per
    // connection of ~19).
    if !ready.is_write_closed() {
        return Ok(stream);
    }
    Err(io(stream.take_error().ok().flatten().unwrap_or_else(
        || io::Error::new(io::ErrorKind::ConnectionAborted, "closed while connecting"),
    )))
}

/// A non-blocking socket with TCP_NODELAY (small requests and responses
/// must not wait for Nagle), its connect under way.
fn start(addr: SocketAddr) -> io::Result<TcpStream> {
    let socket = Socket::new(
        Domain::for_address(addr),
        Type::STREAM.nonblocking().cloexec(),
        Some(Protocol::TCP),
    )?;
    socket.set_tcp_nodelay(true)?;
    match socket.connect(&addr.into()) {
        Err(e) if e.raw_os_error() != Some(libc::EINPROGRESS) => return Err(e),
        _ => {}
    }
    TcpStream::from_std(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn connects_with_nodelay_and_carries_bytes() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let mut s = connect(addr, Duration::from_secs(2)).await.unwrap();
        assert!(s.nodelay().unwrap());
        let (mut peer, _) = l.accept().await.unwrap();
        s.write_all(b"ping").await.unwrap();
        let mut b = [0u8; 4];
        peer.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"ping");
    }

    #[tokio::test]
    async fn a_refused_connect_says_so() {
        // A port nobody listens on: bound, then closed.
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        match connect(addr, Duration::from_secs(2)).await {
            Err(ConnectError::Io { source, .. }) => {
                assert_eq!(source.kind(), io::ErrorKind::ConnectionRefused, "{source}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("connected to a closed port"),
        }
    }

    #[tokio::test]
    async fn a_connect_nobody_answers_times_out() {
        let hole = weir_testkit::BlackHole::new().unwrap();
        let t = std::time::Instant::now();
        match connect(hole.addr(), Duration::from_millis(300)).await {
            Err(ConnectError::Timeout { .. }) => {}
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("connected past a full accept queue"),
        }
        assert!(
            t.elapsed() >= Duration::from_millis(290),
            "{:?}",
            t.elapsed()
        );
    }
}
