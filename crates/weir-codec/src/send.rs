//! What a client codec is asked to send upstream and how long it waits for
//! the answer: the same for every protocol, so the pipeline builds them
//! without knowing which codec a session speaks.

use std::time::{Duration, Instant};

use bytes::Bytes;

/// The request body to send.
pub enum Payload<B> {
    /// Held in memory (possibly empty): sent with the head when small.
    Bytes(Bytes),
    /// Streamed as it arrives.
    Stream(B),
}

/// How long an exchange waits for the response head.
#[derive(Debug, Clone, Copy)]
pub struct HeadTimer {
    /// When the exchange started: the whole request usually goes out in the
    /// first write, and then `limit` counts from here (no clock read).
    pub started: Instant,
    /// The wait allowed after the last request byte went out, so that a slow
    /// upload is not cut while it is still being sent.
    pub limit: Duration,
    /// Never wait past this, however recently bytes went out.
    pub cap: Option<Instant>,
}

impl HeadTimer {
    /// The deadline once the request's last byte went out at `sent`.
    pub fn after(&self, sent: Instant) -> Instant {
        let d = sent + self.limit;
        self.cap.map_or(d, |c| c.min(d))
    }
}

/// A fixed deadline.
impl From<Instant> for HeadTimer {
    fn from(deadline: Instant) -> Self {
        HeadTimer {
            started: deadline,
            limit: Duration::ZERO,
            cap: Some(deadline),
        }
    }
}
