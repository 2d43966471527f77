//! What a client connection's requests share: what weir knows of the connection
//! (`ConnInfo`), the running config they are routed by, the listener's slot in it, and
//! the drain state its watch and codec share, and the listener's limits for the client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::snapshot::SnapshotCell;
use weir_codec::server::DrainFlags;
use weir_http::conn_info::ConnInfo;

/// The listener's limits for a client connection.
#[derive(Debug, Clone, Copy)]
pub struct ClientLimits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_header_bytes: usize,
}

pub struct ConnCtx {
    pub shared: Arc<SnapshotCell>,
    pub slot: usize,
    pub conn: ConnInfo,
    /// What the connection's watch (drains, timeouts) and its codec share.
    pub ctl: DrainFlags,
    /// The listener's limits for the client (kept here, not in the connection's waiting
    /// state: see `conn::serve`).
    pub limits: ClientLimits,
}

impl ConnCtx {
    pub fn new(
        shared: Arc<SnapshotCell>,
        slot: usize,
        client: SocketAddr,
        local: SocketAddr,
        limits: ClientLimits,
    ) -> ConnCtx {
        ConnCtx {
            shared,
            slot,
            conn: ConnInfo::new(client, local),
            ctl: DrainFlags::default(),
            limits,
        }
    }
}
