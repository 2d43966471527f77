//! Capacity control: a request (or TCP session) holds a slot on its endpoint
//! while in flight; a pool with `max_conn` never exceeds it on any endpoint,
//! and requests that find no free slot wait in the pool's FIFO queue for the
//! first slot freed on any eligible endpoint.
//!
//! Unlimited pools never touch the queue's lock: a pick and two atomic
//! increments. Limited pools take one short lock per acquire and release, the
//! price of exact FIFO order and of never stranding a waiter.
//!
//! The pool is seen through `Pool` (`pool.rs`: limits, endpoints, the health
//! filter and the algorithm's pick) and `Queued` (`acquire.rs`: its queue), so this
//! module does not import the crate's `pool.rs`. A facade: taking a slot is
//! `acquire.rs`'s, the queue and its slots `queue.rs`'s.

mod acquire;
mod limits;
mod pool;
mod queue;

pub use acquire::{acquire, Granted, Queued};
pub use limits::Limits;
pub use pool::Pool;
pub use queue::{Queue, Slot};
