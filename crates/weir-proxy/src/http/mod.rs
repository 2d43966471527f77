//! The HTTP reverse proxy pipeline, whatever the protocol on either side:
//! client connections (`conn`, with a server codec from `weir_codec`),
//! one request's way (`forward`, then `tries` over `weir_upstream`
//! sessions), and the pieces they need (headers, bodies, generated errors,
//! client timeouts).
pub mod body;
pub mod client_addr;
pub mod conn;
pub mod conn_info;
pub mod conn_state;
pub mod encoded;
pub mod error;
pub mod forward;
pub mod grpc;
pub mod headers;
pub mod proxy_chain;
pub mod sticky;
pub mod tries;
pub mod upgrade;
