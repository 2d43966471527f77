//! Request bodies still arriving after their stream's answer went out whole (an early 413,
//! 401 or redirect; RFC 9113 §8.1). weir reads and drops them for a while, as nginx lingers
//! on an HTTP/1 connection: a client that finishes its upload before it reads the answer
//! (Debian 12's curl fails a transfer whose stream is reset, even with NO_ERROR, exit 92)
//! then gets it cleanly. One that goes on past [`LINGER_BYTES`] or [`LINGER_TIME`] is asked
//! to stop with RST_STREAM NO_ERROR, so an endless upload, fast or slow, is cut rather than
//! read until the client gives up.

use std::time::{Duration, Instant};

use weir_h2::frame::{StreamId, StreamMap};

/// What a stream may still send after its answer.
pub const LINGER_BYTES: usize = 16 << 20;
/// How long after its answer a stream's request may take to end.
pub const LINGER_TIME: Duration = Duration::from_secs(5);

struct Linger {
    until: Instant,
    left: usize,
}

/// The streams whose requests still come after their answers.
#[derive(Default)]
pub struct Lingering(StreamMap<Linger>);

/// What a lingering stream's bytes mean.
#[derive(Debug, PartialEq, Eq)]
pub enum Late {
    /// Not a lingering stream.
    Unknown,
    /// Dropped; the stream may send more.
    Dropped,
    /// Past its bound: the client must be told to stop.
    TooMuch,
}

impl Lingering {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The stream's answer went; its request goes on.
    pub fn start(&mut self, id: StreamId, now: Instant) {
        self.0.insert(
            id,
            Linger {
                until: now + LINGER_TIME,
                left: LINGER_BYTES,
            },
        );
    }

    /// `n` bytes of the stream's request came (`end`: its last).
    pub fn data(&mut self, id: StreamId, n: usize, end: bool) -> Late {
        let Some(l) = self.0.get_mut(&id) else {
            return Late::Unknown;
        };
        if end {
            self.0.remove(&id);
            return Late::Dropped;
        }
        match l.left.checked_sub(n) {
            Some(left) => {
                l.left = left;
                Late::Dropped
            }
            None => {
                self.0.remove(&id);
                Late::TooMuch
            }
        }
    }

    /// The stream ended otherwise (trailers, a reset).
    pub fn forget(&mut self, id: StreamId) {
        self.0.remove(&id);
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.0.values().map(|l| l.until).min()
    }

    /// The streams past their time, taken out.
    pub fn overdue(&mut self, now: Instant) -> Vec<StreamId> {
        let late: Vec<StreamId> = self
            .0
            .iter()
            .filter(|(_, l)| now >= l.until)
            .map(|(&id, _)| id)
            .collect();
        for id in &late {
            self.0.remove(id);
        }
        late
    }

    /// Every lingering stream, taken out (the connection drains).
    pub fn take_all(&mut self) -> Vec<StreamId> {
        let all: Vec<StreamId> = self.0.keys().copied().collect();
        self.0.clear();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_lingers_within_its_bytes_and_time() {
        let t0 = Instant::now();
        let mut l = Lingering::default();
        assert_eq!(l.data(1, 10, false), Late::Unknown);
        l.start(1, t0);
        l.start(3, t0);
        assert_eq!(l.data(1, LINGER_BYTES - 1, false), Late::Dropped);
        assert_eq!(l.data(1, 2, false), Late::TooMuch);
        assert_eq!(l.data(1, 2, false), Late::Unknown, "told once");
        // A request that ends in time needs nothing more.
        assert_eq!(l.data(3, 5, true), Late::Dropped);
        assert!(l.is_empty());
        l.start(5, t0);
        assert_eq!(l.next_deadline(), Some(t0 + LINGER_TIME));
        assert!(l.overdue(t0 + LINGER_TIME / 2).is_empty());
        assert_eq!(l.overdue(t0 + LINGER_TIME), vec![5]);
        assert!(l.is_empty());
    }
}
