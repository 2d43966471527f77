//! The PROXY protocol (HAProxy's, v1 text and v2 binary): the header a proxy in front of
//! weir writes at the start of a connection to say whose it is (`read.rs`, for listeners
//! with `proxy_protocol`), and the one weir writes to endpoints of pools with `send_proxy`
//! (`write.rs`), which passes on the TLVs a v2 header brought (a proxy in front's
//! authority, unique id, TLS details, a cloud's endpoint id). The headers' contents are
//! parsed and built by the `ppp` crate; where a header ends on the wire, and how much may
//! be read, is decided here, so the bytes after it (a request, a ClientHello) are never
//! read by this module. Headers refused are counted per listener (`refusals.rs`).

mod read;
pub mod refusals;
mod write;

pub use read::{read_header, ReadError, Received, Tlvs};
pub use write::header;
