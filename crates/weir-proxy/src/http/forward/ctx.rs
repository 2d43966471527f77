//! What a client connection's requests share.

use std::net::SocketAddr;
use std::sync::Arc;

use http::HeaderValue;

use crate::http::conn_state::ConnState;
use crate::Shared;

pub struct ConnCtx {
    pub shared: Arc<Shared>,
    pub slot: usize,
    pub client: SocketAddr,
    /// `client`'s IP as a header value, for X-Forwarded-For.
    pub client_ip: HeaderValue,
    pub state: Arc<ConnState>,
}
