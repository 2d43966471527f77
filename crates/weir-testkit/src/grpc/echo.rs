//! The `weir.test.Echo` service's generated server trait and client (`echo_server`,
//! `echo_client`; see build.rs). A file of its own so that the parts that serve and call it
//! import it from here, below grpc/mod.rs, which only re-exports.

include!(concat!(env!("OUT_DIR"), "/weir.test.Echo.rs"));
