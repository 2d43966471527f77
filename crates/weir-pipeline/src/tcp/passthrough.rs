//! What a tcp listener with `sni_routing` counts at the ClientHello stage, by how it ended
//! (`weir_tls_passthrough_total`; rendered by `metrics/sni.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// How a passthrough connection's hello stage ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A route's `sni` matched.
    Routed,
    /// No route matched (or no SNI was sent): the listener's `pool` took it.
    Fallback,
    /// No route matched and the listener has no `pool`: refused with `unrecognized_name`.
    NoRoute,
    /// The first bytes were not a TLS ClientHello.
    NotTls,
    /// The hello grew past the limit without ending.
    TooLarge,
    /// The hello did not arrive within `header_timeout`.
    Timeout,
    /// The client closed (or reset) before its hello was complete.
    ClientClosed,
}

impl Outcome {
    pub const ALL: [Outcome; 7] = [
        Outcome::Routed,
        Outcome::Fallback,
        Outcome::NoRoute,
        Outcome::NotTls,
        Outcome::TooLarge,
        Outcome::Timeout,
        Outcome::ClientClosed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Routed => "routed",
            Outcome::Fallback => "fallback",
            Outcome::NoRoute => "no_route",
            Outcome::NotTls => "not_tls",
            Outcome::TooLarge => "too_large",
            Outcome::Timeout => "timeout",
            Outcome::ClientClosed => "client_closed",
        }
    }
}

/// One listener's counts, by outcome.
#[derive(Debug, Default)]
pub struct Passthrough {
    by_outcome: [AtomicU64; Outcome::ALL.len()],
}

impl Passthrough {
    pub fn record(&self, o: Outcome) {
        self.by_outcome[o as usize].fetch_add(1, Relaxed);
    }

    pub fn get(&self, o: Outcome) -> u64 {
        self.by_outcome[o as usize].load(Relaxed)
    }
}

/// The counters by listener name, kept across reloads while the listener keeps
/// `sni_routing` (`snapshot.rs` builds each snapshot's from the last).
pub type Series = HashMap<Arc<str>, Arc<Passthrough>>;
