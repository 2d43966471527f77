//! What a client connection's requests share.

use std::net::SocketAddr;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};

use crate::http::conn_state::ConnState;
use crate::http::headers::client_ip_value;
use crate::transport::TlsInfo;
use crate::Shared;

pub struct ConnCtx {
    pub shared: Arc<Shared>,
    pub slot: usize,
    pub client: SocketAddr,
    /// `client`'s IP as a header value, for X-Forwarded-For.
    pub client_ip: HeaderValue,
    pub state: Arc<ConnState>,
    /// The TLS session, on a TLS listener.
    pub tls: Option<Box<TlsInfo>>,
    /// Where the verified client certificate's subject goes upstream (any value
    /// the client sent under that name is removed).
    pub identity_header: Option<HeaderName>,
    /// Whether the peer is a proxy the listener trusts (its `trusted_proxies`), whose
    /// forwarded fields and request ids are believed. No listener has the list yet, so
    /// none is.
    pub trusted_peer: bool,
}

impl ConnCtx {
    pub fn new(shared: Arc<Shared>, slot: usize, client: SocketAddr) -> ConnCtx {
        ConnCtx {
            shared,
            slot,
            client,
            client_ip: client_ip_value(client.ip()),
            state: ConnState::new(),
            tls: None,
            identity_header: None,
            trusted_peer: false,
        }
    }

    /// `https` on a TLS connection, else `http`.
    pub fn proto(&self) -> &'static str {
        match self.tls {
            Some(_) => "https",
            None => "http",
        }
    }
}
