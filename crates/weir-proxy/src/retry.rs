//! The retry budget: retries may add at most `budget_percent` of a pool's
//! requests, plus `budget_min_per_sec` a second, so that when every backend
//! fails, retries cannot multiply the load that is already too much (the
//! Finagle design, simplified to a token counter).

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::clock;

/// Tokens are counted in thousandths; one retry costs 1000.
const RETRY_COST: i64 = 1000;
/// A pool cannot save up more than this many retries.
const MAX_SAVED: i64 = 100 * RETRY_COST;

#[derive(Debug, Default)]
pub struct Budget {
    tokens: AtomicI64,
    second: AtomicU64,
    in_second: AtomicU32,
}

impl Budget {
    /// A request arrived: it earns `percent`% of a retry.
    #[inline]
    pub fn deposit(&self, percent: u32) {
        if percent == 0 {
            return;
        }
        let t = self.tokens.fetch_add(percent as i64 * 10, Relaxed);
        if t > MAX_SAVED {
            self.tokens.store(MAX_SAVED, Relaxed);
        }
    }

    /// Whether one more retry may go now.
    pub fn withdraw(&self, min_per_sec: u32) -> bool {
        if self.tokens.fetch_sub(RETRY_COST, Relaxed) >= RETRY_COST {
            return true;
        }
        self.tokens.fetch_add(RETRY_COST, Relaxed);
        let now = clock::now_ms() / 1000;
        if self.second.swap(now, Relaxed) != now {
            self.in_second.store(0, Relaxed);
        }
        self.in_second.fetch_add(1, Relaxed) < min_per_sec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_percent_plus_a_floor() {
        let b = Budget::default();
        for _ in 0..100 {
            b.deposit(20);
        }
        let allowed = (0..100).filter(|_| b.withdraw(3)).count();
        // 20 from deposits, 3 from the per-second floor.
        assert_eq!(allowed, 23);
    }
}
