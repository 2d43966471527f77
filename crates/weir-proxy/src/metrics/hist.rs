//! Lock-free latency histograms: fixed buckets from 100 µs to 60 s (suited
//! to both sub-millisecond proxying and multi-second backends), atomic
//! counts, and a windowed variant for "the last minute" percentiles.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::clock;

/// Upper bounds in seconds; a last, implicit bucket is +Inf.
pub const BOUNDS: [f64; 18] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];
const N: usize = BOUNDS.len() + 1;

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

/// Six ten-second slots: counts and latencies of the last minute, for
/// requests per second and p50/p90/p99 in the JSON stats.
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
    fn recent(&self) -> ([u64; N], u64) {
        let epoch = clock::now_ms() / 1000 / SLOT_SECS;
        let mut out = [0u64; N];
        let mut total = 0;
        for (slot, stamp) in self.slots.iter().zip(&self.stamps) {
            if epoch.saturating_sub(stamp.load(Relaxed)) >= SLOTS as u64 {
                continue;
            }
            for (o, c) in out.iter_mut().zip(slot) {
                let v = c.load(Relaxed);
                *o += v;
                total += v;
            }
        }
        (out, total)
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

    /// Requests per second over the last minute (or since the process
    /// started, if that is shorter).
    pub fn rate(&self) -> f64 {
        let (_, total) = self.recent();
        let window =
            (clock::now_ms() as f64 / 1000.0).clamp(1.0, (SLOTS as u64 * SLOT_SECS) as f64);
        total as f64 / window
    }

    /// The q-quantile in milliseconds (the bucket's upper bound), or `None`
    /// without samples.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let (counts, total) = self.recent();
        if total == 0 {
            return None;
        }
        let want = (q * total as f64).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (i, c) in counts.iter().enumerate() {
            acc += c;
            if acc >= want {
                let bound = BOUNDS.get(i).copied().unwrap_or(120.0);
                return Some(bound * 1000.0);
            }
        }
        None
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
        assert_eq!(w.quantile_ms(0.5), Some(1.0));
        assert_eq!(w.quantile_ms(0.999), Some(2500.0));
    }
}
