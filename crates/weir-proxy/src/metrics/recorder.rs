//! The end of a request: counted and timed when its response has been sent
//! (or abandoned), which is when the response body is dropped.

use std::sync::Arc;
use std::time::Instant;

use crate::metrics::counts::Counts;
use crate::metrics::hist::Histogram;
use crate::reason::Reason;

#[derive(Debug)]
pub struct Recorder {
    pub counts: Arc<Counts>,
    pub duration: Arc<Histogram>,
    pub start: Instant,
    pub status: u16,
    pub reason: Option<Reason>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.counts.record(self.status, self.reason);
        self.duration.observe(self.start.elapsed());
    }
}
