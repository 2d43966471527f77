//! A real gRPC backend and client for weir's tests and benchmarks (`grpc` feature):
//! the `weir.test.Echo` service (unary, server, client and bidi streams, on tonic)
//! and the standard `grpc.health.v1.Health` service, over h2c or h2 with TLS.
//!
//! ```text
//! let up = GrpcUpstream::spawn("a").await?;
//! let mut c = grpc_client(up.addr()).await?;
//! let mut req = tonic::Request::new(EchoRequest { message: "hi".into(), ..Default::default() });
//! req.set_timeout(Duration::from_secs(1));
//! let reply = c.unary(req).await?.into_inner();
//! assert_eq!((reply.server.as_str(), up.calls()), ("a", 1));
//! ```

mod calls;
mod client;
mod echo;
mod messages;
mod serve;
mod service;
mod upstream;

pub use calls::CallRecord;
pub use client::{grpc_client, grpc_client_raw, grpc_client_tls, health_client, RawChannel};
pub use messages::{EchoReply, EchoRequest};
pub use upstream::{GrpcUpstream, GrpcUpstreamBuilder};
// What a test needs to build calls and read answers, without its own tonic dependency.
pub use tonic;
pub use tonic_health::pb::{health_check_response::ServingStatus, HealthCheckRequest};
