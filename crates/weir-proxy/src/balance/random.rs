//! Weighted random, and power of two choices built on it: two weighted random
//! candidates, the one with the lower cost wins. P2C avoids the herd that a
//! strict "least loaded" pick causes when many pickers see the same numbers.

use crate::pool::PoolRt;

pub fn pick(pool: &PoolRt, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
    let n = pool.endpoints.len();
    let total: f64 = (0..n).filter(|&i| ok(i)).map(|i| pool.eff_weight(i)).sum();
    if total <= 0.0 {
        return None;
    }
    let mut r = fastrand::f64() * total;
    let mut last = None;
    for i in (0..n).filter(|&i| ok(i)) {
        r -= pool.eff_weight(i);
        last = Some(i);
        if r < 0.0 {
            return Some(i);
        }
    }
    last
}

/// Two weighted random choices (distinct when possible); lower `cost` per
/// unit of weight wins.
pub fn p2c(
    pool: &PoolRt,
    ok: &dyn Fn(usize) -> bool,
    cost: impl Fn(usize) -> f64,
) -> Option<usize> {
    let a = pick(pool, ok)?;
    let b = pick(pool, &|i| i != a && ok(i));
    let Some(b) = b else { return Some(a) };
    let (ca, cb) = (cost(a) / pool.eff_weight(a), cost(b) / pool.eff_weight(b));
    Some(if cb < ca { b } else { a })
}
