//! What weir knows of a client connection, read by its requests' forwarding and route
//! filters: who the client is (behind PROXY protocol), where it connected, whether its
//! forwarding headers are believed, its TLS session, and the fields weir tells the upstream
//! about it in.

use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;

use http::{HeaderName, HeaderValue};
use weir_transport::proxy_protocol::Tlvs;
use weir_transport::TlsInfo;

use crate::conn_state::ConnState;
use crate::headers::{client_ip_value, client_values, Forwarding};

pub struct ConnInfo {
    /// The peer, or the source a PROXY protocol header named.
    pub client: SocketAddr,
    /// `client`'s IP as a header value, for X-Forwarded-For.
    pub client_ip: HeaderValue,
    /// The address the client connected to (a PROXY header's destination, else weir's
    /// side of the socket), for the PROXY headers of `send_proxy` pools.
    pub local: SocketAddr,
    /// The TLVs of the connection's v2 PROXY header, passed on in those headers (boxed:
    /// few connections have them, and every connection pays for this field).
    pub proxy_tlvs: Option<Box<Tlvs>>,
    /// The listener's `trusted_proxies`, when `client` is one of them: its requests'
    /// `X-Forwarded-For` is believed and appended to (`client_addr.rs`); otherwise
    /// weir's own replaces the client's.
    pub trusted: Option<Arc<[weir_config::Cidr]>>,
    pub state: ConnState,
    /// The TLS session, on a TLS listener (boxed with what only TLS connections need: a
    /// plain connection's context stays small).
    pub tls: Option<Box<ClientTls>>,
    /// This hop's `Forwarded` element, made with the connection and again when its TLS
    /// session is set (made once, rather than at its first request: a `OnceLock` would
    /// cost every connection 8 bytes more).
    forwarded: HeaderValue,
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
        let (client_ip, forwarded) = client_values(&client_ip_value(client.ip()), "http");
        ConnInfo {
            client,
            forwarded,
            client_ip,
            local,
            trusted: None,
            state: ConnState::new(),
            tls: None,
            proxy_tlvs: None,
        }
    }

    /// The connection's TLS session, once its handshake is done.
    pub fn set_tls(&mut self, tls: ClientTls) {
        self.tls = Some(Box::new(tls));
        (self.client_ip, self.forwarded) = client_values(&self.client_ip, self.proto());
    }

    /// What the upstream is told about the client (`headers::add_forwarded`).
    pub fn forwarding(&self) -> Forwarding<'_> {
        Forwarding {
            client: &self.client_ip,
            forwarded: &self.forwarded,
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
