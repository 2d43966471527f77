//! What a client connection's owner (the pipeline's watch: timeouts, drains) and the codec
//! serving it share, and the limits the codec holds the client to: the same for every
//! protocol, so the owner never asks which one it is.

use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::OnceLock;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The drain state a connection shares with the task that runs it.
#[derive(Debug, Default)]
pub struct DrainFlags {
    /// A request is being answered: a drain must let it finish.
    pub busy: AtomicBool,
    /// Close after the current response (sent with `Connection: close`).
    pub draining: AtomicBool,
    /// The codec serving the connection ends it itself on a drain or an idle timeout,
    /// telling the client first (HTTP/2's GOAWAY): the owner cancels the drain or idle token
    /// and lets it, rather than setting `draining` or dropping the connection.
    pub goes_away: AtomicBool,
    /// What the owner told the connection (its bits are the owner's: a drain, an end),
    /// read by the connection's task each time it is woken.
    pub signal: AtomicU8,
    /// Cancelled by the owner when the connection was idle too long, for a codec that
    /// says goodbye first (HTTP/2's GOAWAY). Made by that codec: an HTTP/1.1 connection,
    /// which the owner simply drops, pays nothing for it.
    pub idle: OnceLock<CancellationToken>,
}

/// What a client may ask of weir on one connection.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of one request's head (HTTP/1.1) or decoded header list (HTTP/2's
    /// SETTINGS_MAX_HEADER_LIST_SIZE); a larger one gets 431 or a reset.
    pub max_head: usize,
    /// Requests open at once on a connection that carries several (HTTP/2's
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    pub max_streams: u32,
    /// A response the client gives no room for this long (a zero flow-control window) is
    /// reset: a client that stops reading must not hold its request's upstream connection
    /// and endpoint slot for ever.
    pub stall: Duration,
}
