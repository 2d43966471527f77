//! weir's own HTTP/1.1 codec: the server for client connections, the client
//! for upstream connections, and the `Date` cache both write with. The wire
//! syntax they share with no I/O (request heads, body framing, field syntax)
//! is the `weir-h1` crate.

pub mod client;
pub(crate) mod date;
pub mod server;
