//! HTTP/2's counters: connections weir closed with GOAWAY for abusing the protocol
//! (`weir_http2_goaway_total{reason}`), process-wide.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::codec::h2::server::Abuse;

static RAPID_RESET: AtomicU64 = AtomicU64::new(0);

pub fn abuse(why: Abuse) {
    match why {
        Abuse::RapidReset => RAPID_RESET.fetch_add(1, Relaxed),
    };
}

/// (reason, count) for the exposition.
pub fn goaways() -> Vec<(&'static str, u64)> {
    vec![("rapid_reset", RAPID_RESET.load(Relaxed))]
}
