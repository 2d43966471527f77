//! Least connections, weighted: the endpoint with the fewest in-flight
//! requests per unit of weight. Ties go round the pool from a rotating start.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::view::PoolView;

pub fn pick<P: PoolView + ?Sized>(
    pool: &P,
    next: &AtomicUsize,
    ok: &dyn Fn(usize) -> bool,
) -> Option<usize> {
    let n = pool.len();
    if n == 0 {
        return None;
    }
    let start = next.fetch_add(1, Ordering::Relaxed);
    let mut best: Option<(usize, f64)> = None;
    for k in 0..n {
        let i = (start + k) % n;
        if !ok(i) {
            continue;
        }
        let score = (pool.in_flight(i) as f64 + 1.0) / pool.eff_weight(i);
        if best.is_none_or(|(_, s)| score < s) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}
