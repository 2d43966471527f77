//! The admin token's failed attempts, for `weir_admin_auth_failures_total` (by reason:
//! `wrong_token` checked and wrong, `throttled` refused unchecked while its source is slowed
//! down) and `weir_admin_auth_sources_evicted_total` (sources forgotten early because the
//! most the admin listener remembers were there). The admin listener counts, `/metrics`
//! shows them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub static WRONG: AtomicU64 = AtomicU64::new(0);
pub static THROTTLED: AtomicU64 = AtomicU64::new(0);
pub static EVICTED: AtomicU64 = AtomicU64::new(0);

/// A token was checked and was wrong.
pub fn wrong_token() {
    WRONG.fetch_add(1, Relaxed);
}

/// An attempt was refused without its token being checked.
pub fn throttled() {
    THROTTLED.fetch_add(1, Relaxed);
}

/// A remembered source was forgotten to make room.
pub fn evicted() {
    EVICTED.fetch_add(1, Relaxed);
}
