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
///
/// Run per endpoint, each step adds every weight and picks the largest sum: n × total steps,
/// 100 ms per endpoint change for a pool of 10,000. Endpoints of equal weight move in step:
/// within such a group the one picked least so far has the largest sum (the lowest index
/// among equals), so the group's picks go round its members in index order. So the loop runs
/// per distinct weight instead, with the same result (a test checks it against the plain
/// loop): pools have few distinct weights however many endpoints they have.
fn smooth_schedule(weights: &[u64]) -> Vec<u32> {
    struct Group {
        weight: i64,
        /// Endpoint indices with this weight, ascending.
        members: Vec<u32>,
        /// Picks of the group so far.
        picks: usize,
    }
    let mut by_weight: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
    for (i, &w) in weights.iter().enumerate() {
        by_weight.entry(w).or_default().push(i as u32);
    }
    let mut groups: Vec<Group> = by_weight
        .into_iter()
        .map(|(w, members)| Group {
            weight: w as i64,
            members,
            picks: 0,
        })
        .collect();
    let total: i64 = weights.iter().map(|&w| w as i64).sum();
    let mut out = Vec::with_capacity(total as usize);
    for t in 1..=total {
        // Each group's best member: the next in its turn, holding the group's largest sum
        // (t × weight, less `total` for each of its own picks).
        let mut best: Option<(i64, u32, usize)> = None;
        for (g, group) in groups.iter().enumerate() {
            let len = group.members.len();
            let sum = t * group.weight - total * (group.picks / len) as i64;
            let index = group.members[group.picks % len];
            // The largest sum; among equal sums the lowest index, as the plain loop's `>`.
            if best.is_none_or(|(s, i, _)| sum > s || (sum == s && index < i)) {
                best = Some((sum, index, g));
            }
        }
        let (_, index, g) = best.expect("a pool with weights has a group");
        groups[g].picks += 1;
        out.push(index);
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

    /// nginx's loop as it is written: every endpoint, every step.
    fn plain_loop(weights: &[u64]) -> Vec<u32> {
        let total: i64 = weights.iter().map(|&w| w as i64).sum();
        let mut current = vec![0i64; weights.len()];
        let mut out = Vec::new();
        for _ in 0..total {
            let mut best = 0;
            for (i, &x) in weights.iter().enumerate() {
                current[i] += x as i64;
                if current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
            out.push(best as u32);
        }
        out
    }

    #[test]
    fn the_schedule_is_the_plain_loops() {
        for (n, w) in [(1, 1), (3, 1), (4, 3), (7, 2)] {
            let weights = vec![w; n];
            assert_eq!(smooth_schedule(&weights), plain_loop(&weights), "{n} x {w}");
        }
        for weights in [
            &[5, 1, 1][..],
            &[1, 1, 8],
            &[3, 1],
            &[2, 3, 2, 3, 1],
            &[1, 4, 4, 1, 9],
        ] {
            assert_eq!(smooth_schedule(weights), plain_loop(weights), "{weights:?}");
        }
        // Random pools: up to 12 endpoints, weights 1 to 6 (so groups of several).
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..500 {
            let n = 1 + (next() % 12) as usize;
            let weights: Vec<u64> = (0..n).map(|_| 1 + next() % 6).collect();
            assert_eq!(
                smooth_schedule(&weights),
                plain_loop(&weights),
                "{weights:?}"
            );
        }
    }

    #[test]
    fn a_large_pool_of_few_weights_gets_every_endpoint_its_share() {
        let weights: Vec<u32> = (0..10_000).map(|i| [1, 2, 3, 4][i % 4]).collect();
        let rr = RoundRobin::new(&weights);
        let mut picks = vec![0u32; weights.len()];
        for _ in 0..rr.len() {
            picks[rr.pick().unwrap()] += 1;
        }
        // 25,000 in all: under MAX_SCHEDULE, so no scaling.
        assert_eq!(picks, weights);
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
