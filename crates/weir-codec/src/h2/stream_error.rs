//! Why an exchange on an HTTP/2 upstream stream failed (its own file: the exchange, its
//! response body and its request pump all say it).

use std::sync::Arc;

use weir_h2::Reason;

use super::client::Failure;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why an exchange on an HTTP/2 stream failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The endpoint reset the stream.
    #[error("HTTP/2 stream reset by the endpoint: {0}")]
    Reset(Reason),
    /// The endpoint broke a rule on the stream (a malformed response, DATA past its
    /// content-length or window): weir reset it.
    #[error("HTTP/2 stream reset by weir for the endpoint's error: {0}")]
    Malformed(Reason),
    /// The endpoint's GOAWAY said this stream was not processed.
    #[error("HTTP/2 stream not processed: the endpoint sent GOAWAY")]
    Refused,
    /// The connection ended.
    #[error("HTTP/2 connection: {0}")]
    Connection(Arc<str>),
    /// The connection ended before any of the request was written: the endpoint never saw
    /// it.
    #[error("HTTP/2 connection ended before the request was sent: {0}")]
    Unsent(Arc<str>),
    /// No response head in time.
    #[error("no response in time")]
    Timeout,
    /// The request's body broke off on the client's side while it streamed upstream.
    #[error("request body: {0}")]
    Body(BoxError),
    /// The request cannot be said in HTTP/2 (no host to make `:authority` from).
    #[error("request cannot be sent over HTTP/2: {0}")]
    Request(&'static str),
}

impl Error {
    /// The endpoint refused the stream unprocessed: REFUSED_STREAM (RFC 9113 §8.7), or a
    /// GOAWAY whose last stream id is below this one's; or never got it (the connection
    /// ended before the request was written).
    pub fn refused_unprocessed(&self) -> bool {
        matches!(
            self,
            Error::Reset(Reason::REFUSED_STREAM) | Error::Refused | Error::Unsent(_)
        )
    }
}

impl From<&Failure> for Error {
    fn from(f: &Failure) -> Error {
        match f {
            Failure::Reset {
                code,
                by_server: true,
            } => Error::Reset(*code),
            Failure::Reset { code, .. } => Error::Malformed(*code),
            Failure::Refused => Error::Refused,
            Failure::Lost(why) => Error::Connection(why.clone()),
            Failure::Unsent(why) => Error::Unsent(why.clone()),
            Failure::TimedOut => Error::Timeout,
        }
    }
}
