//! HTTP/2 frames (RFC 9113 §4, §6): read from a buffer with the rules of §4 and §6 checked
//! (`read`), and written into one (`write`). What a frame means for a stream or the
//! connection (states, windows, limits) is the connection layer's.
//!
//! This file only gathers what the others define: the numbers and the stream id
//! (`constants.rs`), what breaks the protocol (`error.rs`), reading (`read.rs`, with the
//! [`Frame`] it returns), SETTINGS (`settings.rs`) and writing (`write.rs`).

mod constants;
mod error;
mod ids;
mod read;
mod settings;
pub mod write;

pub use constants::{
    flag, kind, StreamId, DEFAULT_MAX_FRAME, HEAD_LEN, MAX_MAX_FRAME, MAX_WINDOW, PREFACE,
};
pub use error::Error;
pub use ids::{IdHasher, StreamMap};
pub use read::{read, whole_headers, Frame};
pub use settings::{Setting, Settings};

#[cfg(test)]
mod tests;
