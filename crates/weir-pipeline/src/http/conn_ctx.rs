//! What a client connection's requests share: what weir knows of the connection
//! (`ConnInfo`), the running config they are routed by, and the listener's slot in it.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::snapshot::SnapshotCell;
use weir_http::conn_info::ConnInfo;

pub struct ConnCtx {
    pub shared: Arc<SnapshotCell>,
    pub slot: usize,
    pub conn: ConnInfo,
}

impl ConnCtx {
    pub fn new(
        shared: Arc<SnapshotCell>,
        slot: usize,
        client: SocketAddr,
        local: SocketAddr,
    ) -> ConnCtx {
        ConnCtx {
            shared,
            slot,
            conn: ConnInfo::new(client, local),
        }
    }
}
