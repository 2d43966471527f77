//! `weir_proxy_protocol_errors_total{listener,reason}`: connections of a listener with
//! `proxy_protocol` closed before their PROXY header was read, by why.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;

use crate::snapshot::Shared;

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
    const ALL: [Refusal; 4] = [
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

/// Registered beside the main collector in `render.rs`; reads the running snapshot's
/// listeners, so a removed listener stops being reported.
#[derive(Debug)]
pub struct ProxyErrorsCollector(pub Arc<Shared>);

impl Collector for ProxyErrorsCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snap = self.0.snapshot.load_full();
        let mut listeners: Vec<(&str, &ProxyErrors)> = snap
            .listeners
            .iter()
            .flatten()
            .filter_map(|l| Some((&*l.name, &**l.proxy_protocol.as_ref()?)))
            .collect();
        if listeners.is_empty() {
            return Ok(());
        }
        listeners.sort_by_key(|(name, _)| *name);
        let mut m = enc.encode_descriptor(
            "weir_proxy_protocol_errors",
            "Connections of listeners with proxy_protocol closed at their PROXY header, by reason (untrusted, malformed, timeout, client_closed).",
            None,
            MetricType::Counter,
        )?;
        for (name, p) in listeners {
            for r in Refusal::ALL {
                let labels = [("listener", name), ("reason", r.as_str())];
                m.encode_family(&labels)?
                    .encode_counter::<NoLabelSet, u64, u64>(
                        &p.get(r),
                        None::<&Exemplar<NoLabelSet, u64>>,
                    )?;
            }
        }
        Ok(())
    }
}
