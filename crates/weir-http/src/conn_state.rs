//! Where a client connection is in its life, for the two client timeouts:
//! the time to send a request head (`header_timeout`) and the keep-alive
//! idle time between requests (`idle_timeout`). The server reports request
//! bytes (`on_read`); a request's response body holds a `BusyGuard`.
//!
//! Everything here is touched only from the connection's own task, so relaxed
//! atomics suffice; they are atomics only because the guard travels inside
//! the response body, which must be `Send`.
//!
//! The state lives inline in the connection's shared context (16 bytes, no allocation of
//! its own: every idle connection pays for it); the guard holds that context.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const IDLE: u8 = 0;
const HEAD: u8 = 1;
const BUSY: u8 = 2;

#[derive(Debug)]
pub struct ConnState {
    phase: AtomicU8,
    /// Milliseconds since `epoch()` when the current phase began.
    since: AtomicU64,
    busy: AtomicU32,
}

/// What holds a connection's state and outlives its responses (the connection's shared
/// context): a response body's guard keeps it.
pub trait StateHome: Send + Sync + 'static {
    fn conn_state(&self) -> &ConnState;
}

/// The instant phase times count from: one for the process, so a connection does not
/// keep one of its own.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// What the connection's watch (its listener's, weir-pipeline `http/watch.rs`) should do now.
pub enum Verdict {
    /// Close the connection: the client took too long.
    Expired,
    /// Look again at this instant.
    CheckAt(Instant),
}

impl Default for ConnState {
    fn default() -> Self {
        Self::new()
    }
}

impl ConnState {
    /// A new connection starts waiting for its first request head.
    pub fn new() -> Self {
        ConnState {
            phase: AtomicU8::new(HEAD),
            since: AtomicU64::new(now_ms()),
            busy: AtomicU32::new(0),
        }
    }

    fn enter(&self, phase: u8) {
        self.phase.store(phase, Relaxed);
        self.since.store(now_ms(), Relaxed);
    }

    /// Bytes of a request head arrived from the client.
    #[inline]
    pub fn on_read(&self) {
        if self.phase.load(Relaxed) == IDLE {
            self.enter(HEAD);
        }
    }

    /// A request head was parsed; until the returned guard drops (response
    /// fully sent) no client timeout applies.
    pub fn begin_request(home: Arc<dyn StateHome>) -> BusyGuard {
        let state = home.conn_state();
        state.busy.fetch_add(1, Relaxed);
        state.phase.store(BUSY, Relaxed);
        BusyGuard(home)
    }

    /// The watch is not told of phase changes (that would cost it a lock per
    /// request); instead it looks at least every half of the shorter timeout,
    /// so a deadline is enforced within 1.5× its value.
    pub fn verdict(&self, header_timeout: Duration, idle_timeout: Duration) -> Verdict {
        let now = Instant::now();
        let recheck = now + Self::period(header_timeout, idle_timeout);
        let limit = match self.phase.load(Relaxed) {
            IDLE => idle_timeout,
            HEAD => header_timeout,
            _ => return Verdict::CheckAt(recheck),
        };
        let since = epoch() + Duration::from_millis(self.since.load(Relaxed));
        let deadline = since + limit;
        if now >= deadline {
            Verdict::Expired
        } else {
            Verdict::CheckAt(deadline.min(recheck))
        }
    }

    /// How often the watch looks at a connection at the latest.
    pub fn period(header_timeout: Duration, idle_timeout: Duration) -> Duration {
        header_timeout.min(idle_timeout) / 2
    }
}

/// Held by a request's response body; dropping the last one makes the
/// connection idle.
pub struct BusyGuard(Arc<dyn StateHome>);

impl std::fmt::Debug for BusyGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BusyGuard")
            .field(self.0.conn_state())
            .finish()
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        let state = self.0.conn_state();
        if state.busy.fetch_sub(1, Relaxed) == 1 {
            state.enter(IDLE);
        }
    }
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}
