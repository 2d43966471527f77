//! HTTP messages as weir passes them on, below the route filters and the pipeline that
//! both use them:
//!
//! - the response body through the pipeline (`body.rs`: the upstream's, streamed, or one
//!   weir made; `encoded.rs`: either compressed as it streams);
//! - weir's own answers (`error.rs`, and to gRPC clients `grpc.rs`);
//! - a proxy hop's header rules (`headers.rs`: hop-by-hop fields, what the upstream learns
//!   of the client; `proxy_chain.rs` the Forwarded and X-Forwarded-For chains;
//!   `client_addr.rs` the client behind trusted proxies);
//! - what weir knows of a client connection (`conn_info.rs`, `conn_state.rs`);
//! - what each request is counted and logged as (`counts.rs`, `recorder.rs`,
//!   `accesslog.rs`).

pub mod accesslog;
pub mod body;
pub mod client_addr;
pub mod conn_info;
pub mod conn_state;
pub mod counts;
pub mod encoded;
pub mod error;
pub mod grpc;
pub mod headers;
pub mod proxy_chain;
pub mod recorder;
