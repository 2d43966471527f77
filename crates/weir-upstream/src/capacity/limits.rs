//! A pool's capacity limits as capacity control reads them: slots per endpoint and across
//! the pool, and the queue's length and wait.

use std::time::Duration;

/// A pool's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Slots per endpoint; 0 = no limit.
    pub max_conn: u32,
    /// Slots across the pool; 0 = no limit.
    pub max_conn_total: u32,
    /// Waiters in the queue.
    pub max_queue: u32,
    pub queue_timeout: Duration,
}

impl Limits {
    /// Whether requests can find the pool full (and then queue).
    #[inline]
    pub fn limited(&self) -> bool {
        self.max_conn > 0 || self.max_conn_total > 0
    }
}
