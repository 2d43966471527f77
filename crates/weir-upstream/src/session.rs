//! The upstream session seam: what the pipeline holds to send one request
//! to an endpoint and read its answer, whatever the protocol.
//!
//! A session is checked out of the endpoint's idle store (or opened), sends
//! one request ([`Session::send`]), and the response body ([`RecvBody`])
//! owns it until the answer is read; then it is given back (`RecvBody::
//! take_reusable`, checked in by `http/body.rs`) or dropped, which closes
//! what the exchange left dirty.
//!
//! An enum, not a trait object: the request path dispatches statically,
//! and each protocol is one variant with its code in a file of its own
//! (`h1.rs` for weir's HTTP/1.1 client). A multiplexed protocol (HTTP/2)
//! fits the same shape: its variant is a stream bound to a shared
//! connection; the idle store keeps the shared connection while it has
//! room for streams and checkout binds a new stream to it, so "given back"
//! means the stream ended and the connection stays where it was.

use std::net::SocketAddr;
use std::time::Duration;

use http::request::Parts;
use http::uri::Scheme;
use http::Response;
use weir_config::UpstreamProtocol;

use crate::body::RecvBody;
use crate::error::TryError;
use crate::upbody::UpBody;
use crate::{h1, h2};
use weir_codec::added::Added;
use weir_codec::h1::client::{self, Connection};
use weir_codec::h2::keepalive::Ping;
use weir_codec::h2::{client as h2c, exchange as h2x};
use weir_codec::send::{HeadTimer, Payload};
use weir_transport::{Alpn, ConnectError, TcpState, UpstreamStream, UpstreamTls};

/// One upstream connection (or stream) able to carry a request.
pub enum Session {
    H1(Connection),
    /// A stream on an HTTP/2 connection the endpoint's idle store shares.
    H2(h2c::Stream),
}

/// How to open a session to an endpoint: the pool's settings.
#[derive(Clone, Copy)]
pub struct Dial<'a> {
    pub addr: SocketAddr,
    /// Covers the TCP connect and any TLS handshake.
    pub timeout: Duration,
    pub tls: Option<&'a UpstreamTls>,
    pub protocol: UpstreamProtocol,
    /// HTTP/2: the pool's `max_streams_per_conn`, `idle_timeout` and PING settings.
    pub max_streams: u32,
    pub idle_timeout: Duration,
    pub ping: Option<&'a Ping>,
    /// Written first, before any TLS (a `send_proxy` pool's PROXY header).
    pub proxy_header: Option<&'a [u8]>,
}

/// A send that failed: what the tries need to know, and, when not a byte
/// went out (the connection was already dead), the payload back so the
/// request can go out on another session.
pub struct SendFailed {
    pub error: TryError,
    pub unsent: Option<Payload<UpBody>>,
    /// Whether any byte of an answer had arrived.
    pub answered: bool,
    /// For a request that went out unanswered: how long the backend had been
    /// silent when it went, by the kernel's clock (HTTP/1.1 over plain TCP).
    pub silent_for: Option<Duration>,
}

impl Session {
    /// Opens a session as `d` says: the pool's protocol chooses the codec. An HTTP/2
    /// session is the first stream of a new connection, which the caller shares
    /// (`IdleConns::share`).
    pub async fn open(d: Dial<'_>) -> Result<Session, ConnectError> {
        let stream = UpstreamStream::connect(
            d.addr,
            d.timeout,
            d.tls,
            Alpn::of(d.protocol),
            d.proxy_header,
        )
        .await?;
        if !d.protocol.is_h2() {
            return Ok(Session::H1(Connection::new(stream)));
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
        }
    }

    /// What the kernel knows about the session's TCP connection (HTTP/1.1; an HTTP/2
    /// stream's connection is shared and not pooled this way).
    pub fn tcp_state(&self) -> Option<TcpState> {
        match self {
            Session::H1(c) => c.tcp_state(),
            Session::H2(_) => None,
        }
    }

    /// For a session pooled `pooled_for` ago that the backend closed: how long it had
    /// kept the connection idle before it did (see `Connection::closed_after`).
    pub fn closed_after(&self, pooled_for: Duration) -> Option<Duration> {
        match self {
            Session::H1(c) => c.closed_after(pooled_for),
            Session::H2(_) => None,
        }
    }

    /// Gives back what an idle session need not hold (an HTTP/1.1 connection's empty read
    /// buffer; an HTTP/2 stream holds none).
    pub fn release_idle(&mut self) {
        if let Session::H1(c) = self {
            c.release_idle();
        }
    }

    /// Sends the request and waits for the response head (see
    /// [`HeadTimer`]); the body that comes back owns the session.
    pub async fn send(
        self,
        parts: &Parts,
        added: &Added<'_>,
        payload: Payload<UpBody>,
        timer: HeadTimer,
        reused: bool,
    ) -> Result<Response<RecvBody>, SendFailed> {
        match self {
            Session::H1(c) => client::send_into(c, parts, added, payload, timer)
                .await
                .map_err(|e| h1::failed(e, timer.limit, reused)),
            Session::H2(s) => {
                let scheme = match s.conn.tls {
                    0 => Scheme::HTTP,
                    _ => Scheme::HTTPS,
                };
                h2x::send_into(s, parts, added, payload, timer, &scheme)
                    .await
                    .map_err(|e| h2::failed(e, timer.limit, reused))
            }
        }
    }
}
