//! A pool as the data plane sees it: its endpoints (shared runtime state from
//! the registry), the balancer, and the pool's timeouts.

use std::sync::Arc;
use std::time::Duration;

use crate::balancer::RoundRobin;
use crate::endpoint::EndpointRt;

#[derive(Debug)]
pub struct PoolRt {
    pub name: Arc<str>,
    pub endpoints: Vec<Arc<EndpointRt>>,
    pub balancer: RoundRobin,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    pub idle_timeout: Duration,
}

impl PoolRt {
    pub fn new(name: Arc<str>, cfg: &weir_config::Pool, endpoints: Vec<Arc<EndpointRt>>) -> Self {
        let weights: Vec<u32> = cfg.endpoints.iter().map(|e| e.weight).collect();
        PoolRt {
            name,
            endpoints,
            balancer: RoundRobin::new(&weights),
            connect_timeout: cfg.connect_timeout,
            response_timeout: cfg.response_timeout,
            idle_timeout: cfg.idle_timeout,
        }
    }

    /// The next endpoint by the pool's balancing algorithm.
    #[inline]
    pub fn pick(&self) -> Option<&Arc<EndpointRt>> {
        self.balancer.pick().map(|i| &self.endpoints[i])
    }

    #[cfg(test)]
    pub fn for_test(name: &str) -> Self {
        PoolRt {
            name: name.into(),
            endpoints: Vec::new(),
            balancer: RoundRobin::new(&[]),
            connect_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(4),
        }
    }
}
