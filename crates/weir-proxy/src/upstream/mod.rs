//! Connections to upstream endpoints: connecting, and the keep-alive pool.

pub mod connect;
pub mod idle;
pub mod keep_alive;
