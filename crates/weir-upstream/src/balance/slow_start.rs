//! Slow start: an endpoint that joins after weir started (or that its health
//! checks saw recover) has its weight multiplied by a ramp that grows
//! linearly over the pool's `slow_start`, so a cold backend is not handed
//! its full share at once.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use weir_metrics::clock;

/// `from_ms` of an endpoint at full weight from the start: like HAProxy,
/// weir does not slow-start the endpoints of its first config.
const NOT_RAMPING: u64 = u64::MAX;

/// When an endpoint's ramp began; an atomic, since the health checker
/// restarts it while requests read it.
#[derive(Debug)]
pub struct Ramp {
    from_ms: AtomicU64,
}

impl Ramp {
    /// `ramp`: whether the endpoint starts ramping now (added after start).
    pub fn new(ramp: bool) -> Self {
        Ramp {
            from_ms: AtomicU64::new(if ramp { clock::now_ms() } else { NOT_RAMPING }),
        }
    }

    /// Starts the ramp again from now (the endpoint recovered).
    pub fn restart(&self) {
        self.from_ms.store(clock::now_ms(), Relaxed);
    }

    /// The factor in (0, 1] for a pool whose `slow_start` is this long.
    #[inline]
    pub fn factor(&self, slow_start: Duration) -> f64 {
        if slow_start.is_zero() {
            return 1.0;
        }
        let since = self.from_ms.load(Relaxed);
        if since == NOT_RAMPING {
            return 1.0;
        }
        let elapsed = clock::now_ms().saturating_sub(since) as f64;
        // Start at 5%, not 0, so a new endpoint is measured at all.
        (elapsed / slow_start.as_millis() as f64).clamp(0.05, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramps_from_a_twentieth_to_full() {
        let slow = Duration::from_secs(3600);
        assert_eq!(Ramp::new(false).factor(slow), 1.0);
        let r = Ramp::new(true);
        assert_eq!(r.factor(slow), 0.05);
        assert_eq!(r.factor(Duration::ZERO), 1.0);
    }
}
