//! The seam an endpoint source implements: told what the running config asks for, it sends
//! endpoint sets when they change. Each source owns its tasks, its retries and its last good
//! answer: a source that cannot reach what it follows (a DNS server, an API server) sends
//! nothing, and the endpoints it sent last keep serving.

use std::sync::Arc;

use tokio::sync::mpsc;
use weir_config::{Config, Endpoint};

/// A pool's endpoints as one source sees them now: the whole set, replacing what that source
/// sent for the pool before (an empty set takes them all away).
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointSet {
    pub pool: String,
    pub endpoints: Vec<Endpoint>,
}

/// Where a source sends its sets; closed when weir no longer listens (the source then stops).
pub type Sets = mpsc::Sender<EndpointSet>;

pub trait EndpointSource: Send + Sync + 'static {
    /// Names the source in logs (`dns`, `endpointslices`).
    fn name(&self) -> &'static str;

    /// Starts following: from now on the source sends on `sets` the endpoint set of each pool
    /// it supplies, first as soon as it knows it, then on every change. Called once, before the
    /// first [`EndpointSource::configured`].
    fn start(&self, sets: Sets);

    /// The running config is now `config` (the first, then after every change): what the
    /// source follows may change with it (a pool that names a host, a Service a route sends
    /// to). A pool the config no longer has gets no traffic, whatever is sent for it.
    fn configured(&self, config: &Arc<Config>);
}
