//! The upstream session seam: what the pipeline and the health checks hold
//! to send one request to an endpoint and read its answer, whatever the
//! protocol. Nothing else in weir reaches an endpoint over a protocol.
//!
//! A session is checked out of the endpoint's idle store (or opened through
//! [`Dial`]), sends one request ([`Session::send`]), and the response body
//! ([`RecvBody`]) owns it until the answer is read; then it is given back
//! (`RecvBody::take_reusable`, checked in by weir-http's `body.rs`) or
//! dropped, which closes what the exchange left dirty.
//!
//! How sessions are reused is their protocol's to say (`SessionKind::reuse`): a
//! pooled one (HTTP/1.1) is the connection, checked out whole; a multiplexed
//! one (HTTP/2) is a claim on a [`Carrier`] the idle store keeps while it has
//! room, so "given back" means the claim ended and the connection stays.
//!
//! An enum, not a trait object: HTTP/1.1 (`h1.rs`) and HTTP/2 (`h2.rs`)
//! dispatch statically; a protocol from outside weir-codec is the one
//! `Custom` variant (`custom.rs`), behind a vtable.

use std::net::SocketAddr;
use std::time::Duration;

use http::request::Parts;
use http::uri::Scheme;
use http::Response;

use crate::body::RecvBody;
use crate::carrier::Carrier;
use crate::custom::{CustomSession, Outgoing};
use crate::error::TryError;
use crate::kind::SessionKind;
use crate::upbody::UpBody;
use crate::{h1, h2};
use weir_codec::added::Added;
use weir_codec::h1::client::{self, Connection};
use weir_codec::h2::keepalive::Ping;
use weir_codec::h2::{client as h2c, exchange as h2x};
use weir_codec::send::{HeadTimer, Payload};
use weir_transport::{ConnectError, TcpState, UpstreamStream, UpstreamTls};

/// One upstream connection (or stream) able to carry a request.
pub enum Session {
    H1(Connection),
    /// A stream on an HTTP/2 connection the endpoint's idle store shares.
    H2(h2c::Stream),
    /// A protocol from outside weir-codec (`custom.rs`).
    Custom(Box<dyn CustomSession>),
}

/// How to open a session to an endpoint: the pool's settings.
#[derive(Clone, Copy)]
pub struct Dial<'a> {
    pub addr: SocketAddr,
    /// Covers the TCP connect and any TLS handshake.
    pub timeout: Duration,
    pub tls: Option<&'a UpstreamTls>,
    pub protocol: SessionKind,
    /// A multiplexed protocol: the pool's `max_streams_per_conn`, `idle_timeout` and
    /// PING settings.
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
    /// Opens a session as `d` says: the pool's protocol chooses the codec. A
    /// multiplexed session is the first claim on a new connection, which the caller
    /// shares (`IdleConns::share`).
    pub async fn open(d: Dial<'_>) -> Result<Session, ConnectError> {
        let stream =
            UpstreamStream::connect(d.addr, d.timeout, d.tls, d.protocol.alpn(), d.proxy_header)
                .await?;
        let p = match d.protocol {
            SessionKind::Http(p) => p,
            SessionKind::Custom(o) => return o.open(stream, d).await,
        };
        if !p.is_h2() {
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

    /// The connection this session is a claim on, for a multiplexed protocol: the
    /// idle store keeps it for other requests' sessions.
    pub fn carrier(&self) -> Option<Carrier> {
        match self {
            Session::H1(_) => None,
            Session::H2(s) => Some(Carrier::H2(s.conn.clone())),
            Session::Custom(s) => s.carrier().map(Carrier::Custom),
        }
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
    /// kept the connection idle before it did (see `Connection::closed_after`).
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
            Session::Custom(s) => {
                let req = Outgoing {
                    parts,
                    added,
                    payload,
                    timer,
                    reused,
                };
                s.send(req).await
            }
        }
    }
}
