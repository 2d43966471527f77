//! Request counts for one label set (listener, route, pool, endpoint), by
//! status code and by reason: plain atomics, so the hot path never locks.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use weir_metrics::reason::Reason;

/// Status codes weir's own errors use; a reason's count is kept per code.
const GENERATED: [u16; 19] = [
    301, 302, 303, 307, 308, 400, 403, 404, 413, 414, 429, 431, 499, 501, 502, 503, 504, 204, 401,
];

/// gRPC status codes by number, named as the gRPC spec names them (`statuscodes.md`).
pub const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];
/// What a gRPC client makes of a status outside the spec's.
const GRPC_UNKNOWN: usize = 2;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Labels {
    pub listener: Arc<str>,
    pub route: Arc<str>,
    pub pool: Arc<str>,
    pub endpoint: Arc<str>,
}

#[derive(Debug)]
pub struct Counts {
    pub labels: Labels,
    /// Upstream answers passed through, by code (index = code - 100).
    by_code: Box<[AtomicU64]>,
    /// Responses weir generated, by reason and code.
    by_reason: [[AtomicU64; GENERATED.len()]; Reason::ALL.len()],
    /// Failures under another code: an upstream answer cut short after its
    /// head keeps the upstream's status. Rare, so a lock is fine.
    by_other: std::sync::Mutex<Vec<(u16, Reason, u64)>>,
    /// TCP sessions, which have no status: relayed, and refused by reason.
    sessions: AtomicU64,
    sessions_refused: [AtomicU64; Reason::ALL.len()],
    /// gRPC calls by the `grpc-status` their client got (index = code): every gRPC call
    /// is an HTTP 200, so `by_code` cannot tell a failed one.
    grpc: [AtomicU64; GRPC_CODES.len()],
}

impl Counts {
    pub fn new(labels: Labels) -> Self {
        Counts {
            labels,
            by_code: (100..600).map(|_| AtomicU64::new(0)).collect(),
            by_reason: Default::default(),
            by_other: Default::default(),
            sessions: AtomicU64::new(0),
            sessions_refused: Default::default(),
            grpc: Default::default(),
        }
    }

    /// A gRPC call ended with `grpc-status` `code` (`None`: not a number).
    #[inline]
    pub fn record_grpc(&self, code: Option<u16>) {
        let i = code.map_or(GRPC_UNKNOWN, usize::from);
        let i = if i < GRPC_CODES.len() {
            i
        } else {
            GRPC_UNKNOWN
        };
        self.grpc[i].fetch_add(1, Relaxed);
    }

    /// Every non-zero (gRPC status name, count).
    pub fn each_grpc(&self, mut f: impl FnMut(&'static str, u64)) {
        for (name, c) in GRPC_CODES.iter().zip(&self.grpc) {
            let n = c.load(Relaxed);
            if n > 0 {
                f(name, n);
            }
        }
    }

    #[inline]
    pub fn record(&self, status: u16, reason: Option<Reason>) {
        match reason {
            None => {
                if let Some(c) = self.by_code.get(status.saturating_sub(100) as usize) {
                    c.fetch_add(1, Relaxed);
                }
            }
            Some(r) => match GENERATED.iter().position(|&g| g == status) {
                Some(code) => {
                    self.by_reason[r.index()][code].fetch_add(1, Relaxed);
                }
                None => {
                    let mut other = self.by_other.lock().unwrap();
                    match other.iter_mut().find(|(c, x, _)| *c == status && *x == r) {
                        Some((_, _, n)) => *n += 1,
                        None => other.push((status, r, 1)),
                    }
                }
            },
        }
    }

    /// A TCP session ended: relayed (`None`), or refused for `reason`.
    #[inline]
    pub fn record_session(&self, reason: Option<Reason>) {
        match reason {
            None => &self.sessions,
            Some(r) => &self.sessions_refused[r.index()],
        }
        .fetch_add(1, Relaxed);
    }

    /// Every non-zero (code, reason, count); reason "" for upstream answers,
    /// code 0 for TCP sessions.
    pub fn each(&self, mut f: impl FnMut(u16, &'static str, u64)) {
        self.each_outcome(|code, r, n| f(code, r.map_or("", Reason::as_str), n));
    }

    /// Every non-zero (code, reason, count); no reason for upstream answers, code 0 for
    /// TCP sessions.
    pub fn each_outcome(&self, mut f: impl FnMut(u16, Option<Reason>, u64)) {
        for (i, c) in self.by_code.iter().enumerate() {
            let n = c.load(Relaxed);
            if n > 0 {
                f(i as u16 + 100, None, n);
            }
        }
        for (ri, row) in self.by_reason.iter().enumerate() {
            for (ci, c) in row.iter().enumerate() {
                let n = c.load(Relaxed);
                if n > 0 {
                    f(GENERATED[ci], Some(Reason::ALL[ri]), n);
                }
            }
        }
        for &(code, r, n) in self.by_other.lock().unwrap().iter() {
            f(code, Some(r), n);
        }
        let n = self.sessions.load(Relaxed);
        if n > 0 {
            f(0, None, n);
        }
        for (ri, c) in self.sessions_refused.iter().enumerate() {
            let n = c.load(Relaxed);
            if n > 0 {
                f(0, Some(Reason::ALL[ri]), n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_statuses_outside_the_spec_count_as_unknown() {
        let c = Counts::new(Labels {
            listener: "l".into(),
            route: "".into(),
            pool: "p".into(),
            endpoint: "".into(),
        });
        for code in [
            Some(0),
            Some(14),
            Some(14),
            Some(2),
            Some(17),
            Some(999),
            None,
        ] {
            c.record_grpc(code);
        }
        let mut seen = Vec::new();
        c.each_grpc(|name, n| seen.push((name, n)));
        assert_eq!(seen, [("OK", 1), ("UNKNOWN", 4), ("UNAVAILABLE", 2)]);
    }
}
