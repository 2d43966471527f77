//! The TCP (layer 4) proxy: one upstream connection per client connection, bytes relayed
//! both ways with half-close (weir-transport's `relay.rs`, zero-copy on Linux; through a TLS
//! side, `copy.rs`); with `sni_routing`, the pool chosen by the ClientHello's server name
//! (`sni.rs`).

pub mod passed;
pub mod passthrough;
pub mod session;
pub mod sni;
