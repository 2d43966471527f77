//! weir's own HTTP/1.1 client for the upstream hop.
//!
//! hyper's client runs each connection as a task of its own and talks to the
//! request through channels; for a proxy that sends one request at a time on
//! a connection that is a task wake-up and several channel hops per request.
//! Here the request's task owns the connection: the request head (and a
//! small body) goes out in one write, the response head is parsed with
//! `httparse`, and the response body is decoded straight from the socket.
//! At the end of the body the connection is handed back for reuse if the
//! exchange left it clean. The upstream layer puts it behind its session seam.
//!
//! - `conn`: the stream (`transport::UpstreamStream`) and its buffers, and
//!   the EOF check before reuse;
//! - `encode`: the request head and how the body is framed;
//! - `write`: sending the request (head, then a streamed body);
//! - the response head and how its body is framed are read by
//!   `weir_h1::response` (the body decoder is `weir_h1::decode`, shared with
//!   the server);
//! - `exchange`: one request/response, and the response body type.

mod conn;
mod encode;
mod error;
mod exchange;
mod write;

#[cfg(test)]
mod differential;

pub use crate::send::{HeadTimer, Payload};
pub use conn::H1ClientConnection;
pub use error::Error;
pub use exchange::{send, send_into, H1ResponseBody, SendError};

pub use weir_h1::response::{MAX_HEAD, MAX_HEADERS};
