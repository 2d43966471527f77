//! What weir knows of a client connection, read by its requests' forwarding and route
//! filters: who the client is (behind PROXY protocol), where it connected, whether its
//! forwarding headers are believed, its TLS session, and the fields weir tells the upstream
//! about it in.

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use http::{HeaderName, HeaderValue};
use weir_transport::proxy_protocol::Tlvs;
use weir_transport::TlsInfo;

use crate::conn_state::ConnState;
use crate::headers::{client_ip_value, forwarded_value, Forwarding};

pub struct ConnInfo {
    /// The peer, or the source a PROXY protocol header named.
    pub client: SocketAddr,
    /// `client`'s IP as a header value, for X-Forwarded-For.
    pub client_ip: HeaderValue,
    /// The address the client connected to (a PROXY header's destination, else weir's
    /// side of the socket), for the PROXY headers of `send_proxy` pools.
    pub local: SocketAddr,
    /// The TLVs of the connection's v2 PROXY header, passed on in those headers.
    pub proxy_tlvs: Option<Tlvs>,
    /// The listener's `trusted_proxies`, when `client` is one of them: its requests'
    /// `X-Forwarded-For` is believed and appended to (`client_addr.rs`); otherwise
    /// weir's own replaces the client's.
    pub trusted: Option<Arc<[weir_config::Cidr]>>,
    pub state: Arc<ConnState>,
    /// The TLS session, on a TLS listener (boxed with what only TLS connections need: a
    /// plain connection's context stays small).
    pub tls: Option<Box<ClientTls>>,
    /// This hop's `Forwarded` element, made at the first request (after `tls` is known).
    forwarded: OnceLock<HeaderValue>,
}

/// A TLS connection's session, and where its client certificate goes upstream.
pub struct ClientTls {
    pub info: TlsInfo,
    /// Where the verified client certificate's subject goes upstream (any value
    /// the client sent under that name is removed).
    pub identity_header: Option<HeaderName>,
    /// Where its `x-forwarded-client-cert` element goes (`client_cert_header`), the same way.
    pub cert_header: Option<HeaderName>,
}

impl Deref for ClientTls {
    type Target = TlsInfo;

    fn deref(&self) -> &TlsInfo {
        &self.info
    }
}

impl ConnInfo {
    pub fn new(client: SocketAddr, local: SocketAddr) -> ConnInfo {
        ConnInfo {
            client,
            client_ip: client_ip_value(client.ip()),
            local,
            trusted: None,
            state: ConnState::new(),
            tls: None,
            proxy_tlvs: None,
            forwarded: OnceLock::new(),
        }
    }

    /// What the upstream is told about the client (`headers::add_forwarded`).
    pub fn forwarding(&self) -> Forwarding<'_> {
        Forwarding {
            client: &self.client_ip,
            forwarded: self
                .forwarded
                .get_or_init(|| forwarded_value(&self.client_ip, self.proto())),
            proto: self.proto(),
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
