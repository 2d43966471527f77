//! weir's own HTTP/1.1 codec: the server for client connections, the client
//! for upstream connections, and what both share (body framing, field
//! syntax, the `Date` cache).

pub mod client;
pub(crate) mod common;
pub mod server;
