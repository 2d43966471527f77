//! The pool as capacity control sees it (a trait `PoolRt` implements), so that capacity
//! does not import `pool.rs`: its limits, endpoints, health filter and the algorithm's pick.

use std::sync::Arc;
use std::time::Duration;

use super::limits::Limits;
use crate::balance::PickKey;
use crate::endpoint::EndpointRt;
use crate::health::HealthFilter;

/// What capacity control needs from a pool snapshot; `PoolRt` provides it.
/// `acquire` is generic over it (no virtual call on the request path);
/// only the queue, which outlives snapshots and serves waiters from the
/// newest one, holds it as `dyn Pool`. The queue itself is `Queued`'s to give
/// (`acquire.rs`): the queue holds a pool, so a pool here names no queue.
pub trait Pool: Send + Sync + 'static {
    fn limits(&self) -> Limits;

    fn endpoints(&self) -> &[Arc<EndpointRt>];

    /// Which endpoints the pool's health policy lets `key` use.
    fn health_filter(&self, key: &PickKey) -> HealthFilter;

    /// The pool's algorithm's pick among the endpoints `ok` accepts.
    fn choose(&self, key: &PickKey, ok: &dyn Fn(usize) -> bool) -> Option<usize>;

    /// A request waited `d` for a slot in a limited pool (for metrics).
    fn waited(&self, d: Duration);
}
