//! What can go wrong on an upstream exchange. Every kind but `Timeout`
//! (`upstream_timeout`) is an upstream failure to the caller
//! (`upstream_reset`), as hyper's errors were.

use std::io;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("upstream connection: {0}")]
    Io(#[from] io::Error),
    #[error("no response head by the deadline")]
    Timeout,
    #[error("connection closed before the response head was complete")]
    ClosedBeforeHead,
    #[error("connection closed before the response body was complete")]
    ClosedInBody,
    #[error("invalid response head: {0}")]
    Parse(httparse::Error),
    #[error("response head larger than {} bytes", weir_h1::response::MAX_HEAD)]
    HeadTooLarge,
    #[error("invalid response: {0}")]
    Protocol(&'static str),
    #[error("reading the request body: {0}")]
    Body(BoxError),
    #[error("request body {0} its Content-Length")]
    BodyLength(&'static str),
}

impl Error {
    /// The backend reset the connection (a write then fails with EPIPE).
    pub fn is_reset(&self) -> bool {
        matches!(self, Error::Io(e) if matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
        ))
    }
}

impl From<weir_h1::ResponseError> for Error {
    fn from(e: weir_h1::ResponseError) -> Self {
        use weir_h1::ResponseError;
        match e {
            ResponseError::Parse(e) => Error::Parse(e),
            ResponseError::HeadTooLarge => Error::HeadTooLarge,
            ResponseError::Protocol(what) => Error::Protocol(what),
        }
    }
}

impl From<weir_h1::decode::DecodeError> for Error {
    fn from(e: weir_h1::decode::DecodeError) -> Self {
        use weir_h1::decode::DecodeError;
        match e {
            DecodeError::Invalid(what) => Error::Protocol(what),
            DecodeError::ClosedEarly => Error::ClosedInBody,
        }
    }
}
