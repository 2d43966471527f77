//! What every layer of weir counts and says, at the bottom of the crate graph so that any
//! layer may use it: why a request failed ([`Reason`]), the process's coarse clock,
//! latency histograms, process-wide gauges, the config sources' and the admin API's own
//! counters, and warnings limited to one line per cause per period. Rendering them
//! (Prometheus, the stats API) is the business of the layers above.

pub mod admin_auth;
pub mod clock;
pub mod config_apply;
pub mod config_store;
pub mod dns;
pub mod global;
pub mod hist;
pub mod log_limit;
pub mod reason;

pub use global::{Global, Held, GLOBAL};
pub use reason::Reason;
