//! A failed try, as one value: what weir-pipeline's `http/tries.rs` decides retries from,
//! what the metrics and the access log count (`reason`), and what the log
//! line says (`cause`, rendered only when it is written).
//!
//! Whoever sees the failure fills in the facts it knows: the upstream
//! session knows whether the request may have reached the application and
//! whether the connection was a reused one; a codec knows its own error.
//! A new protocol adds a variant to [`ExchangeError`], never a new path
//! through the tries.

use std::fmt;
use std::time::{Duration, Instant};

use weir_codec::h1::client;
use weir_metrics::reason::Reason;
use weir_transport::ConnectError;

/// A limit on the wait for an answer across tries, as the user set it: the pool's
/// `request_timeout`, a gRPC call's `grpc-timeout`, a filter's `timeout`. The log names the
/// one that ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub name: &'static str,
    pub of: Duration,
}

impl Limit {
    pub fn request_timeout(of: Duration) -> Limit {
        Limit {
            name: "request_timeout",
            of,
        }
    }
}

/// A request's own deadline, which caps the pool's `request_timeout` and queue wait.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    pub at: Instant,
    pub limit: Limit,
}

impl Deadline {
    /// `limit` from `start`.
    pub fn after(start: Instant, name: &'static str, of: Duration) -> Deadline {
        Deadline {
            at: start + of,
            limit: Limit { name, of },
        }
    }
}

/// Why one try gave no answer.
#[derive(Debug)]
pub struct TryError {
    pub reason: Reason,
    pub side: Side,
    pub delivery: Delivery,
    /// The try used a pooled connection (not one opened for it).
    pub reused: bool,
    pub cause: Cause,
}

/// Whose failure it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client: its request body broke off or broke its framing.
    Client,
    /// The endpoint: refused, reset, timed out, answered garbage.
    Upstream,
    /// weir's own limits: no slot in time, no endpoint to pick.
    Weir,
}

/// Whether the endpoint's application can have acted on the request: what
/// decides if a request that is not idempotent may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Provably not: never sent, or refused unread (see
    /// `codec::h1::client::SendError::may_have_been_processed`).
    NotDelivered,
    /// Perhaps: it went out and no answer proves otherwise.
    MaybeDelivered,
}

/// What failed, typed; text is made only when the failure is logged.
#[derive(Debug)]
pub enum Cause {
    /// No slot on any endpoint (queue full or timed out, no endpoint): the
    /// answer's detail is the pool's to give (weir-pipeline's `http/forward/overflow.rs`), or the request's
    /// own deadline's when that cut the wait in the queue.
    NoSlot {
        cut_by: Option<Limit>,
    },
    Connect(ConnectError),
    Exchange(ExchangeError),
    /// No response head in time.
    Timeout {
        /// The per-try wait, from the request's last byte.
        limit: Duration,
        /// Set when it was a limit across tries that ran out (the pool's
        /// `request_timeout`, or the request's own deadline).
        ran_out: Option<Limit>,
    },
}

impl TryError {
    /// No slot could be had for the request.
    pub fn no_slot(reason: Reason) -> Self {
        TryError {
            reason,
            side: Side::Weir,
            delivery: Delivery::NotDelivered,
            reused: false,
            cause: Cause::NoSlot { cut_by: None },
        }
    }

    /// Connecting to the endpoint failed: nothing was sent.
    pub fn connect(e: ConnectError) -> Self {
        TryError {
            reason: Reason::ConnectFailed,
            side: Side::Upstream,
            delivery: Delivery::NotDelivered,
            reused: false,
            cause: Cause::Connect(e),
        }
    }

    /// Whether the endpoint's application cannot have seen the request.
    pub fn not_delivered(&self) -> bool {
        self.delivery == Delivery::NotDelivered
    }
}

impl fmt::Display for TryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Cause::NoSlot { .. } => Ok(()),
            Cause::Connect(e) => e.fmt(f),
            Cause::Exchange(e) => e.fmt(f),
            Cause::Timeout {
                ran_out: Some(l), ..
            } => write!(
                f,
                "no response within the {} ({:?}) across tries",
                l.name, l.of
            ),
            Cause::Timeout { limit, .. } => {
                write!(f, "no response within {limit:?} of the request's last byte")
            }
        }
    }
}

/// What a custom protocol's codec says went wrong (`ExchangeError::Custom`).
pub type CustomError = Box<dyn std::error::Error + Send + Sync>;

/// Why an exchange failed, in its codec's own terms.
#[derive(Debug)]
pub enum ExchangeError {
    H1(client::Error),
    H2(weir_codec::h2::exchange::Error),
    /// A custom protocol's codec (`custom.rs`).
    Custom(CustomError),
    /// The compress filter's encoder failed (weir's side, not the upstream's).
    Encode(std::io::Error),
}

impl fmt::Display for ExchangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExchangeError::H1(e) => e.fmt(f),
            ExchangeError::H2(e) => e.fmt(f),
            ExchangeError::Custom(e) => e.fmt(f),
            ExchangeError::Encode(e) => write!(f, "encoding the response: {e}"),
        }
    }
}

impl std::error::Error for ExchangeError {}
