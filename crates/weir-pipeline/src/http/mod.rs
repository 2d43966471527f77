//! The HTTP reverse proxy pipeline, whatever the protocol on either side:
//! client connections (`conn`, with a server codec from `weir_codec`, watched for
//! timeouts and drains by their listener's `watch`),
//! one request's way (`forward`, then `tries` over `weir_upstream`
//! sessions), upgrades, and the sticky cookie. The messages' pieces (bodies, weir's own
//! answers, header rules, accounting) are weir-http's.
pub mod conn;
pub mod conn_ctx;
pub mod forward;
pub mod sticky;
pub mod tries;
pub mod upgrade;
pub mod watch;
