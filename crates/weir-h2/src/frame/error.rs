//! A frame that breaks the protocol, and what it ends. Its own file because reading a frame
//! (read.rs) and reading SETTINGS (settings.rs, which read.rs calls) both refuse with it.

use super::constants::StreamId;
use crate::Reason;

/// A frame that breaks the protocol: the whole connection (GOAWAY) or only its stream
/// (RST_STREAM) is ended with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("connection error {0}: {1}")]
    Connection(Reason, &'static str),
    #[error("stream {0} error {1}: {2}")]
    Stream(StreamId, Reason, &'static str),
}
