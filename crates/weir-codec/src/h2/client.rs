//! HTTP/2 client side: one upstream connection shared by many requests' streams, on weir's
//! own HTTP/2 (`weir_h2::client`, sans I/O).
//!
//! [`H2UpstreamConnection`] is the connection as the endpoint's idle store keeps it
//! (weir-upstream's `idle.rs`) while it has room for streams; [`Stream`] is one request's
//! hold on it, taken by [`H2UpstreamConnection::claim`] and given back when dropped. The
//! connection's state ([`State`]: the weir-h2 connection and a [`Slot`] per stream) is
//! behind one lock, shared by the requests (`exchange.rs`: they encode their frames into
//! its output) and the connection's task (`drive`: it reads the socket, hands each stream
//! what came for it, and writes the output, so one write carries every stream's frames that
//! were ready). The task must run on its own: it keeps reading while no request is polling
//! (PINGs, SETTINGS, other streams).
//!
//! The task also keeps the streams' deadlines for their response heads (`Slot::deadline`),
//! on one timer for the connection armed at the earliest: a timer per request cost a
//! registration and a cancellation in tokio's timer wheel per request (~600 instructions and
//! ten atomic operations, callgrind).

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::debug;
use weir_h2::client::{Config, Event, H2ClientConnection, ResponseHead};
use weir_h2::frame::{StreamId, StreamMap};
use weir_h2::Reason;

use super::keepalive::{Due, Keepalive, Ping};
use super::shared::keep_waker;
use weir_metrics::clock;
use weir_metrics::{Held, GLOBAL};
use weir_transport::AckNow;

/// Per stream receive window: what one response may have in flight to weir before the
/// client it goes to takes it.
const STREAM_WINDOW: u32 = 256 * 1024;
/// The connection's receive window, shared by its streams.
const CONNECTION_WINDOW: u32 = 1024 * 1024;
/// A response's fields, decoded, at most (SETTINGS_MAX_HEADER_LIST_SIZE).
const MAX_HEADER_LIST: u32 = 64 * 1024;
/// How much the connection's task reads at a time.
const READ_SIZE: usize = 16 * 1024;

/// One HTTP/2 connection to an endpoint.
pub struct H2UpstreamConnection {
    pub(super) conn: Arc<H2ClientShared>,
    /// Streams claimed and not yet given back.
    active: AtomicU32,
    /// weir's own bound on `active` (the pool's `max_streams_per_conn`); the endpoint's
    /// SETTINGS_MAX_CONCURRENT_STREAMS may lower it.
    max: u32,
    pub born: Instant,
    /// Streams opened on it, for `max_requests_per_conn`.
    uses: AtomicU32,
    /// The `UpstreamTls::id` it was opened with (0: cleartext).
    pub tls: u64,
    /// How long it may stay without streams, and since when it has (clock ms; 0 = busy).
    idle_timeout: Duration,
    idle_since_ms: AtomicU64,
}

/// What the connection's task and its streams share.
pub(super) struct H2ClientShared {
    state: Mutex<State>,
    /// Set when the connection ended or refused a new stream (GOAWAY): no stream is
    /// claimed on it again.
    dead: AtomicBool,
    /// The endpoint's SETTINGS_MAX_CONCURRENT_STREAMS.
    peer_max: AtomicU32,
}

/// The connection and its streams, behind the lock.
pub(super) struct State {
    pub h2: H2ClientConnection,
    pub slots: StreamMap<Slot>,
    /// The connection's task, to wake when there is output to write.
    driver: Option<Waker>,
    /// Why the connection is over, once it is.
    pub ended: Option<Arc<str>>,
    /// Every [`H2UpstreamConnection`] handle is gone: the task says GOAWAY and closes.
    abandoned: bool,
    /// The earliest response-head deadline of a stream since the task last looked, when it
    /// is earlier than the one its timer is armed for (`arm`).
    earliest: Option<Instant>,
    armed: Option<Instant>,
}

/// What came for one stream, until its request takes it.
#[derive(Default)]
pub(super) struct Slot {
    /// The request's task, waiting for its head, body, or window.
    pub waker: Option<Waker>,
    pub head: Option<ResponseHead>,
    pub parts: VecDeque<Part>,
    /// END_STREAM came (the last part is in `parts`).
    pub end: bool,
    pub failed: Option<Failure>,
    /// A request body held in memory that waits for window, and whether it ends the
    /// request (the connection's task sends it as window comes).
    pub pending: Bytes,
    pub pending_end: bool,
    /// A streamed request body waits for window.
    pub wants_window: bool,
    /// When the stream fails for want of a response head ([`Failure::TimedOut`]), kept by
    /// the connection's task; none once the head came.
    pub deadline: Option<Instant>,
}

/// A part of a response body.
pub(super) enum Part {
    Data(Bytes),
    Trailers(HeaderMap),
}

/// Why a stream ended without its whole response.
#[derive(Debug, Clone)]
pub enum Failure {
    /// RST_STREAM, from the endpoint (`by_server`) or from weir for the endpoint's error.
    Reset { code: Reason, by_server: bool },
    /// Above a GOAWAY's last stream id: the endpoint did not process it.
    Refused,
    /// The connection ended.
    Lost(Arc<str>),
    /// The connection ended before any of the stream's frames were written.
    Unsent(Arc<str>),
    /// No response head by the stream's deadline.
    TimedOut,
}

impl State {
    /// The exchange on `id` is over or given up: its slot goes and the stream is reset
    /// (a no-op for one closed both ways). Response bytes that came and were never taken
    /// go back to the connection's window: they were counted against it, and the
    /// connection is shared, so bytes kept off it would stall every other stream in the
    /// end (a client that cancels large downloads would do that in four).
    pub fn forget(&mut self, id: StreamId) {
        if let Some(slot) = self.slots.remove(&id) {
            self.h2.reset(id, Reason::CANCEL);
            let untaken: usize = slot
                .parts
                .iter()
                .map(|p| match p {
                    Part::Data(d) => d.len(),
                    Part::Trailers(_) => 0,
                })
                .sum();
            if untaken > 0 {
                self.h2.release(id, untaken);
            }
        }
    }

    /// Wakes the connection's task if there is output for it to write.
    pub fn output_waker(&self) -> Option<Waker> {
        match self.h2.output_len() {
            0 => None,
            _ => self.driver.clone(),
        }
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Response {
                stream,
                head,
                end_stream,
            } => {
                if let Some(s) = self.slots.get_mut(&stream) {
                    s.head = Some(head);
                    s.end = end_stream;
                    s.deadline = None;
                    wake(s);
                }
            }
            Event::Data {
                stream,
                data,
                end_stream,
            } => match self.slots.get_mut(&stream) {
                Some(s) => {
                    s.parts.push_back(Part::Data(data));
                    s.end = end_stream;
                    wake(s);
                }
                // Nobody takes it any more: its bytes go back to the connection's window.
                None => self.h2.release(stream, data.len()),
            },
            Event::Trailers { stream, fields } => {
                if let Some(s) = self.slots.get_mut(&stream) {
                    s.parts.push_back(Part::Trailers(fields));
                    s.end = true;
                    wake(s);
                }
            }
            Event::Reset {
                stream,
                code,
                by_server,
            } => {
                if let Some(s) = self.slots.get_mut(&stream) {
                    s.failed = Some(Failure::Reset { code, by_server });
                    wake(s);
                }
            }
            Event::Window { stream: 0 } => {
                for (&id, slot) in self.slots.iter_mut() {
                    window(&mut self.h2, id, slot);
                }
            }
            Event::Window { stream } => {
                if let Some(slot) = self.slots.get_mut(&stream) {
                    window(&mut self.h2, stream, slot);
                }
            }
            Event::GoAway { last_stream, code } => {
                debug!("upstream HTTP/2 GOAWAY {code}, last stream {last_stream}");
                for (&id, s) in self.slots.iter_mut() {
                    if id > last_stream && s.failed.is_none() {
                        s.failed = Some(Failure::Refused);
                        wake(s);
                    }
                }
            }
        }
    }

    /// A stream waits for its head until `deadline`: the task's timer is armed for it if it
    /// comes before the one armed.
    pub fn head_deadline(&mut self, slot: &mut Slot, deadline: Instant) {
        slot.deadline = Some(deadline);
        if self.armed.is_none_or(|a| deadline < a) && self.earliest.is_none_or(|e| deadline < e) {
            self.earliest = Some(deadline);
        }
    }

    /// The streams whose head deadline passed fail; the next deadline among the others.
    fn expire(&mut self, now: Instant) -> Option<Instant> {
        let mut next: Option<Instant> = None;
        for s in self.slots.values_mut() {
            match s.deadline {
                Some(d) if d <= now => {
                    s.deadline = None;
                    if s.failed.is_none() {
                        s.failed = Some(Failure::TimedOut);
                        wake(s);
                    }
                }
                Some(d) => next = Some(next.map_or(d, |n| n.min(d))),
                None => {}
            }
        }
        next
    }

    /// The connection is over: every stream fails with `why`. Streams above `handed` never
    /// had a byte written (see `drive`), so the endpoint cannot have seen them.
    fn end(&mut self, why: Arc<str>, handed: StreamId) {
        for (&id, s) in self.slots.iter_mut() {
            if s.failed.is_none() {
                s.failed = Some(match id > handed {
                    true => Failure::Unsent(why.clone()),
                    false => Failure::Lost(why.clone()),
                });
            }
            wake(s);
        }
        self.ended = Some(why);
    }
}

/// Window for stream `id`: a body held in memory goes on; a streamed one is woken.
fn window(h2: &mut H2ClientConnection, id: StreamId, s: &mut Slot) {
    if !s.pending.is_empty() {
        let n = h2.send_data(id, &s.pending, s.pending_end);
        let _ = s.pending.split_to(n);
    } else if s.wants_window {
        s.wants_window = false;
        wake(s);
    }
}

/// Wakes the stream's task (the waker stays: it is usually the same task next time).
fn wake(s: &mut Slot) {
    if let Some(w) = &s.waker {
        w.wake_by_ref();
    }
}

impl H2ClientShared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding it leaves a connection nobody should use; the streams
        // still need to see it ended, so the guard is taken as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn retire(&self) {
        self.dead.store(true, Relaxed);
    }
}

impl std::fmt::Debug for H2UpstreamConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2UpstreamConnection")
            .field("active", &self.active.load(Relaxed))
            .field("dead", &self.is_dead())
            .finish()
    }
}

impl Drop for H2UpstreamConnection {
    fn drop(&mut self) {
        let waker = {
            let mut st = self.conn.lock();
            st.abandoned = true;
            st.driver.clone()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// One request's stream on an [`H2UpstreamConnection`] (its hold on one of the streams).
pub struct Stream {
    pub conn: Arc<H2UpstreamConnection>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.conn.active.fetch_sub(1, Relaxed) == 1 {
            self.conn
                .idle_since_ms
                .store(clock::now_ms().max(1), Relaxed);
        }
    }
}

/// Starts HTTP/2 on `io` (its preface and SETTINGS go out with the first request, in the
/// same write) and claims the first stream. `max` is the pool's `max_streams_per_conn`.
///
/// With `ping`, the connection's task PINGs the endpoint when it has been silent
/// (`keepalive.rs`) and ends the connection when a PING goes unanswered.
pub fn handshake<T>(io: T, max: u32, tls: u64, idle_timeout: Duration, ping: Option<Ping>) -> Stream
where
    T: AsyncRead + AsyncWrite + AckNow + Unpin + Send + 'static,
{
    let conn = Arc::new(H2ClientShared {
        state: Mutex::new(State {
            h2: H2ClientConnection::new(Config {
                max_header_list: MAX_HEADER_LIST,
                stream_window: STREAM_WINDOW,
                connection_window: CONNECTION_WINDOW,
            }),
            slots: StreamMap::default(),
            driver: None,
            ended: None,
            abandoned: false,
            earliest: None,
            armed: None,
        }),
        dead: AtomicBool::new(false),
        peer_max: AtomicU32::new(u32::MAX),
    });
    // Counted as an open upstream connection while its task runs.
    let open = Held::new(&GLOBAL.upstream_open);
    let task = conn.clone();
    tokio::spawn(async move {
        let _open = open;
        drive(io, task, ping.map(Keepalive::new)).await;
    });
    let shared = Arc::new(H2UpstreamConnection {
        conn,
        active: AtomicU32::new(1),
        max: max.max(1),
        born: Instant::now(),
        uses: AtomicU32::new(1),
        tls,
        idle_timeout,
        idle_since_ms: AtomicU64::new(0),
    });
    Stream { conn: shared }
}

/// The connection's task: reads, hands out what came, writes what the streams queued,
/// until the connection ends or nobody holds it.
async fn drive<T>(mut io: T, conn: Arc<H2ClientShared>, mut keepalive: Option<Keepalive>)
where
    T: AsyncRead + AsyncWrite + AckNow + Unpin,
{
    let mut rbuf = BytesMut::with_capacity(READ_SIZE);
    let mut out: Vec<u8> = Vec::new();
    let mut written = 0;
    let mut flushed = true;
    let mut eof = false;
    let mut deferred = false;
    // The last stream opened when the output being written was taken, and the same for the
    // last output of which the socket took any byte: the streams above `handed` had
    // nothing written.
    let mut handing: StreamId = 0;
    let mut handed: StreamId = 0;
    // The streams' head deadlines: armed at the earliest (see `State::head_deadline`).
    let mut timer = std::pin::pin!(tokio::time::sleep(Duration::from_secs(86_400)));
    let mut timing = false;
    // No bytes written since the kernel last acknowledged at once (`transport/acks.rs`).
    let mut acked = false;
    // A stream's answer had begun and was still coming when the last bytes were read.
    let mut rest_coming = false;
    let why: Arc<str> = poll_fn(|cx| loop {
        let mut progress = false;
        if timing && timer.as_mut().poll(cx).is_ready() {
            let mut st = conn.lock();
            let next = st.expire(Instant::now());
            st.armed = next;
            timing = next.is_some();
            if let Some(at) = next {
                timer.as_mut().reset(at.into());
            }
        }
        if !eof {
            if rbuf.capacity() - rbuf.len() < READ_SIZE / 4 {
                rbuf.reserve(READ_SIZE);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut io), cx, &mut rbuf) {
                Poll::Ready(Ok(0)) => eof = true,
                Poll::Ready(Err(e)) => return Poll::Ready(format!("reading: {e}").into()),
                Poll::Ready(Ok(_)) => {
                    progress = true;
                    if let Some(k) = keepalive.as_mut() {
                        k.heard();
                    }
                    let mut st = conn.lock();
                    let r = st.h2.recv(&mut rbuf);
                    let mut answers = false;
                    while let Some(ev) = st.h2.next_event() {
                        answers |= !matches!(ev, Event::Window { .. });
                        st.event(ev);
                    }
                    conn.peer_max.store(st.h2.peer_max_streams(), Relaxed);
                    // What an endpoint with Nagle on holds back until what it sent is
                    // acknowledged: the rest of an answer begun, or, when only control
                    // frames came (a WINDOW_UPDATE for a request body), an answer's head.
                    rest_coming =
                        st.h2.awaits_rest() || (!answers && st.h2.awaits_head());
                    if st.h2.is_going_away() {
                        conn.retire();
                    }
                    if let Err(e) = r {
                        // Its GOAWAY is in the output: written below, then the end.
                        debug!("upstream HTTP/2: {e}");
                        conn.retire();
                        st.end(e.to_string().into(), handed);
                    }
                }
                Poll::Pending => {
                    // An answer still coming (`rest_coming`) from an endpoint that may
                    // write it in pieces with Nagle on (HEADERS, then DATA): what came is
                    // acknowledged at once, as the HTTP/1 codec does.
                    if !acked && rest_coming {
                        io.ack_now();
                        acked = true;
                    }
                }
            }
        }
        // After the read: an answer waiting in the socket is heard before the timer judges.
        if let Some(k) = keepalive.as_mut() {
            match k.poll(cx) {
                Poll::Ready(Due::Ping) => {
                    conn.lock().h2.ping(*b"weir-liv");
                    progress = true;
                }
                Poll::Ready(Due::Dead) => {
                    return Poll::Ready(
                        format!(
                            "the endpoint answered no PING within {:?}: connection given up as dead",
                            k.timeout()
                        )
                        .into(),
                    );
                }
                Poll::Pending => {}
            }
        }
        let mut finished = false;
        if written == out.len() {
            out.clear();
            written = 0;
            let mut st = conn.lock();
            keep_waker(&mut st.driver, cx);
            if let Some(at) = st.earliest.take() {
                st.armed = Some(at);
                timer.as_mut().reset(at.into());
                timing = true;
                progress = true;
            }
            let done = st.abandoned
                || (eof || st.h2.is_going_away()) && st.slots.is_empty()
                || st.ended.is_some();
            if !done && !eof && st.h2.output_len() > 0 && !deferred {
                // Woken by a stream that queued frames: the tasks woken with it (other
                // requests about to open streams here) run first, and their frames go in
                // the same write. Waking itself puts this task behind them, where the
                // waker's wake would have run it next.
                deferred = true;
                drop(st);
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            deferred = false;
            if done && st.ended.is_none() && !eof {
                st.h2.go_away(Reason::NO_ERROR);
            }
            std::mem::swap(&mut out, st.h2.output());
            handing = st.h2.last_opened();
            finished = done || eof;
        }
        while written < out.len() {
            match Pin::new(&mut io).poll_write(cx, &out[written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready("writing: closed".into()),
                Poll::Ready(Ok(n)) => {
                    written += n;
                    flushed = false;
                    // After weir's bytes the kernel holds its ACKs back again.
                    acked = false;
                    progress = true;
                    handed = handing;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(format!("writing: {e}").into()),
                Poll::Pending => break,
            }
        }
        if written == out.len() && !flushed {
            match Pin::new(&mut io).poll_flush(cx) {
                Poll::Ready(Ok(())) => flushed = true,
                Poll::Ready(Err(e)) => return Poll::Ready(format!("writing: {e}").into()),
                Poll::Pending => {}
            }
        }
        if finished && written == out.len() && flushed {
            return Poll::Ready(match eof {
                true => "the endpoint closed the connection".into(),
                false => "closed".into(),
            });
        }
        if !progress {
            return Poll::Pending;
        }
    })
    .await;
    conn.retire();
    let mut st = conn.lock();
    if st.ended.is_none() {
        debug!("upstream HTTP/2 connection ended: {why}");
        st.end(why, handed);
    }
}

impl H2UpstreamConnection {
    /// A stream on this connection, if it is alive and has room for one more.
    pub fn claim(self: &Arc<Self>) -> Option<Stream> {
        if self.is_dead() {
            return None;
        }
        // The endpoint's own limit, from its SETTINGS: weir would rather open another
        // connection than have a stream refused.
        let max = self.max.min(self.conn.peer_max.load(Relaxed));
        self.active
            .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .ok()?;
        self.uses.fetch_add(1, Relaxed);
        self.idle_since_ms.store(0, Relaxed);
        Some(Stream { conn: self.clone() })
    }

    pub fn is_dead(&self) -> bool {
        self.conn.dead.load(Relaxed)
    }

    /// No stream is claimed on it again (it refused one: GOAWAY, or it broke).
    pub fn retire(&self) {
        self.conn.retire();
    }

    /// Streams opened on it so far.
    pub fn uses(&self) -> u32 {
        self.uses.load(Relaxed)
    }

    /// Whether no stream is open on it.
    pub fn is_idle(&self) -> bool {
        self.active.load(Relaxed) == 0
    }

    /// Whether it has had no stream for longer than its idle timeout at `now_ms`.
    pub fn idle_expired(&self, now_ms: u64) -> bool {
        let since = self.idle_since_ms.load(Relaxed);
        self.active.load(Relaxed) == 0
            && since != 0
            && now_ms.saturating_sub(since) >= self.idle_timeout.as_millis() as u64
    }
}

/// Takes the slot's waker place for the task polling `cx`.
pub(super) fn wait(slot: &mut Slot, cx: &Context<'_>) {
    keep_waker(&mut slot.waker, cx);
}
