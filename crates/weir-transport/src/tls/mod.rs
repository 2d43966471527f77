//! TLS termination on client connections: the listener's server side (`server.rs`), the
//! handshake with its timeout and results (`accept.rs`, counted in `metrics.rs`), the
//! terminated stream's halves (`stream.rs`), and certificate files watched for change
//! (`reload.rs`, started with the server by `watched.rs`). Certificates, SNI choice and
//! rustls configs are weir-tls's.

mod accept;
pub mod metrics;
mod reload;
mod server;
mod stream;
mod watched;

pub use accept::handshake;
pub use server::{TlsServer, TlsSetupError};
pub use stream::{TlsConn, TlsReader, TlsWriter};
