//! HTTP/2 (issue 18), on the `h2` crate (framing, HPACK, flow control, and its defences
//! against rapid reset and CONTINUATION floods): `server.rs` serves a client connection's
//! streams through the same pipeline as HTTP/1.1 (`http::forward::handle`), `body.rs` is a
//! stream's request body as a `ClientBody`, `io.rs` joins a client stream's halves (and
//! the bytes the HTTP/1 codec read before it saw the preface) into what `h2` drives.

pub mod body;
pub mod io;
pub mod server;
