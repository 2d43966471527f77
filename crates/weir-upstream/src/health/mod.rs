//! Endpoint health: what active checks concluded (with rise/fall), and
//! passive ejection after consecutive failures seen on real traffic. An
//! endpoint takes new requests only when both agree; the state lives in the
//! endpoint's registry entry, so it survives reloads.
//!
//! A facade: the state is `endpoint_health.rs`'s, which endpoints hold; the filter
//! (`filter.rs`) and passive ejection (`passive.rs`) look at endpoints.

pub mod checker;
pub(crate) mod endpoint_health;
mod filter;
mod grpc;
mod passive;

pub use endpoint_health::EndpointHealth;
pub use filter::HealthFilter;
pub use passive::{record_success, Ejection, Loss};
