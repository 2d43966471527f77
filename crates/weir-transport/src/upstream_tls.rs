//! TLS to endpoints (`[pools.NAME.tls]`): a pool's rustls client settings, built once per
//! change of its tls table and shared by every connection of the pool (rustls keeps the
//! sessions to resume in the config, so one config per pool is what makes reconnects
//! resume), built again when its files change (`upstream_tls/reload.rs`), the handshake on
//! a connected socket (`handshake.rs`), and why a handshake failed (`refused.rs`).
//! Built and watched by `watched.rs`, from the configs of `connectors.rs`.

mod connectors;
mod handshake;
mod refused;
mod reload;
mod watched;

pub use connectors::BuildError;
pub use handshake::{TlsStream, UpstreamTls};
pub use refused::handshake_refused;
