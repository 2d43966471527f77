//! HTTP/2 framing and HPACK written for weir, sans I/O: bytes in, frames and header
//! fields out, and the reverse. No sockets, tasks or timers here: the connection layer above
//! decides when to read and write, so that one read can carry many streams' frames and one
//! write many streams' answers.
//!
//! Why by hand, when the `h2` crate exists: measured CPU (docs/BENCHMARKS.md, "What the build
//! rests on"). A bare h2c responder on the `h2` crate costs 1.2-1.4 × HAProxy's per request;
//! with it on both hops of a gRPC call its own code is 29 % of weir's CPU, plus the moves of
//! its stream store; and its HPACK encoder indexes every response field, walking the dynamic
//! table for each one (47 comparisons per response against a backend with one varying field).
//! The HTTP/1 codec is weir's own for the same reason. What this crate does differently:
//! - fields are encoded without the dynamic table (static indexes and literals), as
//!   HAProxy encodes its responses: no lookups, no table to keep;
//! - frames are parsed in place from the read buffer, and written straight into the write
//!   buffer;
//! - the Huffman decoder reads 9 bits at a time.
//!
//! What is here: the framing ([`frame`]) and HPACK ([`hpack`]) layers, the server side of a
//! connection ([`server`]), which weir-proxy serves HTTP/2 clients with, and the client side
//! ([`client`]), which it speaks to h2c and h2 upstreams with. Tested against RFC 7541's
//! examples, the `h2` crate's client and server as peers, each side against the other, and
//! h2spec (every case, against the server side); both sides and HPACK are fuzzed (`fuzz.rs`
//! holds the properties, `fuzz/` the cargo-fuzz targets).

mod block;
pub mod client;
mod dispatch;
mod field;
mod flow;
pub mod frame;
#[doc(hidden)]
pub mod fuzz;
pub mod hpack;
pub mod server;

/// An HTTP/2 error code (RFC 9113 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reason(pub u32);

impl Reason {
    pub const NO_ERROR: Reason = Reason(0x0);
    pub const PROTOCOL_ERROR: Reason = Reason(0x1);
    pub const INTERNAL_ERROR: Reason = Reason(0x2);
    pub const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    pub const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    pub const STREAM_CLOSED: Reason = Reason(0x5);
    pub const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    pub const REFUSED_STREAM: Reason = Reason(0x7);
    pub const CANCEL: Reason = Reason(0x8);
    pub const COMPRESSION_ERROR: Reason = Reason(0x9);
    pub const CONNECT_ERROR: Reason = Reason(0xa);
    pub const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    pub const INADEQUATE_SECURITY: Reason = Reason(0xc);
    pub const HTTP_1_1_REQUIRED: Reason = Reason(0xd);

    /// The code's name, for logs.
    pub fn name(self) -> &'static str {
        match self.0 {
            0x0 => "NO_ERROR",
            0x1 => "PROTOCOL_ERROR",
            0x2 => "INTERNAL_ERROR",
            0x3 => "FLOW_CONTROL_ERROR",
            0x4 => "SETTINGS_TIMEOUT",
            0x5 => "STREAM_CLOSED",
            0x6 => "FRAME_SIZE_ERROR",
            0x7 => "REFUSED_STREAM",
            0x8 => "CANCEL",
            0x9 => "COMPRESSION_ERROR",
            0xa => "CONNECT_ERROR",
            0xb => "ENHANCE_YOUR_CALM",
            0xc => "INADEQUATE_SECURITY",
            0xd => "HTTP_1_1_REQUIRED",
            _ => "unknown error code",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
