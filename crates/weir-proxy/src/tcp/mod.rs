//! The TCP (layer 4) proxy: one upstream connection per client connection,
//! bytes relayed both ways with half-close, zero-copy on Linux; with `sni_routing`,
//! the pool chosen by the ClientHello's server name (`sni.rs`); with `[tls]`, TLS
//! terminated and plaintext relayed (`tls_client.rs`).

mod relay;
pub mod session;
pub mod sni;
#[cfg(target_os = "linux")]
mod splice;
mod tls_client;
