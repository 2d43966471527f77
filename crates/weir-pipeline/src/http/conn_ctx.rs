//! What a client connection's requests share: what weir knows of the connection
//! (`ConnInfo`), the running config they are routed by, the listener's slot in it, and
//! the drain state its watch and codec share, and the listener's limits for the client.

use std::net::SocketAddr;
use std::sync::Arc;

pub use crate::snapshot::ClientLimits;
use crate::snapshot::SnapshotCell;
use weir_codec::server::DrainFlags;
use weir_http::conn_info::ConnInfo;
use weir_http::conn_state::{ConnState, StateHome};

/// Kept at most 240 bytes, so that with its `Arc`'s counts it fills a 256-byte block:
/// every idle connection has one (`memory::idle_keep_alive_connections_*`).
pub struct ConnCtx {
    pub shared: Arc<SnapshotCell>,
    pub slot: usize,
    pub conn: ConnInfo,
    /// What the connection's watch (drains, timeouts) and its codec share.
    pub ctl: DrainFlags,
    /// The listener's limits for the client (kept here, not in the connection's waiting
    /// state: see `conn::serve`; shared by the listener's connections).
    pub limits: Arc<ClientLimits>,
}

impl ConnCtx {
    pub fn new(
        shared: Arc<SnapshotCell>,
        slot: usize,
        client: SocketAddr,
        local: SocketAddr,
        limits: Arc<ClientLimits>,
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

impl StateHome for ConnCtx {
    fn conn_state(&self) -> &ConnState {
        &self.conn.state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every idle connection holds one: 240 bytes and its `Arc`'s 16 fill a 256-byte
    /// allocator block, and a field more would take the next (320).
    #[test]
    fn a_connection_context_fits_its_block() {
        assert!(
            std::mem::size_of::<ConnCtx>() <= 240,
            "{}",
            std::mem::size_of::<ConnCtx>()
        );
    }
}
