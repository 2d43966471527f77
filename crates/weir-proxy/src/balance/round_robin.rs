//! Smooth weighted round robin, precomputed into a schedule when the snapshot
//! is built, so picking is one atomic increment and an index: no lock on the
//! hot path, and the interleaving is exact (weights 1:1:8 give
//! `c c a c c b c c c c`-like spreads, never `a b c c c c c c c c`).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The longest schedule we precompute; larger weight sums are scaled down
/// proportionally (keeping every endpoint at least once).
const MAX_SCHEDULE: u64 = 1 << 16;

#[derive(Debug)]
pub struct RoundRobin {
    schedule: Box<[u32]>,
    next: AtomicUsize,
}

impl RoundRobin {
    /// `weights[i]` is endpoint i's weight (>= 1).
    pub fn new(weights: &[u32]) -> Self {
        let weights = scale(weights);
        RoundRobin {
            schedule: smooth_schedule(&weights).into_boxed_slice(),
            next: AtomicUsize::new(0),
        }
    }

    /// The next endpoint index, or `None` for an empty pool.
    #[inline]
    pub fn pick(&self) -> Option<usize> {
        if self.schedule.is_empty() {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Some(self.schedule[n % self.schedule.len()] as usize)
    }

    /// The next endpoint in schedule order that `ok` accepts, without taking
    /// a turn: for a retry, which must not shift the rotation that first
    /// tries follow (else a failing endpoint would get every first try).
    pub fn peek_where(&self, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
        let len = self.schedule.len();
        let start = self.next.load(Ordering::Relaxed);
        (0..len)
            .map(|k| self.schedule[(start + k) % len] as usize)
            .find(|&i| ok(i))
    }

    /// The next endpoint in schedule order that `ok` accepts; at most one
    /// full cycle is scanned.
    #[inline]
    pub fn pick_where(&self, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
        let len = self.schedule.len();
        if len == 0 {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for k in 0..len {
            let i = self.schedule[(start + k) % len] as usize;
            if ok(i) {
                if k > 0 {
                    // Skipped entries were consumed: keep the cycle moving.
                    self.next.fetch_add(k, Ordering::Relaxed);
                }
                return Some(i);
            }
        }
        None
    }

    /// Entries in one full cycle (the sum of the weights, scaled).
    pub fn len(&self) -> usize {
        self.schedule.len()
    }

    pub fn is_empty(&self) -> bool {
        self.schedule.is_empty()
    }
}

fn scale(weights: &[u32]) -> Vec<u64> {
    let sum: u64 = weights.iter().map(|&w| w as u64).sum();
    if sum <= MAX_SCHEDULE {
        return weights.iter().map(|&w| w as u64).collect();
    }
    weights
        .iter()
        .map(|&w| ((w as u64 * MAX_SCHEDULE) / sum).max(1))
        .collect()
}

/// nginx's smooth weighted round robin, run once for a full cycle.
fn smooth_schedule(weights: &[u64]) -> Vec<u32> {
    // Equal weights (the usual case, and every pool of registered services): each endpoint
    // in turn, the cycle the loop below makes in n × total steps, which for 10,000
    // endpoints took 100 ms on every endpoint change.
    if let Some(&w) = weights.first() {
        if weights.iter().all(|&x| x == w) {
            let n = weights.len() as u32;
            return (0..w).flat_map(|_| 0..n).collect();
        }
    }
    let total: i64 = weights.iter().map(|&w| w as i64).sum();
    let mut current = vec![0i64; weights.len()];
    let mut out = Vec::with_capacity(total as usize);
    for _ in 0..total {
        let mut best = 0;
        for (i, &w) in weights.iter().enumerate() {
            current[i] += w as i64;
            if current[i] > current[best] {
                best = i;
            }
        }
        current[best] -= total;
        out.push(best as u32);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(weights: &[u32]) -> Vec<usize> {
        let rr = RoundRobin::new(weights);
        (0..rr.len()).map(|_| rr.pick().unwrap()).collect()
    }

    #[test]
    fn exact_split_over_a_cycle() {
        let c = cycle(&[3, 1]);
        assert_eq!(c.iter().filter(|&&i| i == 0).count(), 3);
        assert_eq!(c.iter().filter(|&&i| i == 1).count(), 1);
    }

    #[test]
    fn smooth_interleaving() {
        let c = cycle(&[1, 1, 8]);
        assert_eq!(c.len(), 10);
        // The heavy endpoint never runs more than 4 in a row, the light ones
        // are spread rather than bunched at the start.
        let max_run = c.windows(5).filter(|w| w.iter().all(|&i| i == 2)).count();
        assert_eq!(max_run, 0, "{c:?}");
        assert_ne!(&c[..2], &[0, 1], "{c:?}");
    }

    #[test]
    fn equal_weights_make_the_cycle_of_the_general_loop() {
        for (n, w) in [(1, 1), (3, 1), (4, 3), (7, 2)] {
            let weights = vec![w; n];
            let fast = smooth_schedule(&weights);
            // The general loop, on weights that differ by nothing but are not seen as equal.
            let mut general = Vec::new();
            let total = (n as u64 * w) as i64;
            let mut current = vec![0i64; n];
            for _ in 0..total {
                let mut best = 0;
                for (i, &x) in weights.iter().enumerate() {
                    current[i] += x as i64;
                    if current[i] > current[best] {
                        best = i;
                    }
                }
                current[best] -= total;
                general.push(best as u32);
            }
            assert_eq!(fast, general, "{n} x {w}");
        }
    }

    #[test]
    fn empty_pool() {
        assert_eq!(RoundRobin::new(&[]).pick(), None);
    }

    #[test]
    fn huge_weights_are_scaled() {
        let rr = RoundRobin::new(&[1000; 1000]);
        assert!(rr.len() <= MAX_SCHEDULE as usize + 1000);
    }
}
