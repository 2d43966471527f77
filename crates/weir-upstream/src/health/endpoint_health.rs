//! One endpoint's health state: the active checks' verdict with its rise/fall streak, and
//! what passive ejection keeps (`passive.rs` reads and writes it). It lives in the
//! endpoint (`endpoint.rs`), below everything that looks at endpoints.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

use weir_metrics::clock;

#[derive(Debug)]
pub struct EndpointHealth {
    /// The active checks' verdict (always true without active checks).
    up: AtomicBool,
    /// Consecutive active check results in the current direction.
    streak: AtomicU32,
    /// Consecutive passive failures.
    pub(crate) failures: AtomicU32,
    /// `clock::now_ms()` until which the endpoint is ejected; 0 = not ejected.
    pub(crate) ejected_until: AtomicU64,
    /// How often it was ejected, for the growing ejection time.
    pub(crate) ejections: AtomicU32,
    /// It dropped requests it had taken (a crash) and has not answered one since: an
    /// ejection then outlasts the active checks seeing it up again.
    pub(crate) dropped: AtomicBool,
}

impl EndpointHealth {
    pub fn new(up: bool) -> Self {
        EndpointHealth {
            up: AtomicBool::new(up),
            streak: AtomicU32::new(0),
            failures: AtomicU32::new(0),
            ejected_until: AtomicU64::new(0),
            ejections: AtomicU32::new(0),
            dropped: AtomicBool::new(false),
        }
    }

    /// Whether the endpoint may take new requests now.
    #[inline]
    pub fn available(&self) -> bool {
        self.up.load(Relaxed) && !self.ejected()
    }

    #[inline]
    pub fn ejected(&self) -> bool {
        let until = self.ejected_until.load(Relaxed);
        until != 0 && clock::now_ms() < until
    }

    pub fn ejection_count(&self) -> u64 {
        self.ejections.load(Relaxed) as u64
    }

    pub fn is_up(&self) -> bool {
        self.up.load(Relaxed)
    }

    /// Applies one active check result; returns the new state when it flipped.
    pub fn check_result(&self, ok: bool, rise: u32, fall: u32) -> Option<bool> {
        let up = self.up.load(Relaxed);
        if ok == up {
            // Confirms the current state: the streak toward a flip restarts.
            self.streak.store(0, Relaxed);
            return None;
        }
        let n = self.streak.fetch_add(1, Relaxed) + 1;
        let needed = if ok { rise } else { fall };
        if n >= needed {
            self.streak.store(0, Relaxed);
            self.up.store(ok, Relaxed);
            // The checks saw it recover. An ejection for refused connections (a restart)
            // said no more than they do, so it ends; one that followed lost requests
            // stands: a backend that crashes and comes straight back is flapping, and
            // would lose what it holds at its next crash too.
            if ok && !self.dropped.load(Relaxed) {
                self.failures.store(0, Relaxed);
                self.ejected_until.store(0, Relaxed);
            }
            return Some(ok);
        }
        None
    }

    /// Forces the state, e.g. when active checks are switched off.
    pub fn set_up(&self, up: bool) {
        self.up.store(up, Relaxed);
        self.streak.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rise_and_fall() {
        let h = EndpointHealth::new(true);
        assert_eq!(h.check_result(false, 2, 3), None);
        assert_eq!(h.check_result(false, 2, 3), None);
        assert_eq!(h.check_result(false, 2, 3), Some(false));
        assert!(!h.available());
        assert_eq!(h.check_result(true, 2, 3), None);
        // A failure in between restarts the streak.
        assert_eq!(h.check_result(false, 2, 3), None);
        assert_eq!(h.check_result(true, 2, 3), None);
        assert_eq!(h.check_result(true, 2, 3), Some(true));
        assert!(h.available());
    }
}
