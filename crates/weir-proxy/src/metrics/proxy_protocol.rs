//! `weir_proxy_protocol_errors_total{listener,reason}`: connections of a listener with
//! `proxy_protocol` closed before their PROXY header was read, by why (counted in
//! weir-transport's `proxy_protocol/refusals.rs`).

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;

use weir_pipeline::snapshot::SnapshotCell;
use weir_transport::proxy_protocol::refusals::{ProxyErrors, Refusal};

/// Registered beside the main collector in `render.rs`; reads the running snapshot's
/// listeners, so a removed listener stops being reported.
#[derive(Debug)]
pub struct ProxyErrorsCollector(pub Arc<SnapshotCell>);

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
