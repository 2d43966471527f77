//! What a client connection's TLS session tells the layers above: the protocol version,
//! the server name the client asked for, the negotiated ALPN protocol, and the verified
//! client certificate's subject. Filled in once, by the handshake.

use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct TlsInfo {
    /// `"1.2"` or `"1.3"`.
    pub version: &'static str,
    pub sni: Option<Arc<str>>,
    pub alpn: Option<Box<[u8]>>,
    /// The client certificate's subject, when the client sent one that verified.
    pub client_subject: Option<Box<str>>,
    pub resumed: bool,
}
