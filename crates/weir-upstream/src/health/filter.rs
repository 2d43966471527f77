//! Which endpoints a request may use, by health: the pool's `no_healthy`
//! policy decides what happens when none is available.

use std::sync::Arc;

use weir_config::NoHealthy;

use crate::balance::PickKey;
use crate::endpoint::EndpointRt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthFilter {
    /// Those that pass their checks and are not ejected.
    Available,
    /// Every endpoint (`fail_open` with none available).
    All,
    /// None (`fail_closed` with none available).
    None,
}

impl HealthFilter {
    /// The available endpoints `key` does not avoid; when there is none, all
    /// of them (`fail_open`: a retry then tries an endpoint marked down
    /// rather than the one that just failed) or none (`fail_closed`).
    pub fn new(endpoints: &[Arc<EndpointRt>], key: &PickKey, no_healthy: NoHealthy) -> Self {
        if endpoints
            .iter()
            .enumerate()
            .any(|(i, e)| !key.avoids(i) && e.health.available())
        {
            HealthFilter::Available
        } else if no_healthy == NoHealthy::FailOpen {
            HealthFilter::All
        } else {
            HealthFilter::None
        }
    }

    #[inline]
    pub fn admits(self, ep: &EndpointRt) -> bool {
        match self {
            HealthFilter::Available => ep.health.available(),
            HealthFilter::All => true,
            HealthFilter::None => false,
        }
    }
}
