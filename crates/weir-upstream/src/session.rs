//! The upstream session seam: what the pipeline and the health checks hold
//! to send one request to an endpoint and read its answer, whatever the
//! protocol. Nothing else in weir reaches an endpoint over a protocol.
//!
//! A session is checked out of the endpoint's idle store (or opened through
//! `Dial`, `kind.rs`), sends one request (`Session::send`, `send.rs`), and the response
//! body (`UpstreamResponseBody`, `body.rs`) owns it until the answer is read; then it is
//! given back (`UpstreamResponseBody::take_reusable`, checked in by weir-http's `body.rs`)
//! or dropped, which closes what the exchange left dirty.
//!
//! How sessions are reused is their protocol's to say (`SessionKind::reuse`): a
//! pooled one (HTTP/1.1) is the connection, checked out whole; a multiplexed
//! one (HTTP/2) is a claim on a `Carrier` (`carrier.rs`) the idle store keeps while it
//! has room, so "given back" means the claim ended and the connection stays.
//!
//! An enum, not a trait object: HTTP/1.1 (`h1.rs`) and HTTP/2 (`h2.rs`)
//! dispatch statically; a protocol from outside weir-codec is the one
//! `Custom` variant (`custom.rs`), behind a vtable.
//!
//! This file holds the session and what it is asked while idle; what it is a claim on is
//! `carrier.rs`'s, sending on it `send.rs`'s: each of those knows the session, and the
//! session knows neither.

use std::time::Duration;

use crate::custom::CustomSession;
use crate::kind::{Dial, SessionKind};
use weir_codec::h1::client::H1ClientConnection;
use weir_codec::h2::client as h2c;
use weir_transport::{ConnectError, TcpState, UpstreamStream};

/// One upstream connection (or stream) able to carry a request.
pub enum Session {
    H1(H1ClientConnection),
    /// A stream on an HTTP/2 connection the endpoint's idle store shares.
    H2(h2c::Stream),
    /// A protocol from outside weir-codec (`custom.rs`).
    Custom(Box<dyn CustomSession>),
}

impl Session {
    /// Opens a session as `d` says: the pool's protocol chooses the codec. A
    /// multiplexed session is the first claim on a new connection, which the caller
    /// shares (`IdleConns::share`).
    pub async fn open(d: Dial<'_>) -> Result<Session, ConnectError> {
        let stream =
            UpstreamStream::connect(d.addr, d.timeout, d.tls, d.protocol.alpn(), d.proxy_header)
                .await?;
        let p = match d.protocol {
            SessionKind::Http(p) => p,
            SessionKind::Custom(o) => return o.open(stream, d).await.map(Session::Custom),
        };
        if !p.is_h2() {
            return Ok(Session::H1(H1ClientConnection::new(stream)));
        }
        let tls = d.tls.map_or(0, |t| t.id);
        Ok(Session::H2(h2c::handshake(
            stream,
            d.max_streams,
            tls,
            d.idle_timeout,
            d.ping.cloned(),
        )))
    }

    /// Whether the session can no longer carry a request (the backend
    /// closed it or sent bytes nobody asked for). Never blocks.
    pub fn is_closed(&self) -> bool {
        match self {
            Session::H1(c) => c.is_closed(),
            Session::H2(s) => s.conn.is_dead(),
            Session::Custom(s) => s.is_closed(),
        }
    }

    /// What the kernel knows about the session's TCP connection (HTTP/1.1; an HTTP/2
    /// stream's connection is shared and not pooled this way).
    pub fn tcp_state(&self) -> Option<TcpState> {
        match self {
            Session::H1(c) => c.tcp_state(),
            Session::H2(_) => None,
            Session::Custom(s) => s.tcp_state(),
        }
    }

    /// For a session pooled `pooled_for` ago that the backend closed: how long it had
    /// kept the connection idle before it did (see `H1ClientConnection::closed_after`).
    pub fn closed_after(&self, pooled_for: Duration) -> Option<Duration> {
        match self {
            Session::H1(c) => c.closed_after(pooled_for),
            Session::H2(_) => None,
            Session::Custom(s) => s.closed_after(pooled_for),
        }
    }

    /// Gives back what an idle session need not hold (an HTTP/1.1 connection's empty read
    /// buffer; an HTTP/2 stream holds none).
    pub fn release_idle(&mut self) {
        match self {
            Session::H1(c) => c.release_idle(),
            Session::H2(_) => {}
            Session::Custom(s) => s.release_idle(),
        }
    }
}
