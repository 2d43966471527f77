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

/// Two weighted random choices (distinct when possible); the lower `cost`
/// wins, a tie keeps the first. Weights act through the sampling, so an idle
/// pool is spread by weight and a loaded one by load.
pub fn p2c(
    pool: &PoolRt,
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
    use std::sync::Arc;

    fn pool(weights: &[u32]) -> PoolRt {
        let cfg = weir_config::Pool {
            endpoints: weights
                .iter()
                .enumerate()
                .map(|(i, &w)| weir_config::Endpoint {
                    addr: format!("127.0.0.1:{}", 1000 + i).parse().unwrap(),
                    weight: w,
                })
                .collect(),
            ..Default::default()
        };
        let eps = cfg
            .endpoints
            .iter()
            .map(|e| {
                Arc::new(crate::endpoint::EndpointRt::new(
                    "p".into(),
                    e.addr,
                    false,
                    true,
                ))
            })
            .collect();
        PoolRt::new("p".into(), &cfg, eps, Default::default())
    }

    #[test]
    fn p2c_on_an_idle_pool_follows_weights() {
        let p = pool(&[3, 1]);
        let b = (0..4000)
            .filter(|_| p2c(&p, &|_| true, |i| p.in_flight(i) as f64 + 1.0) == Some(1))
            .count();
        assert!((700..1300).contains(&b), "{b}");
    }

    #[test]
    fn p2c_prefers_the_less_loaded() {
        let p = pool(&[1, 1]);
        p.endpoints[0]
            .in_flight
            .store(5, std::sync::atomic::Ordering::Relaxed);
        let picks: Vec<_> = (0..100)
            .map(|_| p2c(&p, &|_| true, |i| p.in_flight(i) as f64 + 1.0))
            .collect();
        assert!(picks.iter().all(|&i| i == Some(1)));
    }
}
