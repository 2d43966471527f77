//! A config store shared by replicas (etcd), as this replica sees it:
//! `weir_config_store_up` (1 while reachable, 0 while not),
//! `weir_config_store_ignored_total` (keys under the prefix that did not read, ignored) and
//! `weir_config_store_invalid` (stored resources that do not validate, held back now).
//! None is shown without a shared store.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

static SHARED: AtomicBool = AtomicBool::new(false);
static UP: AtomicBool = AtomicBool::new(false);
pub static IGNORED: AtomicU64 = AtomicU64::new(0);
pub static INVALID: AtomicU64 = AtomicU64::new(0);

/// Whether the shared store answered the last time it was asked.
pub fn set_up(up: bool) {
    SHARED.store(true, Relaxed);
    UP.store(up, Relaxed);
}

/// `n` keys were ignored.
pub fn ignored(n: usize) {
    IGNORED.fetch_add(n as u64, Relaxed);
}

/// `n` stored resources do not validate and are held back now.
pub fn set_invalid(n: usize) {
    INVALID.store(n as u64, Relaxed);
}

/// `Some(up)` with a shared store.
pub fn up() -> Option<bool> {
    SHARED.load(Relaxed).then(|| UP.load(Relaxed))
}
