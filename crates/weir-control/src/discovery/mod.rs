//! Where a pool's endpoints may come from besides the config: endpoint sources (DNS names,
//! Kubernetes EndpointSlices) that follow something outside weir and send each pool's
//! endpoint set as it changes, while listeners, routes and pool settings keep coming from
//! the config source (`source/`). The running config merges the two before the data plane
//! sees them (`discovered.rs`); an endpoint set takes the same path as an endpoint change
//! through the API (`Proxy::update_pools`: kept endpoints keep their state, new ones
//! slow-start, removed ones drain). Registering one: `crates/weir/src/boot.rs`,
//! `endpoint_sources`.

pub mod discovered;
pub mod source;
