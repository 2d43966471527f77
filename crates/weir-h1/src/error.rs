//! What can go wrong reading a head: a request head weir refuses (answered with the status
//! `status()` gives, then the connection closes), or a response head it cannot read (the
//! exchange fails as the upstream's fault).

use crate::limits::{MAX_REQUEST_HEADERS, MAX_RESPONSE_HEAD, MAX_URI_LEN};

/// Why a request head was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("invalid request head: {0}")]
    Syntax(httparse::Error),
    #[error("invalid method")]
    Method,
    #[error("invalid request target")]
    Uri,
    #[error("request target longer than {MAX_URI_LEN} bytes")]
    UriTooLong,
    #[error("request head larger than {0} bytes")]
    TooLarge(usize),
    #[error("more than {MAX_REQUEST_HEADERS} header fields")]
    TooManyHeaders,
    /// Content-Length / Transfer-Encoding that do not frame the body
    /// unambiguously (the request smuggling guard).
    #[error("{0}")]
    Framing(&'static str),
    /// A transfer coding weir cannot pass on (RFC 9112 §6.1).
    #[error("unsupported transfer coding")]
    UnsupportedCoding,
    /// CONNECT asks for a tunnel, which no listener offers (yet).
    #[error("CONNECT: tunnelling is not offered")]
    Connect,
    /// A target form the method does not allow (`*` is for OPTIONS only,
    /// authority-form for CONNECT only; RFC 9112 §3.2).
    #[error("request target form not allowed for the method")]
    TargetForm,
    /// A Host field that is not `host[:port]` (RFC 9110 §7.2).
    #[error("invalid Host")]
    Host,
    /// An `Expect` other than `100-continue`: nothing weir or an endpoint can meet.
    #[error("an expectation other than 100-continue")]
    Expectation,
    /// The HTTP/2 connection preface where an HTTP/1.1 request belongs. A connection that
    /// opens with it goes to HTTP/2 before any HTTP/1 parse (weir-codec's protocol
    /// selection), so this one came later, or after ALPN chose HTTP/1.1: refused with no
    /// HTTP/1 answer (an HTTP/2 client could not read one), and the connection closes.
    #[error("HTTP/2 connection preface on an HTTP/1.1 connection")]
    Http2Preface,
}

impl ParseError {
    /// The status to answer with, if any.
    pub fn status(&self) -> Option<u16> {
        match self {
            ParseError::Http2Preface => None,
            ParseError::TooLarge(_) | ParseError::TooManyHeaders => Some(431),
            ParseError::UriTooLong => Some(414),
            ParseError::UnsupportedCoding => Some(501),
            ParseError::Connect => Some(405),
            ParseError::Expectation => Some(417),
            _ => Some(400),
        }
    }
}

/// Why a response head could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResponseError {
    #[error("invalid response head: {0}")]
    Parse(httparse::Error),
    #[error("response head larger than {MAX_RESPONSE_HEAD} bytes")]
    HeadTooLarge,
    #[error("invalid response: {0}")]
    Protocol(&'static str),
}
