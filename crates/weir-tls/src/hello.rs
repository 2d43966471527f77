//! The server name in a TLS ClientHello, read from bytes peeked off a connection that is not
//! decrypted (SNI passthrough on tcp listeners: the bytes stay in the socket and are relayed
//! as they are). rustls parses the hello; nothing here reads TLS records by hand.

use rustls::server::Acceptor;

#[derive(Debug, PartialEq, Eq)]
pub enum Hello {
    /// A complete ClientHello naming this server (lowercase, as rustls gives it).
    Sni(String),
    /// A complete ClientHello without a server name.
    NoSni,
    /// The bytes so far are the start of a ClientHello; peek again when more arrive.
    Incomplete,
    /// Not a TLS ClientHello.
    NotTls,
}

/// What the `peeked` bytes (from the first byte of the connection) hold.
pub fn peek(peeked: &[u8]) -> Hello {
    let mut acceptor = Acceptor::default();
    let mut rd = peeked;
    while !rd.is_empty() {
        match acceptor.read_tls(&mut rd) {
            Ok(0) | Err(_) => return Hello::NotTls,
            Ok(_) => {}
        }
    }
    match acceptor.accept() {
        Ok(Some(accepted)) => match accepted.client_hello().server_name() {
            Some(name) => Hello::Sni(name.to_owned()),
            None => Hello::NoSni,
        },
        Ok(None) => Hello::Incomplete,
        Err(_) => Hello::NotTls,
    }
}
