//! `weir_tls_passthrough_total{listener,result}`: what became of the connections of a tcp
//! listener with `sni_routing` at the ClientHello stage (the sessions that follow are
//! counted per route in `weir_requests`, as any tcp session). Named beside
//! `weir_tls_handshakes_total`, which counts terminated handshakes: nothing here is
//! decrypted, so there is no version or handshake to report.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;

use crate::snapshot::Shared;

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
    const ALL: [Outcome; 7] = [
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

/// Registered beside the main collector in `render.rs`; reads the listeners of the
/// running snapshot only, so a removed listener stops being reported.
#[derive(Debug)]
pub struct PassthroughCollector(pub Arc<Shared>);

impl Collector for PassthroughCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self.0.snapshot.load_full();
        let mut listeners: Vec<(&str, &Passthrough)> = snap
            .listeners
            .iter()
            .flatten()
            .filter_map(|l| Some((&*l.name, &**l.passthrough.as_ref()?)))
            .collect();
        if listeners.is_empty() {
            return Ok(());
        }
        listeners.sort_by_key(|(name, _)| *name);
        let mut m = enc.encode_descriptor(
            "weir_tls_passthrough",
            "Connections of tcp listeners with sni_routing, by how their ClientHello stage ended (routed, fallback, no_route, not_tls, too_large, timeout, client_closed).",
            None,
            MetricType::Counter,
        )?;
        for (name, p) in listeners {
            for o in Outcome::ALL {
                let labels = [("listener", name), ("result", o.as_str())];
                m.encode_family(&labels)?
                    .encode_counter::<NoLabelSet, u64, u64>(
                        &p.get(o),
                        None::<&Exemplar<NoLabelSet, u64>>,
                    )?;
            }
        }
        Ok(())
    }
}
