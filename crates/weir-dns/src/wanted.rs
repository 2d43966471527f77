//! What a config asks the DNS source to follow: each pool's named endpoints, and the
//! resolver settings of `[global]` (a change to those starts every name over).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use weir_config::{Config, NamedEndpoint};

/// `[global] resolvers`, `dns_min_ttl`, `dns_max_ttl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub resolvers: Vec<SocketAddr>,
    pub min_ttl: Duration,
    pub max_ttl: Duration,
}

/// A pool and one of its names (with the weight its entry gives).
pub(crate) type Key = (String, NamedEndpoint);

pub(crate) fn settings(config: &Config) -> Settings {
    Settings {
        resolvers: config.global.resolvers.clone(),
        min_ttl: config.global.dns_min_ttl,
        max_ttl: config.global.dns_max_ttl,
    }
}

pub(crate) fn names(config: &Config) -> BTreeSet<Key> {
    config
        .pools
        .iter()
        .flat_map(|(pool, p)| p.named.iter().map(move |n| (pool.clone(), n.clone())))
        .collect()
}
