//! The end of a request: counted and timed when its response has been sent
//! (or abandoned), which is when the response body is dropped.

use std::sync::Arc;
use std::time::Instant;

use crate::accesslog::{Entry, Sink};
use crate::counts::Counts;
use weir_metrics::hist::Histogram;
use weir_metrics::reason::Reason;

#[derive(Debug)]
pub struct Recorder {
    pub counts: Arc<Counts>,
    pub duration: Arc<Histogram>,
    pub start: Instant,
    pub status: u16,
    pub reason: Option<Reason>,
    /// The access log entry to complete and send, when the listener logs.
    pub access: Option<(Sink, Box<Entry>)>,
    /// Response body bytes sent (set by the body as it ends).
    pub bytes: u64,
    /// When the response ended, if the body already read the clock.
    pub end: Option<Instant>,
    /// A gRPC call's `grpc-status` once seen (in the head of a trailers-only answer or in
    /// the trailers), `Some(None)` for one that is not a number.
    pub grpc: Option<Option<u16>>,
}

impl Recorder {
    /// Notes the `grpc-status` of trailers, for the metrics and the access log.
    pub fn grpc_status(&mut self, trailers: &http::HeaderMap) {
        let Some(status) = weir_codec::grpc::status_of(trailers) else {
            return;
        };
        self.grpc = Some(status);
        if let (Some((_, e)), Some(n)) = (self.access.as_mut(), status) {
            e.grpc_status = Some(n);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let total = self
            .end
            .unwrap_or_else(Instant::now)
            .saturating_duration_since(self.start);
        self.counts.record(self.status, self.reason);
        if let Some(code) = self.grpc {
            self.counts.record_grpc(code);
        }
        self.duration.observe(total);
        if let Some((sink, mut e)) = self.access.take() {
            e.total_ms = total.as_secs_f64() * 1000.0;
            e.bytes = self.bytes;
            // A response cut after its head gets its reason only now.
            e.reason = e.reason.or(self.reason.map(Reason::as_str));
            sink.log(*e);
        }
    }
}
