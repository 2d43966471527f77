//! HTTP/2 (issue 18), on the `h2` crate (framing, HPACK, flow control, and its defences
//! against rapid reset and CONTINUATION floods).
//!
//! Server side: `server.rs` serves a client connection's streams through the same
//! pipeline as HTTP/1.1 (`http::forward::handle`), `io.rs` joins a client stream's halves
//! (and the bytes the HTTP/1 codec read before it saw the preface) into what `h2` drives.
//! Client side (h2c and h2 pools): `client.rs` is one upstream connection shared by
//! streams, `exchange.rs` one request on a stream. `body.rs` is a stream's received body,
//! either side's. WebSocket over HTTP/2 (RFC 8441): `websocket.rs` makes an extended
//! CONNECT into the HTTP/1.1 upgrade the pipeline proxies, `tunnel.rs` is the stream as
//! the bytes the relay moves.

pub mod body;
pub mod client;
pub mod exchange;
pub mod io;
pub mod server;
pub mod tunnel;
pub mod websocket;
