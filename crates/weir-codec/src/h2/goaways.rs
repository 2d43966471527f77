//! HTTP/2's counters: connections weir closed with GOAWAY because the client broke or abused
//! the protocol (`weir_http2_goaway_total{reason}`), process-wide.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Why a client was sent GOAWAY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abuse {
    /// It reset more than `server::MAX_RESETS_PER_SEC` of its own streams within a second
    /// (rapid reset, CVE-2023-44487: each reset stream cost weir a request upstream).
    RapidReset,
    /// A header block far past the header list size (CONTINUATION flood, CVE-2024-27316).
    ContinuationFlood,
    /// SETTINGS or PING faster than it read their answers.
    ControlFlood,
    /// More than 1024 streams weir reset for its own errors (malformed requests, windows
    /// overrun).
    StreamErrors,
    /// Any other breach of the protocol (a malformed frame, a block that does not decode).
    ProtocolError,
}

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
