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
//! byte relay of TCP sessions and upgraded connections (`relay.rs`) moves plain
//! sockets with splice(2) (`splice.rs`) and copies through TLS ones (`copy.rs`).
//! Files watched for change (`file_watch.rs`, `file_stamp.rs`) are the certificate
//! reloads'.

mod accept;
mod acks;
mod activity;
mod alpn;
mod client;
mod connect;
pub mod copy;
pub mod file_stamp;
pub mod file_watch;
mod handshake_error;
mod lazy;
pub mod proxy_protocol;
pub mod relay;
#[cfg(target_os = "linux")]
mod splice;
mod tcp_state;
pub mod tls;
mod tls_info;
mod upstream;
mod upstream_tls;

pub use accept::{accept, defer_accept, listen, BindError, Listener};
pub use acks::AckNow;
pub use alpn::Alpn;
pub use client::{ClientReader, ClientStream, ClientWriter};
pub use connect::{connect, connect_until, ConnectError};
pub use handshake_error::HandshakeError;
pub use tcp_state::TcpState;
pub use tls_info::TlsInfo;
pub use upstream::UpstreamStream;
pub use upstream_tls::{handshake_refused, BuildError, TlsStream, UpstreamTls};
