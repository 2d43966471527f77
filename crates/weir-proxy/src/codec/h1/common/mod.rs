//! HTTP/1.1 codec pieces that weir's server (client side, `codec::h1::server`)
//! and client (upstream side, `codec::h1::client`) share: body framing, and the
//! small bits of field syntax both parse and write.

pub mod date;
pub mod decode;
pub mod fields;
pub mod names;
pub mod spans;
