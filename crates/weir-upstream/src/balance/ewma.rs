//! Peak-EWMA latency per endpoint (as in Finagle and Linkerd): a slower
//! sample is taken at once, faster ones are averaged in, and the value decays
//! toward zero while the endpoint is not observed, so a backend that was slow
//! once gets traffic again and is measured anew.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use weir_metrics::clock;

/// How fast old samples fade.
const DECAY: Duration = Duration::from_secs(10);
/// Cost floor so that idle, unmeasured endpoints still compare by load.
const FLOOR_NS: f64 = 100_000.0;

#[derive(Debug, Default)]
pub struct Ewma {
    /// f64 nanoseconds.
    value: AtomicU64,
    stamp_ms: AtomicU64,
}

impl Ewma {
    fn decayed(&self, now_ms: u64) -> f64 {
        let v = f64::from_bits(self.value.load(Relaxed));
        let dt = now_ms.saturating_sub(self.stamp_ms.load(Relaxed)) as f64;
        v * (-dt / DECAY.as_millis() as f64).exp()
    }

    pub fn observe(&self, rtt: Duration) {
        let now = clock::now_ms();
        let prev = self.decayed(now);
        let rtt = rtt.as_nanos() as f64;
        let dt = now.saturating_sub(self.stamp_ms.load(Relaxed)) as f64;
        let w = (-dt / DECAY.as_millis() as f64).exp();
        let next = if rtt > prev {
            rtt
        } else {
            prev * w + rtt * (1.0 - w)
        };
        // Racing updates may lose a sample; a moving average does not care.
        self.value.store(next.to_bits(), Relaxed);
        self.stamp_ms.store(now, Relaxed);
    }

    /// The current latency estimate in ns (never below a small floor).
    pub fn cost(&self) -> f64 {
        self.decayed(clock::now_ms()).max(FLOOR_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_are_taken_at_once() {
        let e = Ewma::default();
        e.observe(Duration::from_millis(1));
        e.observe(Duration::from_millis(50));
        assert!(e.cost() > 40_000_000.0);
    }
}
