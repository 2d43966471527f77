//! HTTP/1.1 wire syntax of weir's own, sans I/O: bytes in, heads and body framing out.
//!
//! - `request`: a request head (httparse for the syntax, then RFC 9112's framing rules,
//!   stricter than hyper's wherever a request could be framed two ways);
//! - `response`: a response head, likewise (interim heads skipped, a `101` only to the
//!   upgrade the request offered);
//! - `decode`: a body's framing (Content-Length, chunked, until close), for requests and
//!   responses alike;
//! - `limits`: the bounds on a head, which the parsers enforce and the errors name;
//! - `fields`, `names`, `spans`: field syntax both directions parse and write.
//!
//! weir-codec's `h1/` holds the rest of weir's HTTP/1.1 (connections, writing heads and
//! bodies): what does I/O or belongs to the proxy. This part is a crate of its own so that
//! the fuzz targets (`fuzz/`, the properties in `fuzz.rs`) build against it alone: a cold
//! build of weir-proxy's dependencies for libFuzzer took six minutes of the test command,
//! this one seconds.

pub mod decode;
mod error;
pub mod fields;
#[doc(hidden)]
pub mod fuzz;
pub mod limits;
pub mod names;
pub mod request;
pub mod response;
pub mod spans;

pub use error::{ParseError, ResponseError};
