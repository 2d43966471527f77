//! A pool's TLS settings ready to connect with (`UpstreamTls`, shared by every connection
//! of the pool), and the handshake on a connected socket. Built and watched by
//! `watched.rs`; its connectors are replaced by `reload.rs`.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::Sleep;
use weir_config::PoolTls;

use super::connectors::Connectors;
use crate::alpn::Alpn;
use crate::connect::ConnectError;
use crate::handshake_error::HandshakeError;

/// One TLS session to an endpoint. Boxed: a rustls connection is ~1 KiB, and plain
/// streams should not carry that size around.
pub type TlsStream = Box<tokio_rustls::client::TlsStream<TcpStream>>;

/// A pool's TLS settings, ready to connect with.
pub struct UpstreamTls {
    /// Unique per build: pooled connections and health checkers made under other
    /// settings are told apart by it (0 is a plain connection).
    pub id: u64,
    /// The pool's name, for the log.
    pub(super) pool: String,
    /// What it was built from, to see whether a new config changes it.
    pub settings: PoolTls,
    /// Replaced when the files change; connections made before keep theirs.
    pub(super) connectors: ArcSwap<Connectors>,
    /// `None`: each endpoint's IP address (verified as an IP SAN).
    pub(super) server_name: Option<ServerName<'static>>,
    /// The files read again after they changed, and those that did not read (the
    /// connectors before them stay).
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
}

impl fmt::Debug for UpstreamTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamTls")
            .field("id", &self.id)
            .field("settings", &self.settings)
            .finish()
    }
}

impl UpstreamTls {
    /// The name sent as SNI and verified for an endpoint at `ip`.
    fn name_for(&self, ip: IpAddr) -> ServerName<'static> {
        match &self.server_name {
            Some(n) => n.clone(),
            None => ServerName::IpAddress(ip.into()),
        }
    }

    /// Completes the handshake on `tcp` before `timer` fires (the rest of the connect
    /// timeout: it covers the TCP connect and the handshake together).
    pub async fn handshake(
        &self,
        alpn: Alpn,
        addr: SocketAddr,
        tcp: TcpStream,
        timeout: Duration,
        timer: Pin<&mut Sleep>,
    ) -> Result<TlsStream, ConnectError> {
        let connectors = self.connectors.load();
        let connector = match alpn {
            Alpn::Http1 => &connectors.http,
            Alpn::H2 => &connectors.h2,
            Alpn::Tcp => &connectors.tcp,
        };
        let name = self.name_for(addr.ip());
        let shown = name.to_str().into_owned();
        let handshake = connector.connect(name, tcp);
        let stream = tokio::select! {
            biased;
            r = handshake => r.map(Box::new).map_err(|e| ConnectError::Tls {
                addr,
                name: shown,
                source: HandshakeError::from(e),
            })?,
            _ = timer => return Err(ConnectError::HandshakeTimeout { addr, timeout }),
        };
        // A pool's `alpn` may offer more than the protocol it speaks, but an endpoint that
        // picks another would not understand it. None picked: the endpoint does not do
        // ALPN, and is taken to speak the pool's protocol.
        let speaks: &[u8] = match alpn {
            Alpn::Http1 => b"http/1.1",
            Alpn::H2 => b"h2",
            Alpn::Tcp => return Ok(stream),
        };
        match stream.get_ref().1.alpn_protocol() {
            Some(p) if p != speaks => Err(ConnectError::Alpn {
                addr,
                chosen: String::from_utf8_lossy(p).into_owned(),
                speaks: alpn,
            }),
            _ => Ok(stream),
        }
    }
}
