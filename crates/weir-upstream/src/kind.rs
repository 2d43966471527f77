//! The kind of session a pool opens to its endpoints (its protocol, as the
//! session seam knows it): which code opens its sessions, and how they are
//! reused ([`Reuse`]), the one property the exchange and the idle store ask
//! of a protocol.
//!
//! HTTP/1.1 and HTTP/2 are [`SessionKind::Http`] and dispatch statically (they
//! are measured per request); any other protocol is [`SessionKind::Custom`], an
//! [`Opener`] (`custom.rs`) reached through a vtable. A protocol in the tree
//! registers in [`SessionKind::of`], one arm mapping its config value to its
//! opener; one from outside sets a pool's `protocol` to `SessionKind::Custom`.

use std::fmt;

use weir_config::UpstreamProtocol;
use weir_transport::Alpn;

use crate::custom::Opener;

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
