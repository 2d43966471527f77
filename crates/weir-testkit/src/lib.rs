//! weir-testkit: fake upstreams (HTTP and TCP) and a small HTTP client for weir's tests and
//! benchmarks. The `weir` binary does not link it (`weir demo` has backends of its own).
//!
//! Every knob a load balancer has to cope with is a builder option or a path on the fake
//! backend: latency, a worker-pool concurrency cap, stale keep-alive closes, flapping
//! (`stop`/`start`), streaming bodies, close-delimited bodies, hanging requests. `tls`
//! puts a TLS front (rustls) before any of them, with certificates made per test.
//! With the `grpc` feature, [`grpc`] is a real gRPC backend (tonic: an Echo service with
//! every kind of stream, and the standard health service) and its clients. [`etcd`] starts
//! real etcd clusters (the installed `/usr/bin/etcd`) for the store's tests.

mod black_hole;
mod body;
pub mod certs;
pub mod client;
mod conn;
pub mod dnsmasq;
pub mod etcd;
#[cfg(feature = "grpc")]
pub mod grpc;
mod http_upstream;
mod latency;
mod listener;
mod routes;
mod shared;
mod tcp;
mod ticket;
pub mod tls;
#[cfg(feature = "ws")]
mod ws;

pub use black_hole::BlackHole;
pub use body::pattern;
pub use http_upstream::{HttpUpstream, HttpUpstreamBuilder};
pub use latency::{parse_duration, Latency};
pub use shared::RequestRecord;
pub use tcp::TcpUpstream;
pub use tls::TlsFront;
#[cfg(feature = "ws")]
pub use ws::WsUpstream;
