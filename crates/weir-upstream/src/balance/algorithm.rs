//! A pool's balancing algorithm ([`Algorithm`]), made from its config, and its pick: the
//! one place that dispatches to each algorithm's file (`hash.rs`, `least_conn.rs`,
//! `random.rs`, `round_robin.rs`, `sticky.rs`), which see the pool only through
//! `PoolView` (`view.rs`).

use std::sync::atomic::AtomicUsize;

use super::hash::{self, HashRing};
use super::pick_key::PickKey;
use super::round_robin::RoundRobin;
use super::sticky::StickyCodec;
use super::view::PoolView;
use super::{least_conn, random};

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
