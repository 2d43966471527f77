//! The TCP (layer 4) proxy: one upstream connection per client connection,
//! bytes relayed both ways with half-close, zero-copy on Linux.

pub mod copy;
mod relay;
pub mod session;
#[cfg(target_os = "linux")]
mod splice;
