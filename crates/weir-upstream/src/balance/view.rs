//! What a balancing algorithm reads about a pool: a read-only view, so that
//! `balance/` depends on nothing above it. `PoolRt` (`pool.rs`) provides it;
//! the algorithms are generic over it, so a pick is compiled for the one real
//! pool type and makes no virtual call.

pub trait PoolView {
    /// Endpoints in the pool; algorithms return indices below this.
    fn len(&self) -> usize;

    /// Endpoint `i`'s configured weight (at least 1).
    fn weight(&self, i: usize) -> u32;

    /// Requests (http) or sessions (tcp) in flight on endpoint `i`.
    fn in_flight(&self, i: usize) -> u32;

    /// Endpoint `i`'s latency estimate in ns ([`super::Ewma::cost`]).
    fn latency(&self, i: usize) -> f64;

    /// Endpoint `i`'s stable identity, the one sticky cookies carry.
    fn id(&self, i: usize) -> u64;

    /// Endpoint `i`'s slow-start factor in (0, 1] ([`super::Ramp`]).
    fn ramp(&self, i: usize) -> f64;

    /// Whether any endpoint is still in its slow-start ramp.
    fn ramping(&self) -> bool;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Weight after slow start.
    #[inline]
    fn eff_weight(&self, i: usize) -> f64 {
        self.weight(i) as f64 * self.ramp(i)
    }
}

/// A pool of plain numbers, for the algorithms' unit tests.
#[cfg(test)]
#[derive(Debug, Default)]
pub struct TestPool {
    pub weights: Vec<u32>,
    pub in_flight: Vec<u32>,
}

#[cfg(test)]
impl TestPool {
    pub fn new(weights: &[u32]) -> Self {
        TestPool {
            weights: weights.to_vec(),
            in_flight: vec![0; weights.len()],
        }
    }
}

#[cfg(test)]
impl PoolView for TestPool {
    fn len(&self) -> usize {
        self.weights.len()
    }
    fn weight(&self, i: usize) -> u32 {
        self.weights[i]
    }
    fn in_flight(&self, i: usize) -> u32 {
        self.in_flight[i]
    }
    fn latency(&self, _: usize) -> f64 {
        0.0
    }
    fn id(&self, i: usize) -> u64 {
        i as u64
    }
    fn ramp(&self, _: usize) -> f64 {
        1.0
    }
    fn ramping(&self) -> bool {
        false
    }
}
