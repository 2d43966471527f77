//! A connection that carries many sessions at once (a multiplexed protocol's,
//! `Reuse::Multiplexed`): what the idle store keeps while it has room, and
//! claims sessions on. HTTP/2's connection, or a custom protocol's. Which carrier a
//! session is a claim on is asked here too (`Session::carrier`), so that the session
//! (`session.rs`) need not know carriers.

use std::sync::Arc;
use std::time::Instant;

use crate::custom::CustomCarrier;
use crate::session::Session;
use weir_codec::h2::client as h2c;

pub enum Carrier {
    H2(Arc<h2c::H2UpstreamConnection>),
    Custom(Arc<dyn CustomCarrier>),
}

impl Carrier {
    /// A new session on it, if it is alive and has room for one.
    #[inline]
    pub fn claim(&self) -> Option<Session> {
        match self {
            Carrier::H2(c) => c.claim().map(Session::H2),
            Carrier::Custom(c) => c.clone().claim().map(Session::Custom),
        }
    }

    pub fn is_dead(&self) -> bool {
        match self {
            Carrier::H2(c) => c.is_dead(),
            Carrier::Custom(c) => c.is_dead(),
        }
    }

    pub fn born(&self) -> Instant {
        match self {
            Carrier::H2(c) => c.born,
            Carrier::Custom(c) => c.born(),
        }
    }

    /// Sessions claimed on it so far.
    pub fn uses(&self) -> u32 {
        match self {
            Carrier::H2(c) => c.uses(),
            Carrier::Custom(c) => c.uses(),
        }
    }

    /// The `UpstreamTls::id` it was opened with (0: plain).
    pub fn tls(&self) -> u64 {
        match self {
            Carrier::H2(c) => c.tls,
            Carrier::Custom(c) => c.tls(),
        }
    }

    /// Whether no session is open on it.
    pub fn is_idle(&self) -> bool {
        match self {
            Carrier::H2(c) => c.is_idle(),
            Carrier::Custom(c) => c.is_idle(),
        }
    }

    /// Whether it has been idle past its idle timeout at `now_ms`.
    pub fn idle_expired(&self, now_ms: u64) -> bool {
        match self {
            Carrier::H2(c) => c.idle_expired(now_ms),
            Carrier::Custom(c) => c.idle_expired(now_ms),
        }
    }
}

impl Session {
    /// The connection this session is a claim on, for a multiplexed protocol: the
    /// idle store keeps it for other requests' sessions.
    pub fn carrier(&self) -> Option<Carrier> {
        match self {
            Session::H1(_) => None,
            Session::H2(s) => Some(Carrier::H2(s.conn.clone())),
            Session::Custom(s) => s.carrier().map(Carrier::Custom),
        }
    }
}
