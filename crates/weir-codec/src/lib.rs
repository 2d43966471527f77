//! Wire codecs: how requests and responses become bytes on a stream and
//! back. Each protocol has a server side (client connections) and a client
//! side (upstream connections); the proxy pipeline above sees only `http` types,
//! bodies and the upstream session seam.
//!
//! - `h1`: weir's own HTTP/1.1 codec;
//! - `h2`: HTTP/2 both ways, on weir's own connection (the `weir-h2` crate);
//! - `server`: the server side's one seam: the trait every server codec calls the pipeline
//!   through, and the choice of codec for a client connection (ALPN, the HTTP/2 preface);
//! - `client_body`: a request body from any server codec (`ClientBody`);
//! - `send`: what any client codec is asked to send, and its head timer;
//! - `grpc`: what gRPC puts in HTTP fields (content type, deadline, status);
//! - `added`: the forwarding fields weir adds to a request, written by the client codecs
//!   after the request's own.

pub mod added;
pub mod client_body;
pub mod grpc;
pub mod h1;
pub mod h2;
pub mod send;
pub mod server;
