//! HTTP/2's counters: connections weir closed with GOAWAY because the client broke or abused
//! the protocol (`weir_http2_goaway_total{reason}`), process-wide.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::h2::server::Abuse;

const REASONS: [(Abuse, &str); 5] = [
    (Abuse::RapidReset, "rapid_reset"),
    (Abuse::ContinuationFlood, "continuation_flood"),
    (Abuse::ControlFlood, "control_flood"),
    (Abuse::StreamErrors, "stream_errors"),
    (Abuse::ProtocolError, "protocol_error"),
];

static COUNTS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

pub fn abuse(why: Abuse) {
    if let Some(i) = REASONS.iter().position(|(a, _)| *a == why) {
        COUNTS[i].fetch_add(1, Relaxed);
    }
}

/// (reason, count) for the exposition.
pub fn counts() -> Vec<(&'static str, u64)> {
    REASONS
        .iter()
        .zip(&COUNTS)
        .map(|((_, name), n)| (*name, n.load(Relaxed)))
        .collect()
}
