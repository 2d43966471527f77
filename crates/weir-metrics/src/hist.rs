//! Lock-free latency histograms: fixed buckets from 100 µs to 60 s (suited
//! to both sub-millisecond proxying and multi-second backends), atomic
//! counts, a windowed variant for "the last minute" percentiles, and the
//! quantile estimate every percentile weir shows comes from.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::clock;

/// Upper bounds in seconds; a last, implicit bucket is +Inf.
pub const BOUNDS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];
/// Buckets of a histogram: one per bound, and +Inf.
pub const N: usize = BOUNDS.len() + 1;

/// The q-quantile (0 < q ≤ 1) of bucket counts (one per bound, then +Inf) in seconds,
/// estimated as Prometheus's `histogram_quantile` does: linearly within the bucket that
/// holds the q-th observation, from its lower bound (0 for the first) to its upper bound;
/// in the +Inf bucket, the highest finite bound. A bucket's bound alone would read as
/// the same few values (5 ms, 10 ms) whatever the traffic. `None` without observations.
pub fn quantile(counts: &[u64], q: f64) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * total as f64;
    let mut below = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        if c > 0 && (below + c) as f64 >= rank {
            let Some(&upper) = BOUNDS.get(i) else {
                return Some(BOUNDS[BOUNDS.len() - 1]);
            };
            let lower = i.checked_sub(1).map_or(0.0, |j| BOUNDS[j]);
            return Some(lower + (upper - lower) * (rank - below as f64) / c as f64);
        }
        below += c;
    }
    None
}

#[inline]
fn bucket(d: Duration) -> usize {
    let s = d.as_secs_f64();
    BOUNDS.iter().position(|&b| s <= b).unwrap_or(BOUNDS.len())
}

#[derive(Debug, Default)]
pub struct Histogram {
    counts: [AtomicU64; N],
    sum_ns: AtomicU64,
}

impl Histogram {
    #[inline]
    pub fn observe(&self, d: Duration) {
        self.counts[bucket(d)].fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(d.as_nanos() as u64, Relaxed);
    }

    /// The count of each bucket (`BOUNDS`, then +Inf), for differences over time.
    pub fn counts(&self) -> [u64; N] {
        std::array::from_fn(|i| self.counts[i].load(Relaxed))
    }

    /// (sum in seconds, count, per-bucket (upper bound, count)); the count
    /// is the buckets' total, so a scrape is always self-consistent.
    pub fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let mut total = 0;
        let mut buckets = Vec::with_capacity(N);
        for (i, c) in self.counts.iter().enumerate() {
            let n = c.load(Relaxed);
            total += n;
            let bound = BOUNDS.get(i).copied().unwrap_or(f64::INFINITY);
            buckets.push((bound, n));
        }
        (self.sum_ns.load(Relaxed) as f64 / 1e9, total, buckets)
    }
}

/// Six ten-second slots: latencies of the last minute, for p50/p90/p99 in the
/// JSON stats.
const SLOTS: usize = 6;
const SLOT_SECS: u64 = 10;

#[derive(Debug, Default)]
pub struct Windowed {
    slots: [[AtomicU64; N]; SLOTS],
    stamps: [AtomicU64; SLOTS],
}

impl Windowed {
    #[inline]
    pub fn observe(&self, d: Duration) {
        let epoch = clock::now_ms() / 1000 / SLOT_SECS;
        let i = (epoch as usize) % SLOTS;
        if self.stamps[i].load(Relaxed) != epoch {
            // First sample of a new ten seconds in this slot: clear it. A
            // racing sample may be lost; a rolling statistic does not care.
            if self.stamps[i].swap(epoch, Relaxed) != epoch {
                for c in &self.slots[i] {
                    c.store(0, Relaxed);
                }
            }
        }
        self.slots[i][bucket(d)].fetch_add(1, Relaxed);
    }

    /// Bucket counts over the last minute (slots older than that are skipped).
    fn recent(&self) -> [u64; N] {
        let epoch = clock::now_ms() / 1000 / SLOT_SECS;
        let mut out = [0u64; N];
        for (slot, stamp) in self.slots.iter().zip(&self.stamps) {
            if epoch.saturating_sub(stamp.load(Relaxed)) >= SLOTS as u64 {
                continue;
            }
            for (o, c) in out.iter_mut().zip(slot) {
                *o += c.load(Relaxed);
            }
        }
        out
    }

    /// Adds another window's recent samples to this one (for pool totals).
    pub fn absorb(&self, other: &Windowed) {
        let epoch = clock::now_ms() / 1000 / SLOT_SECS;
        for ((slot, stamp), (oslot, ostamp)) in self
            .slots
            .iter()
            .zip(&self.stamps)
            .zip(other.slots.iter().zip(&other.stamps))
        {
            let s = ostamp.load(Relaxed);
            if epoch.saturating_sub(s) >= SLOTS as u64 {
                continue;
            }
            stamp.fetch_max(s, Relaxed);
            for (c, o) in slot.iter().zip(oslot) {
                c.fetch_add(o.load(Relaxed), Relaxed);
            }
        }
    }

    /// The q-quantile over the last minute in milliseconds ([`quantile`]), or `None`
    /// without samples.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        quantile(&self.recent(), q).map(|s| s * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_quantiles() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(50));
        h.observe(Duration::from_millis(3));
        let (sum, count, buckets) = h.snapshot();
        assert_eq!(count, 2);
        assert!((sum - 0.00305).abs() < 1e-9);
        assert_eq!(buckets[0], (0.0001, 1));
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 2);

        let w = Windowed::default();
        for _ in 0..99 {
            w.observe(Duration::from_millis(1));
        }
        w.observe(Duration::from_secs(2));
        // 99 in (0.5 ms, 1 ms], 1 in (1 s, 2.5 s]: the median halfway through the first.
        assert!(close_ms(w.quantile_ms(0.5), 0.5 + 0.5 * 50.0 / 99.0));
        // The 99.9th of 100 is 0.9 of the way through the one slow request's bucket.
        assert!(close_ms(w.quantile_ms(0.999), 1000.0 + 1500.0 * 0.9));
        assert_eq!(Windowed::default().quantile_ms(0.5), None);
    }

    fn at(pairs: &[(usize, u64)]) -> [u64; N] {
        let mut c = [0; N];
        for &(i, n) in pairs {
            c[i] = n;
        }
        c
    }

    fn close(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    fn close_ms(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-9)
    }

    #[test]
    fn quantiles_are_interpolated_within_their_bucket() {
        // Ten requests in (2.5 ms, 5 ms]: p50 halfway, p90 nine tenths of the way, not 5 ms.
        let c = at(&[(5, 10)]);
        assert!(close(quantile(&c, 0.5), 0.00375));
        assert!(close(quantile(&c, 0.9), 0.0025 + 0.0025 * 0.9));
        assert!(close(quantile(&c, 1.0), 0.005));
        // The first bucket starts at 0.
        assert!(close(quantile(&at(&[(0, 4)]), 0.25), 0.000025));
        // Across buckets: 30 in (1 ms, 2.5 ms], 70 in (5 ms, 10 ms]; the 50th is the 20th
        // of the 70.
        let c = at(&[(4, 30), (6, 70)]);
        assert!(close(quantile(&c, 0.5), 0.005 + 0.005 * 20.0 / 70.0));
        assert!(close(quantile(&c, 0.3), 0.0025));
        assert!(close(quantile(&c, 0.99), 0.005 + 0.005 * 69.0 / 70.0));
        // Beyond the last bound: that bound, as Prometheus answers.
        assert!(close(quantile(&at(&[(0, 1), (N - 1, 1)]), 0.99), 60.0));
        assert_eq!(quantile(&[0; N], 0.5), None);
    }

    #[test]
    fn a_histograms_counts_are_its_buckets() {
        let h = Histogram::default();
        h.observe(Duration::from_millis(7));
        h.observe(Duration::from_millis(7));
        let c = h.counts();
        assert_eq!(c[6], 2);
        assert_eq!(c.iter().sum::<u64>(), 2);
        assert!(close(quantile(&c, 0.5), 0.0075));
    }
}
