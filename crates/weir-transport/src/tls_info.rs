//! What a client connection's TLS session tells the layers above: the protocol version,
//! the server name the client asked for, the negotiated ALPN protocol, and the verified
//! client certificate's identity. Filled in once, by the handshake.

use std::sync::Arc;

use http::HeaderValue;

#[derive(Debug, Clone)]
pub struct TlsInfo {
    /// `"1.2"` or `"1.3"`.
    pub version: &'static str,
    pub sni: Option<Arc<str>>,
    pub alpn: Option<Box<[u8]>>,
    /// The client certificate's identity, when the client sent one that verified.
    pub client: Option<Arc<ClientCert>>,
    pub resumed: bool,
}

/// A verified client certificate as backends are told of it (`weir_tls::ClientIdentity`),
/// made once per connection, ready to be copied into each request.
#[derive(Debug)]
pub struct ClientCert {
    /// The subject, RFC 4514 (`client_identity_header`).
    pub subject: HeaderValue,
    /// `Hash=...;Subject="...";URI=...;DNS=...` (`client_cert_header`).
    pub forwarded: HeaderValue,
}

impl ClientCert {
    /// From the leaf's DER; `None` if it does not parse. Both values are escaped to visible
    /// ASCII, so they are header values.
    pub fn of(der: &[u8]) -> Option<(ClientCert, bool)> {
        let id = weir_tls::ClientIdentity::of(der)?;
        let cert = ClientCert {
            subject: HeaderValue::from_str(&id.subject).ok()?,
            forwarded: HeaderValue::from_str(&id.forwarded_client_cert()).ok()?,
        };
        Some((cert, id.had_control))
    }
}
