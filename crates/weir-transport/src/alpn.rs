//! What a connection to an endpoint will carry, as offered by ALPN (its own file so that
//! connecting and the pool's TLS both name it without importing each other).

/// What a connection to an endpoint will carry, for the protocols offered by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// An HTTP/1.1 pool: `http/1.1` (or the pool's `alpn` list).
    Http1,
    /// An HTTP/2 pool (`protocol = "h2"`): `h2` (or the pool's `alpn` list).
    H2,
    /// A tcp listener's session: only the pool's `alpn` list, if any.
    Tcp,
}

impl Alpn {
    /// The ALPN for an http pool speaking `p`.
    pub fn of(p: weir_config::UpstreamProtocol) -> Alpn {
        match p.is_h2() {
            true => Alpn::H2,
            false => Alpn::Http1,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Alpn::Http1 => "http/1.1",
            Alpn::H2 => "h2",
            Alpn::Tcp => "tcp",
        }
    }
}
