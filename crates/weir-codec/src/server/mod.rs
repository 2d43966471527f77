//! The server side, whatever the protocol: what a client connection's codec asks of the
//! pipeline, and which codec serves a connection.
//!
//! - `serve`: [`Serve`], the one trait the pipeline implements for every server codec (take
//!   a request, note a refused one and give its answer, say when a request switches
//!   protocols, note a request arriving), and [`Switched`], what a switched request hands
//!   over;
//! - `handoff`: [`Handoff`], a client stream's halves and the bytes already read from it, as
//!   one owner hands the connection to the next;
//! - `control`: what the connection's owner and its codec share ([`DrainFlags`]) and the
//!   [`Limits`] a client gets;
//! - `select`: the protocol a connection speaks (ALPN, else its first bytes: the HTTP/2
//!   preface or not) and the codec that then serves it ([`run`]).
//!
//! A new protocol (HTTP/3 on a UDP transport) adds its codec's files beside `h1/server/` and
//! `h2/server.rs`, driving a connection and calling [`Serve`] per request (its request body a
//! `From` for the pipeline's, as theirs are), a variant of `select::Protocol` and its arm in
//! `select::run`, and a variant of [`Switched`] if its requests can switch protocols.

pub mod control;
pub mod handoff;
pub mod select;
pub mod serve;

pub use control::{DrainFlags, Limits};
pub use handoff::Handoff;
pub use select::{run, Protocol};
pub use serve::{Serve, Switched};
