//! The kind of session a pool opens to its endpoints (its protocol, as the
//! session seam knows it): which code opens its sessions, and how they are
//! reused ([`Reuse`]), the one property the exchange and the idle store ask
//! of a protocol.
//!
//! HTTP/1.1 and HTTP/2 are [`SessionKind::Http`] and dispatch statically (they
//! are measured per request); any other protocol is [`SessionKind::Custom`], an
//! [`Opener`] (below; the sessions it makes are `custom.rs`'s) reached through a
//! vtable. A protocol in the tree registers in [`SessionKind::of`], one arm mapping its
//! config value to its opener; one from outside sets a pool's `protocol` to
//! `SessionKind::Custom`.
//!
//! How a session is opened ([`Dial`]: the pool's settings, its kind among them) lives
//! here too: a custom kind's [`Opener`] is handed one, so the three are one knot of
//! types, and the session (`session.rs`) opens through them.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use weir_codec::h2::keepalive::Ping;
use weir_config::UpstreamProtocol;
use weir_transport::{Alpn, ConnectError, UpstreamStream, UpstreamTls};

use crate::custom::CustomSession;

/// How the sessions of a protocol are reused between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// One request at a time per connection (HTTP/1.1-like): a session whose
    /// answer was read cleanly goes back to the idle store and is checked out
    /// whole by the next request.
    Pooled,
    /// Many requests at once on one connection (HTTP/2-like): the connection
    /// stays in the idle store while it has room, and each request claims a
    /// session (a stream) on it.
    Multiplexed,
}

/// What a pool speaks to its endpoints.
#[derive(Clone, Copy)]
pub enum SessionKind {
    /// weir's own HTTP/1.1 and HTTP/2 clients (weir-codec).
    Http(UpstreamProtocol),
    /// A protocol from outside weir-codec: its opener makes its sessions.
    Custom(&'static dyn Opener),
}

impl SessionKind {
    /// The protocol a pool's config names. A protocol added to the tree is one arm here.
    pub fn of(p: UpstreamProtocol) -> SessionKind {
        SessionKind::Http(p)
    }

    /// Whether its sessions are pooled or multiplexed.
    #[inline]
    pub fn reuse(self) -> Reuse {
        match self {
            SessionKind::Http(p) if p.is_h2() => Reuse::Multiplexed,
            SessionKind::Http(_) => Reuse::Pooled,
            SessionKind::Custom(o) => o.reuse(),
        }
    }

    /// What a TLS connection for it offers by ALPN.
    pub fn alpn(self) -> Alpn {
        match self {
            SessionKind::Http(p) => Alpn::of(p),
            SessionKind::Custom(o) => o.alpn(),
        }
    }

    /// Whether it is HTTP/1.1, whose connections a health check closes
    /// (`connection: close`).
    pub fn is_http1(self) -> bool {
        matches!(self, SessionKind::Http(UpstreamProtocol::Http1))
    }
}

impl From<UpstreamProtocol> for SessionKind {
    fn from(p: UpstreamProtocol) -> SessionKind {
        SessionKind::of(p)
    }
}

/// Two custom protocols are the same when they have the same opener.
impl PartialEq for SessionKind {
    fn eq(&self, other: &SessionKind) -> bool {
        match (self, other) {
            (SessionKind::Http(a), SessionKind::Http(b)) => a == b,
            (SessionKind::Custom(a), SessionKind::Custom(b)) => std::ptr::addr_eq(*a, *b),
            _ => false,
        }
    }
}

impl fmt::Debug for SessionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionKind::Http(p) => p.fmt(f),
            SessionKind::Custom(o) => write!(f, "Custom({})", o.name()),
        }
    }
}

/// A custom session being opened.
pub type Opening<'a> =
    Pin<Box<dyn Future<Output = Result<Box<dyn CustomSession>, ConnectError>> + Send + 'a>>;

/// How a custom protocol's sessions are made.
pub trait Opener: Send + Sync + 'static {
    /// For logs and `Debug`.
    fn name(&self) -> &'static str;

    fn reuse(&self) -> Reuse;

    /// What its TLS connections offer by ALPN (the pool's `alpn` list, by default).
    fn alpn(&self) -> Alpn {
        Alpn::Tcp
    }

    /// A session on `stream`, connected (and TLS-wrapped) as `dial` says. A
    /// multiplexed protocol's is the first on a new `CustomCarrier`, which
    /// [`CustomSession::carrier`] gives the idle store.
    fn open<'a>(&'a self, stream: UpstreamStream, dial: Dial<'a>) -> Opening<'a>;
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
