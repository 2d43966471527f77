//! One listener's HTTP connections, watched by one task: their client timeouts
//! (`header_timeout`, `idle_timeout`), and the listener's drain and kill reaching each.
//!
//! Each connection used to wait on these itself: a timer and a drain waiter in its own
//! future (112 + 72 bytes of every idle connection's state, with the race that woke one
//! side or the other), and a timer armed per connection. Here a connection has a seat:
//! its context and its task's waker, looked at by the watch's task every `TICK` once the
//! connection is due (its phase's deadline, `ConnState::verdict`). What the watch finds
//! it writes into the connection's `DrainFlags::signal` and wakes the task, which reads
//! the signal before it serves (`conn::serve`).

use std::sync::atomic::Ordering;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

use slab::Slab;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::debug;
use weir_codec::server::DrainFlags;
use weir_http::conn_state::Verdict;

use crate::http::conn_ctx::ConnCtx;

/// Signals (`DrainFlags::signal` bits). The listener drains: close when idle.
pub const DRAIN: u8 = 1;
/// End the connection now: the drain grace is over, its client timed out, or its goodbye
/// (HTTP/2's GOAWAY) had its grace.
pub const END: u8 = 2;

/// How often the watch looks at its connections that are due. A client timeout is
/// enforced this much after its deadline at most.
const TICK: Duration = Duration::from_millis(100);

/// How long the goodbye of a connection that says one (HTTP/2's GOAWAY) may take to go out
/// before an idle connection closes.
const GOAWAY_GRACE: Duration = Duration::from_secs(1);

/// A listener's HTTP connections.
#[derive(Default)]
pub struct Watch {
    seats: Mutex<Seats>,
    /// Woken when a connection takes a seat in an empty watch (which then sleeps).
    arrived: Notify,
}

#[derive(Default)]
struct Seats {
    conns: Slab<Seat>,
    /// Signals every connection gets as it takes its seat (the drain or kill came first).
    given: u8,
}

struct Seat {
    ctx: Arc<ConnCtx>,
    task: Waker,
    /// When to look at it next.
    due: Instant,
    /// Its goodbye went out at its idle timeout: at `due`, it ends.
    saying_goodbye: bool,
}

impl Watch {
    pub fn new() -> Arc<Watch> {
        Arc::new(Watch::default())
    }

    fn seats(&self) -> MutexGuard<'_, Seats> {
        self.seats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seats a connection whose task wakes with `task`; its key, for `leave`.
    pub fn enter(&self, ctx: &Arc<ConnCtx>, task: &Waker) -> usize {
        let due = Instant::now() + period(ctx);
        let mut seats = self.seats();
        ctx.ctl.signal.fetch_or(seats.given, Relaxed);
        let was_empty = seats.conns.is_empty();
        let key = seats.conns.insert(Seat {
            ctx: ctx.clone(),
            task: task.clone(),
            due,
            saying_goodbye: false,
        });
        drop(seats);
        if was_empty {
            self.arrived.notify_one();
        }
        key
    }

    pub fn leave(&self, key: usize) {
        // The seat's context and waker drop after the lock.
        let seat = self.seats().conns.try_remove(key);
        drop(seat);
    }

    /// Gives every connection, now and later, `signal`.
    fn give(&self, signal: u8) {
        let mut seats = self.seats();
        seats.given |= signal;
        for (_, seat) in seats.conns.iter() {
            seat.ctx.ctl.signal.fetch_or(signal, Ordering::Release);
            seat.task.wake_by_ref();
        }
    }

    /// Looks at the connections due by `now`.
    fn sweep(&self, now: Instant) {
        let mut seats = self.seats();
        for (_, seat) in seats.conns.iter_mut() {
            if seat.due > now {
                continue;
            }
            let ctx = &seat.ctx;
            if seat.saying_goodbye {
                end(seat);
                continue;
            }
            let limits = &ctx.limits;
            match ctx
                .conn
                .state
                .verdict(limits.header_timeout, limits.idle_timeout)
            {
                Verdict::CheckAt(t) => seat.due = t,
                Verdict::Expired => {
                    debug!("client connection timed out");
                    // A codec that says goodbye (HTTP/2's GOAWAY) does it itself, then
                    // the connection ends once it went out, or at the grace.
                    match ctx.ctl.goes_away.load(Relaxed) {
                        true => {
                            if let Some(idle) = ctx.ctl.idle.get() {
                                idle.cancel();
                            }
                            seat.saying_goodbye = true;
                            seat.due = now + GOAWAY_GRACE;
                        }
                        false => end(seat),
                    }
                }
            }
        }
    }

    /// The watch's task: the drain and the kill handed to every connection, and their
    /// timeouts. Ends at the kill, or once drained with no connection left (one that
    /// comes later, from a handshake that was under way, is given the drain as it takes
    /// its seat and, idle, ends at once).
    pub async fn run(self: Arc<Self>, drain: CancellationToken, kill: CancellationToken) {
        let mut drained = false;
        loop {
            let empty = self.seats().conns.is_empty();
            if drained && empty {
                return;
            }
            tokio::select! {
                biased;
                _ = kill.cancelled() => {
                    self.give(END);
                    return;
                }
                _ = drain.cancelled(), if !drained => {
                    drained = true;
                    self.give(DRAIN);
                }
                _ = self.arrived.notified(), if empty => {}
                _ = tokio::time::sleep(TICK), if !empty => self.sweep(Instant::now()),
            }
        }
    }
}

/// Ends the seat's connection (it leaves its seat as its task ends).
fn end(seat: &mut Seat) {
    seat.ctx.ctl.signal.fetch_or(END, Ordering::Release);
    seat.task.wake_by_ref();
    seat.due = Instant::now() + Duration::from_secs(3600);
}

/// How long after its start a connection is first looked at.
fn period(ctx: &ConnCtx) -> Duration {
    weir_http::conn_state::ConnState::period(ctx.limits.header_timeout, ctx.limits.idle_timeout)
}

/// The signals given to a connection, for its task to read each time it is woken:
/// first whether it must end now (`END`) ...
#[inline]
pub fn must_end(ctl: &DrainFlags) -> bool {
    ctl.signal.load(Ordering::Acquire) & END != 0
}

/// ... then, once it served what it could, whether a drain closes it: `true` to end it now.
/// A codec that says goodbye (HTTP/2's GOAWAY) does it itself (it watches the drain) and
/// ends when its requests have; an idle connection closes now; a request in flight
/// finishes, its response carrying `Connection: close`.
#[inline]
pub fn drained_out(ctl: &DrainFlags) -> bool {
    if ctl.signal.load(Ordering::Acquire) & DRAIN == 0 || ctl.goes_away.load(Relaxed) {
        return false;
    }
    if !ctl.busy.load(Relaxed) {
        return true;
    }
    ctl.draining.store(true, Relaxed);
    false
}

/// A connection's seat, left when it drops.
pub struct Seated<'a> {
    watch: &'a Watch,
    key: usize,
}

impl<'a> Seated<'a> {
    pub const NONE: usize = usize::MAX;

    pub fn new(watch: &'a Watch) -> Seated<'a> {
        Seated {
            watch,
            key: Self::NONE,
        }
    }

    /// Takes the seat at the connection's first poll (its task's waker is known then;
    /// a tokio task's waker stays the same for its life).
    #[inline]
    pub fn take(&mut self, ctx: &Arc<ConnCtx>, task: &Waker) {
        if self.key == Self::NONE {
            self.key = self.watch.enter(ctx, task);
        }
    }
}

impl Drop for Seated<'_> {
    fn drop(&mut self) {
        if self.key != Self::NONE {
            self.watch.leave(self.key);
        }
    }
}
