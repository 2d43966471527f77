//! weir's control plane (docs/DESIGN.md §1, "One change"): where the running config comes
//! from (a file, or the durable store), where pools' endpoints may come from besides it
//! (endpoint sources, `discovery/`), endpoint registrations with leases, validation of
//! every change against the whole resulting config, and publishing it to the data plane.
//!
//! Resources are the admin API's (docs/DESIGN.md §3): listeners, routes, pools, endpoints and
//! certificates, each
//! a JSON object with exactly the keys of its config-file table. They are kept as a
//! [`weir_store::State`] in every mode, so the API reads the same shape from a file as from
//! the store.

pub mod checked;
pub mod compile;
pub mod control;
mod discover;
pub mod discovery;
pub mod from_toml;
pub mod held;
pub mod lease_upkeep;
pub mod leases;
pub mod refused;
pub mod render;
pub mod secret;
pub mod source;
pub mod start_error;

pub use checked::Checked;
pub use compile::{FieldError, Invalid};
pub use control::{InvalidResource, RunningConfig, SourceInfo};
pub use discovery::source::{EndpointSet, EndpointSource, Sets};
pub use leases::HeartbeatError;
pub use refused::Refused;
pub use source::file::FileSource;
pub use source::store::StoreSource;
pub use source::Source;
pub use start_error::StartError;
