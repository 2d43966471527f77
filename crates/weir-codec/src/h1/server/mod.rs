//! weir's own HTTP/1.1 server for client connections.
//!
//! hyper's server runs a dispatcher that hands the request body to the
//! service through a channel, and formats heads with more generality than
//! a proxy needs. Here the connection's task reads a head with `httparse`,
//! calls the handler, and writes the response; a request body is read
//! straight from the socket by whoever polls it (in the same task), and
//! the response head and a small body leave in one write.
//!
//! - the request head and how its body is framed are read by `weir_h1::request`
//!   (the body decoder is `weir_h1::decode`, shared with the upstream client);
//! - `reader`: the socket's read side and the buffer that outlives a request;
//! - `body`: the request body handed to the handler;
//! - `respond`: the response head and its framing;
//! - `write`: the bytes going out, copied or queued for a vectored write;
//! - `conn`: one connection: keep-alive (between requests, the small `Idle` its owner
//!   holds), pipelining, `100 Continue`, draining an unread request body, noticing a
//!   client that left; each request
//!   goes to the pipeline through `server::Serve`, as HTTP/2's do.

mod body;
mod conn;
mod error;
mod reader;
mod respond;
mod write;

#[cfg(test)]
mod differential;
#[cfg(test)]
mod tests;

pub use body::ReqBody;
pub use conn::{run, serve, Idle, Pause};
pub use error::BodyError;
pub use weir_h1::request::{MAX_HEADERS, MAX_URI_LEN};
pub use weir_h1::ParseError;
