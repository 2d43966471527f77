//! The transport seam: every byte stream weir reads or writes, below any
//! codec. Listening and accepting (`accept.rs`), client streams
//! (`client.rs`; plain ones on a lazily registered socket, `lazy.rs`),
//! upstream streams (`upstream.rs`; opened by `connect.rs`), what a
//! stream's TLS session tells the layers above (`tls_info.rs`), what the kernel
//! knows about an upstream connection (`tcp_state.rs`), and ACKs sent at once while a
//! message is only part there (`acks.rs`).
//!
//! Streams are enums: TLS is a variant (and a file of its own) on each
//! side, picked where the stream is made (the listener, the pool's connect:
//! `upstream_tls.rs`), not an edit of the codecs or the request path. The
//! TCP relay (`tcp/`) takes plain sockets as they come from here, for
//! splice(2), and copies through TLS ones.

mod accept;
mod acks;
mod client;
mod connect;
mod lazy;
pub mod proxy_protocol;
mod tcp_state;
pub mod tls;
mod tls_info;
mod upstream;
mod upstream_tls;

pub use accept::{accept, defer_accept, listen, BindError, Listener};
pub use acks::AckNow;
pub use client::{ClientReader, ClientStream, ClientWriter};
pub use connect::{connect, connect_until, ConnectError};
pub use tcp_state::TcpState;
pub use tls_info::TlsInfo;
pub use upstream::UpstreamStream;
pub use upstream_tls::{
    handshake_refused, Alpn, BuildError, HandshakeError, TlsStream, UpstreamTls,
};
