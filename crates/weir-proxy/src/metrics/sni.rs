//! `weir_tls_passthrough_total{listener,result}`: what became of the connections of a tcp
//! listener with `sni_routing` at the ClientHello stage (the sessions that follow are
//! counted per route in `weir_requests`, as any tcp session). Named beside
//! `weir_tls_handshakes_total`, which counts terminated handshakes: nothing here is
//! decrypted, so there is no version or handshake to report.

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;

use weir_pipeline::snapshot::SnapshotCell;
use weir_pipeline::tcp::passthrough::{Outcome, Passthrough};

/// Registered beside the main collector in `render.rs`; reads the listeners of the
/// running snapshot only, so a removed listener stops being reported.
#[derive(Debug)]
pub struct PassthroughCollector(pub Arc<SnapshotCell>);

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
