//! The retry budget (after Finagle's): retries may add at most
//! `budget_percent` of the pool's requests of the last ten seconds, plus
//! `budget_min_per_sec` a second. A short outage of one endpoint is covered
//! by the retries the pool earned just before it; when every backend fails
//! for longer, the bank runs dry and retries cannot multiply the load.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

use weir_metrics::clock;

/// Tokens are counted in hundredths of a retry.
const RETRY_COST: i64 = 100;
/// Seconds of requests that earn the bank.
const WINDOW: usize = 10;

#[derive(Debug, Default)]
pub struct Budget {
    tokens: AtomicI64,
    /// Requests per second for the last `WINDOW` seconds, and the second
    /// each bucket belongs to.
    buckets: [AtomicU64; WINDOW],
    stamps: [AtomicU64; WINDOW],
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
        let now = clock::now_ms() / 1000;
        let i = (now as usize) % WINDOW;
        // Looked at before it is swapped: a swap is a locked operation (~6 ns here), and
        // the second changes once a second, not once a request.
        if self.stamps[i].load(Relaxed) != now && self.stamps[i].swap(now, Relaxed) != now {
            self.buckets[i].store(0, Relaxed);
        }
        self.buckets[i].fetch_add(1, Relaxed);
        let t = self.tokens.fetch_add(percent as i64, Relaxed) + percent as i64;
        let cap = self.recent(now) as i64 * percent as i64;
        if t > cap {
            // Earned more than the window allows: forget the oldest savings.
            self.tokens.fetch_min(cap, Relaxed);
        }
    }

    fn recent(&self, now: u64) -> u64 {
        (0..WINDOW)
            .filter(|&i| now.saturating_sub(self.stamps[i].load(Relaxed)) < WINDOW as u64)
            .map(|i| self.buckets[i].load(Relaxed))
            .sum()
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

    #[test]
    fn savings_cover_a_burst() {
        let b = Budget::default();
        for _ in 0..10_000 {
            b.deposit(20);
        }
        let allowed = (0..5_000).filter(|_| b.withdraw(0)).count();
        assert_eq!(allowed, 2_000);
    }
}
