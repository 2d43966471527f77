//! HTTP/2.
//!
//! Server side, on weir's own connection (`weir_h2::server`): `server.rs` serves a client
//! connection's streams through the same pipeline as HTTP/1.1 (`http::forward::handle`),
//! reading and writing the socket itself; `io.rs` joins a client stream's halves (and the
//! bytes the protocol selection read: the preface); `shared.rs` is what a stream
//! shares between the connection's loop and the pipeline, `request_body.rs` the request
//! body on it. WebSocket over HTTP/2 (RFC 8441): `websocket.rs` makes an extended CONNECT
//! into the HTTP/1.1 upgrade the pipeline proxies, `tunnel.rs` is the stream as the bytes
//! the relay moves. `inbox.rs` is the small queue a request body's DATA waits in;
//! `expect.rs` what a request's `Expect` asks of the server (a `100`, or a 417).
//!
//! Client side (h2c and h2 pools), on weir's own connection (`weir_h2::client`):
//! `client.rs` is one upstream connection shared by streams and the task that reads and
//! writes it (`keepalive.rs`: its PINGs, which find a connection nobody serves any more),
//! `exchange.rs` one request on a stream, `pump.rs` its streamed body going out,
//! `body.rs` the response's body coming back. `goaways.rs` counts the connections closed
//! for a client's abuse, by kind.

pub mod body;
pub mod client;
pub mod exchange;
pub mod expect;
pub mod goaways;
pub mod inbox;
pub mod io;
pub mod keepalive;
pub mod linger;
mod opened;
pub mod pump;
pub mod request_body;
pub mod server;
pub mod shared;
mod stream_error;
pub mod tunnel;
pub mod websocket;
