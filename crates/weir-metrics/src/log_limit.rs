//! Warnings that would otherwise repeat once per request or connection for one cause (a pool
//! with no healthy endpoint, a scanner sending bad requests, an auth service that is down):
//! each cause is written at most once per [`PERIOD_MS`], and the next line for it says how
//! many were left out meanwhile. A cause is the call site plus what the caller names as its
//! key (the listener, pool and reason, say), so different causes are never hidden behind one
//! another. Only failure paths pay for it: a lock on a small bounded map.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use crate::clock;

/// One line per cause per this period.
pub const PERIOD_MS: u64 = 10_000;
/// At most this many causes are remembered; past it the map starts again (a few repeated lines
/// rather than unbounded memory under a flood of distinct causes).
const MAX_CAUSES: usize = 4096;

struct Cause {
    written_at: u64,
    left_out: u64,
}

static CAUSES: Mutex<Option<HashMap<u64, Cause>>> = Mutex::new(None);

/// `Some(n)`: write the line now; `n` lines of this cause were left out since the last one.
/// `None`: leave it out (counted).
pub fn allow(site: &'static str, key: impl Hash) -> Option<u64> {
    allow_at(site, key, clock::now_ms())
}

fn allow_at(site: &'static str, key: impl Hash, now: u64) -> Option<u64> {
    let mut h = DefaultHasher::new();
    site.hash(&mut h);
    key.hash(&mut h);
    let id = h.finish();
    let mut guard = CAUSES.lock().unwrap_or_else(|e| e.into_inner());
    let causes = guard.get_or_insert_with(HashMap::new);
    if let Some(c) = causes.get_mut(&id) {
        if now.saturating_sub(c.written_at) < PERIOD_MS {
            c.left_out += 1;
            return None;
        }
        let n = c.left_out;
        *c = Cause {
            written_at: now,
            left_out: 0,
        };
        return Some(n);
    }
    if causes.len() >= MAX_CAUSES {
        causes.clear();
    }
    causes.insert(
        id,
        Cause {
            written_at: now,
            left_out: 0,
        },
    );
    Some(0)
}

/// A hash of what `detail` says, made without writing it out: so that two failures of one
/// place in different words are two causes.
pub fn hash_of(detail: &dyn std::fmt::Display) -> u64 {
    struct Hashing(DefaultHasher);
    impl std::fmt::Write for Hashing {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Hashing(DefaultHasher::new());
    let _ = std::fmt::write(&mut h, format_args!("{detail}"));
    h.0.finish()
}

/// `tracing::warn!` at most once per cause and period ([`allow`]); `$key` names the cause
/// (anything `Hash`), the rest is `warn!`'s arguments. A line after some were left out carries
/// `suppressed=N`.
#[macro_export]
macro_rules! warn_limited {
    ($key:expr, $($arg:tt)+) => {
        match $crate::log_limit::allow(concat!(file!(), ":", line!()), $key) {
            Some(0) => tracing::warn!($($arg)+),
            Some(suppressed) => tracing::warn!(suppressed, $($arg)+),
            None => {}
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_is_written_once_per_period_and_counts_the_rest() {
        let t0 = 1_000_000;
        assert_eq!(allow_at("t", ("pool", 1), t0), Some(0));
        assert_eq!(allow_at("t", ("pool", 1), t0 + 1), None);
        assert_eq!(allow_at("t", ("pool", 1), t0 + PERIOD_MS - 1), None);
        // Another cause, or the same key from another site, is its own.
        assert_eq!(allow_at("t", ("pool", 2), t0 + 2), Some(0));
        assert_eq!(allow_at("u", ("pool", 1), t0 + 2), Some(0));
        // A period later, the next line says how many were left out.
        assert_eq!(allow_at("t", ("pool", 1), t0 + PERIOD_MS), Some(2));
        assert_eq!(allow_at("t", ("pool", 1), t0 + PERIOD_MS + 1), None);
    }
}
