//! The server name in a TLS ClientHello, read from bytes peeked off a connection that is not
//! decrypted (SNI passthrough on tcp listeners: the bytes stay in the socket and are relayed
//! as they are). rustls parses the hello; nothing here reads TLS records by hand.

use rustls::server::Acceptor;

/// A fatal `unrecognized_name` (112) alert in a plaintext record (content type 21, version
/// 3.3, length 2; RFC 8446 §6, RFC 6066 §3), for refusing a ClientHello by its server name
/// when no rustls session exists to send it from (passthrough) or rustls would send another
/// alert (`access_denied`, termination). Record framing, not cryptography: before any key
/// is agreed, an alert is these seven bytes.
pub const UNRECOGNIZED_NAME_ALERT: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x70];

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
    Peeker::new().feed(peeked)
}

/// The same reading, fed a connection's bytes as they arrive: each byte is parsed once
/// (calling `peek` on the whole prefix after every read of a trickled hello would parse
/// it again each time). rustls' `Acceptor` keeps the partial records and handshake
/// message between calls.
pub struct Peeker {
    acceptor: Acceptor,
    /// Set once the bytes were found not to be a hello; later bytes do not change it.
    not_tls: bool,
}

impl Default for Peeker {
    fn default() -> Self {
        Self::new()
    }
}

impl Peeker {
    pub fn new() -> Self {
        Peeker {
            acceptor: Acceptor::default(),
            not_tls: false,
        }
    }

    /// Adds the bytes that followed those fed before; `Incomplete` asks for more.
    /// After `Sni` or `NoSni` the hello has been read: feed nothing more.
    pub fn feed(&mut self, mut more: &[u8]) -> Hello {
        if self.not_tls {
            return Hello::NotTls;
        }
        while !more.is_empty() {
            match self.acceptor.read_tls(&mut more) {
                Ok(0) | Err(_) => return self.not_tls(),
                Ok(_) => {}
            }
        }
        match self.acceptor.accept() {
            Ok(Some(accepted)) => match accepted.client_hello().server_name() {
                Some(name) => Hello::Sni(name.to_owned()),
                None => Hello::NoSni,
            },
            Ok(None) => Hello::Incomplete,
            Err(_) => self.not_tls(),
        }
    }

    fn not_tls(&mut self) -> Hello {
        self.not_tls = true;
        Hello::NotTls
    }
}
