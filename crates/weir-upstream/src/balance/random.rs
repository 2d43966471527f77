//! Weighted random, and power of two choices built on it: two weighted random
//! candidates, the one with the lower cost wins. P2C avoids the herd that a
//! strict "least loaded" pick causes when many pickers see the same numbers.

use super::view::PoolView;

pub fn pick<P: PoolView + ?Sized>(pool: &P, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
    let n = pool.len();
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

/// Two weighted random choices (distinct when possible); the lower `cost`
/// wins, a tie keeps the first. Weights act through the sampling, so an idle
/// pool is spread by weight and a loaded one by load.
pub fn p2c<P: PoolView + ?Sized>(
    pool: &P,
    ok: &dyn Fn(usize) -> bool,
    cost: impl Fn(usize) -> f64,
) -> Option<usize> {
    let a = pick(pool, ok)?;
    let b = pick(pool, &|i| i != a && ok(i));
    let Some(b) = b else { return Some(a) };
    Some(if cost(b) < cost(a) { b } else { a })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::view::TestPool;

    #[test]
    fn p2c_on_an_idle_pool_follows_weights() {
        let p = TestPool::new(&[3, 1]);
        let b = (0..4000)
            .filter(|_| p2c(&p, &|_| true, |i| p.in_flight(i) as f64 + 1.0) == Some(1))
            .count();
        assert!((700..1300).contains(&b), "{b}");
    }

    #[test]
    fn p2c_prefers_the_less_loaded() {
        let mut p = TestPool::new(&[1, 1]);
        p.in_flight[0] = 5;
        let picks: Vec<_> = (0..100)
            .map(|_| p2c(&p, &|_| true, |i| p.in_flight(i) as f64 + 1.0))
            .collect();
        assert!(picks.iter().all(|&i| i == Some(1)));
    }
}
