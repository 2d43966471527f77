//! What the listeners with `proxy_protocol` count: connections closed at their PROXY header,
//! by why (`weir_proxy_protocol_errors_total`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Why a connection was closed at its PROXY header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The peer is not in the listener's `trusted_proxies`.
    Untrusted,
    /// Not a PROXY header, or a broken one.
    Malformed,
    /// No complete header within `header_timeout`.
    Timeout,
    /// The client closed or reset before its header was complete.
    ClientClosed,
}

impl Refusal {
    pub const ALL: [Refusal; 4] = [
        Refusal::Untrusted,
        Refusal::Malformed,
        Refusal::Timeout,
        Refusal::ClientClosed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Refusal::Untrusted => "untrusted",
            Refusal::Malformed => "malformed",
            Refusal::Timeout => "timeout",
            Refusal::ClientClosed => "client_closed",
        }
    }
}

/// One listener's counts, by reason.
#[derive(Debug, Default)]
pub struct ProxyErrors {
    by_reason: [AtomicU64; Refusal::ALL.len()],
}

impl ProxyErrors {
    pub fn record(&self, r: Refusal) {
        self.by_reason[r as usize].fetch_add(1, Relaxed);
    }

    pub fn get(&self, r: Refusal) -> u64 {
        self.by_reason[r as usize].load(Relaxed)
    }
}

/// The counters by listener name, kept across reloads while the listener keeps
/// `proxy_protocol` (`snapshot.rs` builds each snapshot's from the last).
pub type Series = HashMap<Arc<str>, Arc<ProxyErrors>>;
