//! The open variant of the session seam: what a protocol outside weir-codec
//! implements to be an upstream protocol (as pingora's custom client
//! session), so that pools, balancing, capacity, the idle store, health
//! checks and the tries serve it as they serve HTTP.
//!
//! A new upstream protocol adds, in files of its own:
//! - an `Opener` (`kind.rs`, beside the `SessionKind` that holds it): how a connected
//!   stream becomes a session, and whether sessions are pooled or multiplexed (`Reuse`);
//! - a [`CustomSession`]: one request sent, its answer's head back as an
//!   `http::Response` whose body is a [`CustomBody`] that owns the session
//!   until read (then hands it back, when pooled);
//! - for a multiplexed protocol, a [`CustomCarrier`]: the shared connection
//!   the idle store keeps while it has room, claiming sessions on it;
//!
//! and registers with ONE line: an arm in `SessionKind::of` (`kind.rs`) for a
//! protocol in the tree, or `pool.protocol = SessionKind::Custom(&OPENER)` from
//! outside (see `tests/toy_protocol.rs` and `tests/toy_multiplexed.rs`). Its failures are
//! `ExchangeError::Custom`, told as a `TryError` with the facts the tries decide on.
//!
//! The traits speak of custom types only (a boxed `CustomSession`, a boxed `CustomBody`),
//! and the seam's enums wrap them (`Session::Custom`, `UpstreamResponseBody::Custom`): so
//! this file sits below the sessions, bodies and carriers, and knows none of them.
//!
//! Trait objects behind one enum variant each: HTTP/1.1 and HTTP/2 keep their
//! static dispatch and pay one match arm they never take. (pingora makes its
//! custom session a type parameter of the session enum; a boxed one here keeps
//! endpoints, pools and the pipeline free of that parameter.)

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::request::Parts;
use http::Response;
use http_body::Body;

pub use crate::error::CustomError;
use crate::send_failed::SendFailed;
use crate::upbody::UpBody;
use weir_codec::added::Added;
use weir_codec::send::{HeadTimer, Payload};
use weir_transport::TcpState;

/// A request sent, awaiting its answer's head.
pub type Awaiting<'a> =
    Pin<Box<dyn Future<Output = Result<Response<Box<dyn CustomBody>>, SendFailed>> + Send + 'a>>;

/// One request to send on a custom session.
pub struct Outgoing<'a> {
    pub parts: &'a Parts,
    /// Forwarding fields written after `parts`' own.
    pub added: &'a Added<'a>,
    pub payload: Payload<UpBody>,
    pub timer: HeadTimer,
    /// A pooled session (not one opened for this request): for [`TryError::reused`].
    pub reused: bool,
}

/// A custom protocol's session: one connection (pooled) or one claim on a
/// carrier (multiplexed).
pub trait CustomSession: Send + Sync + 'static {
    /// Sends the request and waits for the answer's head (no longer than the
    /// timer allows); the body that comes back owns the session.
    fn send<'a>(self: Box<Self>, req: Outgoing<'a>) -> Awaiting<'a>;

    /// Whether it can no longer carry a request. Never blocks.
    fn is_closed(&self) -> bool;

    /// The kernel's view of its TCP connection, if it has one of its own.
    fn tcp_state(&self) -> Option<TcpState> {
        None
    }

    /// For a pooled session the backend closed: how long it had been idle by the
    /// kernel's clock, when that differs from weir's `pooled_for`.
    fn closed_after(&self, _pooled_for: Duration) -> Option<Duration> {
        None
    }

    /// Gives back memory an idle session need not hold.
    fn release_idle(&mut self) {}

    /// The connection it is a claim on, for a multiplexed protocol.
    fn carrier(&self) -> Option<Arc<dyn CustomCarrier>> {
        None
    }
}

/// A custom session's answer body.
pub trait CustomBody:
    Body<Data = Bytes, Error = CustomError> + Send + Sync + Unpin + 'static
{
    /// The session, once the answer was read cleanly and it can carry another
    /// request (a pooled protocol's; a multiplexed one's claim just ends).
    fn take_reusable(&mut self) -> Option<Box<dyn CustomSession>> {
        None
    }
}

/// A custom protocol's connection that carries many sessions at once.
pub trait CustomCarrier: Send + Sync + 'static {
    /// A new session on it, if it has room (the session keeps the carrier).
    fn claim(self: Arc<Self>) -> Option<Box<dyn CustomSession>>;
    /// It can carry no new session (closed, or told to go away).
    fn is_dead(&self) -> bool;
    fn born(&self) -> Instant;
    /// Sessions claimed on it so far.
    fn uses(&self) -> u32;
    /// The `UpstreamTls::id` it was opened with (0: plain).
    fn tls(&self) -> u64;
    /// It carries no session now.
    fn is_idle(&self) -> bool;
    /// It has been idle past the pool's `idle_timeout` (`now_ms`: `clock::now_ms`).
    fn idle_expired(&self, now_ms: u64) -> bool;
}
