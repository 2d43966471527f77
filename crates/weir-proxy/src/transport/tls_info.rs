//! What a stream's TLS session tells the layers above (protocol version,
//! SNI, ALPN, the client's certificate): nothing yet, as weir speaks plain
//! TCP only. An empty enum, so `tls()` is `None` at no cost; TLS (issue 17)
//! makes it a struct filled in by the handshake.

#[derive(Debug)]
pub enum TlsInfo {}
