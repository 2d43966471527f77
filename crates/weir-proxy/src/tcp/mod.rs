//! The TCP (layer 4) proxy: one upstream connection per client connection,
//! bytes relayed both ways with half-close, zero-copy on Linux; with `sni_routing`,
//! the pool chosen by the ClientHello's server name (`sni.rs`); through a TLS side
//! (a pool's, or a listener's `[tls]`), copied (`copy.rs`). An upgraded HTTP
//! connection (WebSocket) is relayed by the same `relay.rs` or `copy.rs`.

pub mod copy;
pub mod relay;
pub mod session;
pub mod sni;
#[cfg(target_os = "linux")]
mod splice;
