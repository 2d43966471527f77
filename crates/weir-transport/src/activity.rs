//! When a relayed session last moved a byte, either way: what its idle timeout is measured
//! from (`relay.rs`, `splice.rs`, `copy.rs`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Milliseconds since the session began at the last byte moved.
pub struct Activity {
    base: Instant,
    last: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Activity {
            base: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn touch(&self) {
        self.last
            .store(self.base.elapsed().as_millis() as u64, Relaxed);
    }

    pub(crate) fn idle_deadline(&self, idle: Duration) -> Instant {
        self.base + Duration::from_millis(self.last.load(Relaxed)) + idle
    }
}
