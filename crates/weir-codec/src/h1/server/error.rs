//! What can go wrong reading a request body: it breaks off. (A head weir refuses is a
//! `weir_h1::ParseError`.)

use std::io;

use weir_h1::decode::DecodeError;

/// Why a request body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("client connection: {0}")]
    Io(#[from] io::Error),
    /// The body broke its framing, or the client closed before its end.
    #[error("{0}")]
    Decode(#[from] DecodeError),
}

impl BodyError {
    /// The client sent something invalid, rather than going away.
    pub fn is_malformed(&self) -> bool {
        matches!(self, BodyError::Decode(DecodeError::Invalid(_)))
    }
}
