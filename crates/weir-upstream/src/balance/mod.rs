//! Endpoint selection. Every algorithm is weight-aware (including slow start's
//! ramped weights) and only ever returns an endpoint the caller's `ok` accepts,
//! which is how per-endpoint `max_conn` is respected: the caller passes "has a
//! free slot". Algorithms read the pool through [`PoolView`] and depend on
//! nothing above this module.
//!
//! A facade: the algorithm and its pick are `algorithm.rs`'s, what a request brings
//! `pick_key.rs`'s.

mod algorithm;
mod ewma;
mod hash;
mod least_conn;
mod pick_key;
mod random;
mod round_robin;
mod slow_start;
pub mod sticky;
mod view;

pub use algorithm::Algorithm;
pub use ewma::Ewma;
pub use hash::{hash_bytes, ip_hash, HashRing};
pub use pick_key::PickKey;
pub use round_robin::RoundRobin;
pub use slow_start::Ramp;
pub use sticky::StickyCodec;
pub use view::PoolView;
