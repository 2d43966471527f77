//! Endpoint selection. Every algorithm is weight-aware (including slow start's
//! ramped weights) and only ever returns an endpoint the caller's `ok` accepts,
//! which is how per-endpoint `max_conn` is respected: the caller passes "has a
//! free slot". Algorithms read the pool through [`PoolView`] and depend on
//! nothing above this module.

mod ewma;
mod hash;
mod least_conn;
mod random;
mod round_robin;
mod slow_start;
pub mod sticky;
mod view;

use std::sync::atomic::AtomicUsize;

pub use ewma::Ewma;
pub use hash::{hash_bytes, ip_hash, HashRing};
pub use round_robin::RoundRobin;
pub use slow_start::Ramp;
pub use sticky::StickyCodec;
pub use view::PoolView;

/// What a request brings to endpoint selection.
#[derive(Debug, Clone, Copy, Default)]
pub struct PickKey {
    /// The hash of the configured key (`balance = "hash"`); `None` when the
    /// request lacks it, and then the pool round-robins.
    pub hash: Option<u64>,
    /// The endpoint id from a valid sticky cookie.
    pub sticky: Option<u64>,
    /// Endpoint indices (below 64) not to pick, e.g. ones that just refused a connection.
    pub avoid: u64,
}

impl PickKey {
    #[inline]
    pub fn avoids(&self, i: usize) -> bool {
        i < 64 && self.avoid & (1 << i) != 0
    }

    pub fn avoid(&mut self, i: usize) {
        if i < 64 {
            self.avoid |= 1 << i;
        }
    }
}

#[derive(Debug)]
pub enum Algorithm {
    RoundRobin(RoundRobin),
    /// Rotating start for tie-breaks, so equal endpoints share the load.
    LeastConn(AtomicUsize),
    Random,
    P2c,
    Ewma,
    Hash {
        ring: HashRing,
        factor: f64,
        /// For requests without the key.
        fallback: RoundRobin,
    },
    Sticky {
        codec: StickyCodec,
        base: Box<Algorithm>,
    },
}

impl Algorithm {
    pub fn new(cfg: &weir_config::Pool, balance: weir_config::Balance, ids: &[u64]) -> Self {
        use weir_config::Balance as B;
        let weights: Vec<u32> = cfg.endpoints.iter().map(|e| e.weight).collect();
        match balance {
            B::RoundRobin => Algorithm::RoundRobin(RoundRobin::new(&weights)),
            B::LeastConn => Algorithm::LeastConn(AtomicUsize::new(0)),
            B::Random => Algorithm::Random,
            B::P2c => Algorithm::P2c,
            B::Ewma => Algorithm::Ewma,
            B::Hash => Algorithm::Hash {
                ring: HashRing::new(ids, &weights),
                factor: cfg.hash_balance_factor,
                fallback: RoundRobin::new(&weights),
            },
            B::Sticky => Algorithm::Sticky {
                codec: StickyCodec::new(cfg.sticky.secret.as_deref()),
                base: Box::new(Algorithm::new(cfg, cfg.sticky.base, ids)),
            },
        }
    }

    /// An endpoint index that `ok` accepts, or `None` when there is none.
    pub fn pick<P: PoolView + ?Sized>(
        &self,
        pool: &P,
        key: &PickKey,
        ok: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        let ok = |i: usize| !key.avoids(i) && ok(i);
        match self {
            Algorithm::RoundRobin(rr) if key.avoid != 0 => rr.peek_where(ok),
            Algorithm::RoundRobin(rr) => {
                if pool.ramping() {
                    // Slow start: a ramping endpoint keeps its turn with a
                    // probability equal to its ramp.
                    rr.pick_where(|i| ok(i) && fastrand::f64() < pool.ramp(i))
                        .or_else(|| rr.pick_where(ok))
                } else {
                    rr.pick_where(ok)
                }
            }
            Algorithm::LeastConn(next) => least_conn::pick(pool, next, &ok),
            Algorithm::Random => random::pick(pool, &ok),
            Algorithm::P2c => random::p2c(pool, &ok, |i| pool.in_flight(i) as f64 + 1.0),
            Algorithm::Ewma => random::p2c(pool, &ok, |i| {
                pool.latency(i) * (pool.in_flight(i) as f64 + 1.0)
            }),
            Algorithm::Hash {
                ring,
                factor,
                fallback,
            } => match key.hash {
                Some(h) => hash::pick(pool, ring, *factor, h, &ok),
                None => fallback.pick_where(ok),
            },
            Algorithm::Sticky { base, .. } => key
                .sticky
                .and_then(|id| (0..pool.len()).find(|&i| pool.id(i) == id))
                .filter(|&i| ok(i))
                .or_else(|| base.pick(pool, key, &ok)),
        }
    }

    /// Whether picks read the endpoints' latency estimate (ewma, also as a
    /// sticky pool's base), so that it must be kept up to date.
    pub fn uses_latency(&self) -> bool {
        match self {
            Algorithm::Ewma => true,
            Algorithm::Sticky { base, .. } => base.uses_latency(),
            _ => false,
        }
    }

    pub fn sticky_codec(&self) -> Option<&StickyCodec> {
        match self {
            Algorithm::Sticky { codec, .. } => Some(codec),
            _ => None,
        }
    }
}
