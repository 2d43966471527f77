//! The TCP (layer 4) proxy: one upstream connection per client connection,
//! bytes relayed both ways with half-close, zero-copy on Linux; with `sni_routing`,
//! the pool chosen by the ClientHello's server name (`sni.rs`); through a TLS side
//! (a pool's, or a listener's `[tls]`), copied (`copy.rs`).

pub mod copy;
mod relay;
pub mod session;
pub mod sni;
#[cfg(target_os = "linux")]
mod splice;
