//! What a client stream shares between the connection's loop (`server.rs`, which owns the
//! weir-h2 connection and the socket) and the pipeline working on the stream: the request
//! body as it arrives, what of it the pipeline took (given back to the client's window by
//! the loop), whether the stream is gone, and for a tunnel the bytes going out.
//!
//! The pipeline side never touches the connection: it takes and puts here and wakes the
//! loop (`ConnShared`), which does the rest in its next pass, so that one pass writes every
//! stream's frames at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::task::AtomicWaker;
use http::HeaderMap;
use weir_h2::frame::StreamId;
use weir_h2::Reason;

use super::inbox::Inbox;

/// The connection loop's side: its waker, and the streams that have something for it.
#[derive(Default)]
pub struct ConnShared {
    waker: AtomicWaker,
    dirty: Mutex<Vec<StreamId>>,
    /// Set when `dirty` may hold streams: most passes of the loop find none, and need not
    /// take the lock (two locked operations) to see it.
    any_dirty: AtomicBool,
}

impl ConnShared {
    /// Registers the loop's waker.
    pub fn register(&self, cx: &Context<'_>) {
        self.waker.register(cx.waker());
    }

    /// The streams that took body bytes or queued tunnel bytes since the last call.
    pub fn take_dirty(&self, into: &mut Vec<StreamId>) {
        into.clear();
        // A plain load: a swap would be a locked operation too. A stream marked after the
        // flag is cleared is taken now or flags it again; either way the loop sees it.
        if self.any_dirty.load(Ordering::Acquire) {
            self.any_dirty.store(false, Ordering::Relaxed);
            std::mem::swap(&mut *self.dirty.lock().unwrap(), into);
        }
    }

    fn mark(&self, id: StreamId) {
        self.dirty.lock().unwrap().push(id);
        self.any_dirty.store(true, Ordering::Release);
        self.waker.wake();
    }
}

/// Why a stream's body or tunnel ended early.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("HTTP/2 stream reset ({0})")]
pub struct StreamGone(pub Reason);

impl StreamGone {
    /// Reset for breaking the protocol (a body longer or shorter than its content-length),
    /// as opposed to cancelled.
    pub fn is_malformed(&self) -> bool {
        self.0 == Reason::PROTOCOL_ERROR
    }
}

/// Tunnel bytes queued at most before the writer waits for the loop to send them.
const OUT_MAX: usize = 64 * 1024;

#[derive(Default)]
struct State {
    /// Request body (or tunnel) bytes received, not yet taken.
    data: Inbox<Bytes>,
    trailers: Option<HeaderMap>,
    /// END_STREAM received.
    ended: bool,
    gone: Option<Reason>,
    /// Taken since the loop last gave them back to the window.
    taken: usize,
    /// The client waits for a `100` before its body (`expect.rs`): sent when the pipeline
    /// first reads the body (`continue_asked`), unless the body is on its way already.
    expect_continue: bool,
    continue_asked: bool,
    reader: Option<Waker>,
    /// The pipeline's call for the stream, woken to see that it is gone.
    caller: Option<Waker>,
    /// Tunnel bytes for the client, and their END_STREAM.
    out: VecDeque<Bytes>,
    out_len: usize,
    out_end: bool,
    writer: Option<Waker>,
}

/// One stream's shared state.
pub struct StreamShared {
    pub id: StreamId,
    conn: Arc<ConnShared>,
    state: Mutex<State>,
    /// Set with `State::gone`: the call looks here each time it waits, without the lock.
    gone: AtomicBool,
}

impl StreamShared {
    pub fn new(
        id: StreamId,
        conn: Arc<ConnShared>,
        ended: bool,
        expect_continue: bool,
    ) -> Arc<StreamShared> {
        Arc::new(StreamShared {
            id,
            conn,
            state: Mutex::new(State {
                ended,
                expect_continue,
                ..State::default()
            }),
            gone: AtomicBool::new(false),
        })
    }

    // The loop's side.

    pub fn push(&self, data: Bytes, end: bool) {
        let mut s = self.state.lock().unwrap();
        if !data.is_empty() {
            s.data.push_back(data);
        }
        s.ended |= end;
        if let Some(w) = s.reader.take() {
            w.wake();
        }
    }

    pub fn trailers(&self, t: HeaderMap) {
        let mut s = self.state.lock().unwrap();
        s.trailers = Some(t);
        s.ended = true;
        if let Some(w) = s.reader.take() {
            w.wake();
        }
    }

    /// The stream is gone: readers and writers fail, and the call is woken to end.
    pub fn gone(&self, why: Reason) {
        let mut s = self.state.lock().unwrap();
        s.gone.get_or_insert(why);
        self.gone.store(true, Ordering::Release);
        for w in [s.reader.take(), s.caller.take(), s.writer.take()]
            .into_iter()
            .flatten()
        {
            w.wake();
        }
    }

    /// Bytes taken since the last call (to give back to the client's window), and whether
    /// the client is to be sent its `100` now.
    pub fn take_released(&self) -> (usize, bool) {
        let mut s = self.state.lock().unwrap();
        (
            std::mem::take(&mut s.taken),
            std::mem::take(&mut s.continue_asked),
        )
    }

    /// Tunnel bytes to send, at most `room`; `(bytes, end)`, end once everything queued
    /// went and the writer shut down.
    pub fn take_out(&self, room: usize) -> (Vec<Bytes>, bool) {
        let mut s = self.state.lock().unwrap();
        let mut taken = Vec::new();
        let mut left = room;
        while left > 0 {
            let Some(mut b) = s.out.pop_front() else {
                break;
            };
            if b.len() > left {
                s.out.push_front(b.split_off(left));
            }
            left -= b.len();
            s.out_len -= b.len();
            taken.push(b);
        }
        if !taken.is_empty() {
            if let Some(w) = s.writer.take() {
                w.wake();
            }
        }
        let end = s.out_end && s.out.is_empty();
        (taken, end)
    }

    /// Whether the pipeline's call should stop: the stream is gone. Registers the caller
    /// the first time (`registered`, kept by the call: its waker stays the same, and a lock
    /// per wait was two atomic operations each time the call waited).
    pub fn poll_gone(&self, cx: &Context<'_>, registered: &mut bool) -> bool {
        if self.gone.load(Ordering::Acquire) {
            return true;
        }
        if *registered {
            return false;
        }
        *registered = true;
        let mut s = self.state.lock().unwrap();
        if s.gone.is_some() {
            return true;
        }
        keep_waker(&mut s.caller, cx);
        false
    }

    // The pipeline's side.

    /// The next part of the body: data, then trailers, then the end; or the reset.
    pub fn poll_next(&self, cx: &Context<'_>) -> Poll<Option<Result<Part, StreamGone>>> {
        let mut s = self.state.lock().unwrap();
        // Asked for on the first read only, and only if it has to wait for the body.
        let expect_continue = std::mem::take(&mut s.expect_continue);
        if let Some(d) = s.data.pop_front() {
            let first = s.taken == 0;
            s.taken += d.len();
            drop(s);
            if first {
                self.conn.mark(self.id);
            }
            return Poll::Ready(Some(Ok(Part::Data(d))));
        }
        if let Some(t) = s.trailers.take() {
            return Poll::Ready(Some(Ok(Part::Trailers(t))));
        }
        if s.ended {
            return Poll::Ready(None);
        }
        if let Some(why) = s.gone {
            return Poll::Ready(Some(Err(StreamGone(why))));
        }
        keep_waker(&mut s.reader, cx);
        if expect_continue {
            // The loop sends the `100` (`take_released`).
            s.continue_asked = true;
            drop(s);
            self.conn.mark(self.id);
        }
        Poll::Pending
    }

    pub fn is_end_stream(&self) -> bool {
        let s = self.state.lock().unwrap();
        s.ended && s.data.is_empty() && s.trailers.is_none()
    }

    /// Queues tunnel bytes for the client: how many were taken (0 with `Pending` when the
    /// queue is full).
    pub fn poll_put(&self, cx: &Context<'_>, b: &[u8]) -> Poll<Result<usize, StreamGone>> {
        let mut s = self.state.lock().unwrap();
        if let Some(why) = s.gone {
            return Poll::Ready(Err(StreamGone(why)));
        }
        let room = OUT_MAX.saturating_sub(s.out_len);
        if room == 0 {
            keep_waker(&mut s.writer, cx);
            return Poll::Pending;
        }
        let n = room.min(b.len());
        s.out.push_back(Bytes::copy_from_slice(&b[..n]));
        s.out_len += n;
        drop(s);
        self.conn.mark(self.id);
        Poll::Ready(Ok(n))
    }

    /// The tunnel's writer is done: END_STREAM once what is queued went.
    pub fn shut(&self) {
        self.state.lock().unwrap().out_end = true;
        self.conn.mark(self.id);
    }
}

/// Keeps the task's waker, cloning it only when it is another task's (a call is polled
/// again and again while it waits upstream).
pub(super) fn keep_waker(slot: &mut Option<Waker>, cx: &Context<'_>) {
    if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
        *slot = Some(cx.waker().clone());
    }
}

/// A part of a received body.
pub enum Part {
    Data(Bytes),
    Trailers(HeaderMap),
}
