//! HTTP/2 server side: one client connection's streams, each a request through the
//! pipeline (`server::Serve`, as HTTP/1.1's), all in the connection's one task, on weir's
//! own HTTP/2 connection (`weir_h2::server`, sans I/O).
//!
//! The loop (`run`) makes passes: it takes everything that is ready (the pipeline's
//! answers, response bodies' next frames, tunnels that ended, what the pipeline took of
//! request bodies, the socket's bytes) and then writes the output once, so one write
//! carries the frames of every stream that was ready. A response body is pulled a frame at
//! a time (`Pump`) and sent as the client's window allows; one that waits for window longer
//! than the stall time is reset. Request bodies and tunnels go through `shared.rs`.
//!
//! weir-h2 enforces the protocol and the limits set here (concurrent streams, header list
//! size, windows, CONTINUATION and control-frame floods, streams reset for the client's
//! errors). Rapid reset (CVE-2023-44487) is counted here: a client that resets more than
//! [`MAX_RESETS_PER_SEC`] streams in flight within a second is sent GOAWAY. A drain sends
//! GOAWAY with the last stream id; streams in flight finish. A stream the client resets
//! while its request is in flight cancels the request, as a client closing an HTTP/1
//! connection does. An idle connection gets GOAWAY before its close. A WebSocket extended
//! CONNECT (RFC 8441) goes through the handler as an HTTP/1.1 upgrade (`websocket.rs`) and,
//! once switched, its stream is the tunnel the handler relays (`tunnel.rs`).

use std::fmt::Display;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures_util::stream::{FuturesUnordered, StreamExt};
use http::{HeaderMap, HeaderName, Request, Response, StatusCode, Version};
use http_body::Body;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use tracing::debug;
use weir_h2::frame::{StreamId, StreamMap};
use weir_h2::server::{Config, Event, Flood, H2ServerConnection, RequestHead};
use weir_h2::Reason;

use super::expect::{self, Expect};
use super::goaways::{self, Abuse};
use super::io::Joined;
use super::linger::{Late, Lingering};
use super::request_body::RequestBody;
use super::shared::{ConnShared, StreamShared};
use super::tunnel::Tunnel;
use super::websocket;
use crate::server::control::{DrainFlags, Limits};
use crate::server::handoff::Handoff;
use crate::server::serve::{Serve, Switched};

/// What this codec needs of the pipeline's request body: made from a stream's, or none
/// (`Default`) for an extended CONNECT, whose stream is the tunnel.
pub trait StreamBody: From<RequestBody> + Default + Send {}

impl<B: From<RequestBody> + Default + Send> StreamBody for B {}

/// Per stream receive window: what one upload may have in flight to weir before the
/// pipeline takes it.
const STREAM_WINDOW: u32 = 256 * 1024;
/// The connection's receive window, shared by its streams.
const CONNECTION_WINDOW: u32 = 1024 * 1024;
/// Streams the client may reset (after weir accepted them) per second before it is sent
/// GOAWAY (ENHANCE_YOUR_CALM): far above what cancelling clients do (a browser leaving a
/// page resets a few dozen), far below an attack's thousands.
pub const MAX_RESETS_PER_SEC: u32 = 200;
/// How much the loop reads at a time.
const READ_SIZE: usize = 16 * 1024;
/// Output that is written before the loop takes more: a client with a large window and a
/// fast upstream must not make weir gather a whole response in memory before a write.
const WRITE_HIGH: usize = 256 * 1024;

/// A response body's frames polled as soon as the previous one went (`Loop::pump`), before
/// it waits in `pumps`: enough for a small answer's DATA and trailers.
const INLINE_FRAMES: usize = 4;

type Call<'h, B> = Pin<Box<dyn Future<Output = (StreamId, Option<Response<B>>)> + Send + 'h>>;
type TunnelRun<'h> = Pin<Box<dyn Future<Output = StreamId> + Send + 'h>>;

/// Serves the connection until the client closes it, an error ends it, or a drain's GOAWAY
/// has let every stream finish.
///
/// `ctl.idle` is cancelled when the connection has been idle too long: GOAWAY (NO_ERROR,
/// the last stream id) goes out before the close, so a client whose new stream crossed it
/// knows the stream was not processed and may send it again.
pub async fn run<H>(
    conn: Handoff,
    handler: &H,
    ctl: &DrainFlags,
    drain: &CancellationToken,
    limits: Limits,
) where
    H: Serve<ReqBody: StreamBody>,
    <H::Body as Body>::Error: Display + Send + 'static,
{
    // GOAWAY on a drain or an idle timeout is sent here.
    let idle = ctl.idle.get_or_init(CancellationToken::new);
    ctl.goes_away.store(true, Relaxed);
    let mut io = Joined::new(conn.read, conn.reader, conn.writer);
    let mut l = Loop {
        h2: H2ServerConnection::new(Config {
            max_streams: limits.max_streams,
            max_header_list: u32::try_from(limits.max_head).unwrap_or(u32::MAX),
            stream_window: STREAM_WINDOW,
            connection_window: CONNECTION_WINDOW,
            // WebSocket over HTTP/2 (RFC 8441): SETTINGS_ENABLE_CONNECT_PROTOCOL.
            connect_protocol: true,
        }),
        handler,
        conn: Arc::new(ConnShared::default()),
        open: StreamMap::default(),
        blocked: StreamMap::default(),
        lingering: Lingering::default(),
        stall: limits.stall,
        calls: FuturesUnordered::new(),
        pumps: FuturesUnordered::new(),
        tunnels: FuturesUnordered::new(),
        resets: Resets::default(),
        closing: false,
    };
    let mut rbuf = BytesMut::with_capacity(READ_SIZE);
    let mut dirty = Vec::new();
    let mut stall_timer = pin!(tokio::time::sleep(Duration::from_secs(3600)));
    let mut drained = pin!(drain.cancelled());
    let mut idled = pin!(idle.cancelled());
    let mut draining = false;
    let mut eof = false;
    // No bytes sent since the kernel last acknowledged at once (`transport/acks.rs`).
    let mut acked = false;
    // The waker the drain and idle futures were last polled with. A poll of one looks at
    // its token and then at its notification, each under a lock; they are polled again only
    // for a new waker, and in between the token is looked at alone: a cancellation wakes
    // the waker they hold.
    let mut tokens_hold: Option<Waker> = None;
    loop {
        poll_fn(|cx| {
            l.conn.register(cx);
            let mut register = !tokens_hold
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()));
            if register {
                tokens_hold = Some(cx.waker().clone());
            }
            loop {
                let mut progress = l.poll_streams(cx, &mut dirty);
                let (drain_now, idle_now) = match std::mem::take(&mut register) {
                    true => (
                        !draining && drained.as_mut().poll(cx).is_ready(),
                        !l.closing && idled.as_mut().poll(cx).is_ready(),
                    ),
                    false => (
                        !draining && drain.is_cancelled(),
                        !l.closing && idle.is_cancelled(),
                    ),
                };
                if drain_now {
                    l.h2.go_away(Reason::NO_ERROR);
                    // Uploads nobody reads need not hold the drain.
                    for id in l.lingering.take_all() {
                        l.h2.end_request(id);
                    }
                    draining = true;
                    progress = true;
                }
                if idle_now {
                    l.h2.go_away(Reason::NO_ERROR);
                    l.closing = true;
                }
                let timed = !l.blocked.is_empty() || !l.lingering.is_empty();
                if timed && stall_timer.as_mut().poll(cx).is_ready() {
                    l.stalled();
                    l.lingered();
                    progress = true;
                }
                if let Some(at) = l.next_deadline() {
                    if stall_timer.deadline().into_std() != at {
                        stall_timer.as_mut().reset(at.into());
                    }
                }
                if !eof && !l.h2.is_closed() && !l.closing {
                    if rbuf.capacity() - rbuf.len() < READ_SIZE / 4 {
                        rbuf.reserve(READ_SIZE);
                    }
                    match tokio_util::io::poll_read_buf(Pin::new(&mut io), cx, &mut rbuf) {
                        Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => eof = true,
                        Poll::Ready(Ok(_)) => {
                            progress = true;
                            if let Err(e) = l.h2.recv(&mut rbuf) {
                                debug!("HTTP/2: {e}");
                                goaways::abuse(match e.flood {
                                    Some(Flood::Continuation) => Abuse::ContinuationFlood,
                                    Some(Flood::ControlFrames) => Abuse::ControlFlood,
                                    Some(Flood::StreamErrors) => Abuse::StreamErrors,
                                    None => Abuse::ProtocolError,
                                });
                            }
                            while let Some(ev) = l.h2.next_event() {
                                l.event(ev);
                            }
                        }
                        Poll::Pending => {
                            // A request still coming (a body after its HEADERS) from a
                            // client that may write it in pieces with Nagle on: what came
                            // is acknowledged at once, as the HTTP/1 codec does.
                            if !acked && l.h2.awaits_request() {
                                io.ack_now();
                                acked = true;
                            }
                        }
                    }
                }
                if !progress || eof || l.h2.output_len() >= WRITE_HIGH {
                    break;
                }
            }
            if eof || l.h2.output_len() > 0 || l.done(draining) {
                return Poll::Ready(());
            }
            Poll::Pending
        })
        .await;
        ctl.busy.store(!l.open.is_empty(), Relaxed);
        if eof {
            break;
        }
        let mut out = std::mem::take(l.h2.output());
        if !out.is_empty() {
            let wrote = async {
                io.write_all(&out).await?;
                io.flush().await
            };
            if let Err(e) = wrote.await {
                debug!("HTTP/2: writing to the client: {e}");
                break;
            }
            // After weir's bytes the kernel holds its ACKs back again.
            acked = false;
            out.clear();
        }
        *l.h2.output() = out;
        if l.done(draining) {
            break;
        }
    }
    // The connection is done; a stream still here could only fail to send.
    drop(l);
    ctl.busy.store(false, Relaxed);
}

/// The connection's state between passes.
struct Loop<'h, H: Serve> {
    h2: H2ServerConnection,
    handler: &'h H,
    conn: Arc<ConnShared>,
    /// Streams the pipeline works on (a call, a body being sent, a tunnel).
    open: StreamMap<Open>,
    /// Response bodies waiting for the client's window.
    blocked: StreamMap<Blocked<H::Body>>,
    /// Requests still coming after their answers (`linger.rs`).
    lingering: Lingering,
    stall: Duration,
    calls: FuturesUnordered<Call<'h, H::Body>>,
    pumps: FuturesUnordered<Pump<H::Body>>,
    tunnels: FuturesUnordered<TunnelRun<'h>>,
    resets: Resets,
    /// GOAWAY before a close (idle, or abuse): the close follows the write.
    closing: bool,
}

struct Open {
    shared: Arc<StreamShared>,
    /// An extended CONNECT for WebSocket: once switched, its stream is a tunnel.
    tunnel: bool,
    /// The tunnel's relay ended: the stream is done once what it queued went.
    relay_over: bool,
    /// Bytes received for it and not yet given back to the client's windows (taken or
    /// not): what `finish` gives back, without asking the stream.
    unreleased: usize,
    /// The client waits for a `100` before its body (`StreamShared` says whether it was asked).
    expects_continue: bool,
}

impl Open {
    fn new(shared: Arc<StreamShared>, tunnel: bool, expects_continue: bool) -> Open {
        Open {
            shared,
            tunnel,
            relay_over: false,
            unreleased: 0,
            expects_continue,
        }
    }
}

/// A response body that waits for window: the data that did not fit, whether it ends the
/// body, and since when it waits.
struct Blocked<B> {
    body: B,
    rest: Bytes,
    end: bool,
    since: Instant,
}

impl<'h, H: Serve<ReqBody: StreamBody>> Loop<'h, H>
where
    <H::Body as Body>::Error: Display + Send + 'static,
{
    fn done(&mut self, draining: bool) -> bool {
        self.h2.is_closed()
            || self.closing
            || (draining && self.open.is_empty() && self.h2.is_idle())
    }

    /// Everything the streams have ready: answers, body frames, ended tunnels, bytes
    /// taken from request bodies or queued for tunnels. Whether anything was.
    fn poll_streams(&mut self, cx: &mut Context<'_>, dirty: &mut Vec<StreamId>) -> bool {
        let mut progress = false;
        // An empty set is not polled: polling one registers the waker (two locked operations
        // each time) for futures that can only come from this task, which then polls again
        // (whatever pushes one reports progress).
        while !self.calls.is_empty() {
            let Poll::Ready(Some((id, resp))) = self.calls.poll_next_unpin(cx) else {
                break;
            };
            progress = true;
            self.answer(cx, id, resp);
        }
        while !self.pumps.is_empty() {
            let Poll::Ready(Some((id, body, frame))) = self.pumps.poll_next_unpin(cx) else {
                break;
            };
            progress = true;
            if let Some(body) = self.frame(id, body, frame) {
                self.pump(cx, id, body);
            }
        }
        while !self.tunnels.is_empty() {
            let Poll::Ready(Some(id)) = self.tunnels.poll_next_unpin(cx) else {
                break;
            };
            progress = true;
            // The relay is over: the client's side ends once what is queued went.
            if let Some(o) = self.open.get_mut(&id) {
                o.relay_over = true;
                o.shared.shut();
            }
        }
        self.conn.take_dirty(dirty);
        for &id in dirty.iter() {
            progress = true;
            self.dirty(id);
        }
        progress
    }

    fn event(&mut self, ev: Event) {
        match ev {
            Event::Request {
                stream,
                head,
                end_stream,
                expect,
            } => {
                self.handler.request_arriving();
                let expect = match expect {
                    false => Expect::Nothing,
                    true => expect::of(&head.headers),
                };
                let shared = StreamShared::new(
                    stream,
                    self.conn.clone(),
                    end_stream,
                    expect == Expect::Continue,
                );
                let (req, tunnel) = request::<H>(head, &shared);
                let (call, tunnel): (Call<'h, H::Body>, bool) = if expect == Expect::Unmet {
                    match self.refusal(stream, req) {
                        Some(call) => (call, false),
                        // Answered with the status alone.
                        None => return,
                    }
                } else {
                    let handler = self.handler;
                    let gone = shared.clone();
                    let call = Box::pin(async move {
                        let mut call = pin!(handler.call(req));
                        let mut registered = false;
                        let resp = poll_fn(|cx| match call.as_mut().poll(cx) {
                            Poll::Ready(r) => Poll::Ready(Some(r)),
                            // Reset by the client: the request is cancelled with the future.
                            Poll::Pending if gone.poll_gone(cx, &mut registered) => {
                                Poll::Ready(None)
                            }
                            Poll::Pending => Poll::Pending,
                        })
                        .await;
                        (stream, resp)
                    });
                    (call, tunnel)
                };
                self.calls.push(call);
                self.open.insert(
                    stream,
                    Open::new(shared, tunnel, expect == Expect::Continue),
                );
            }
            Event::Data {
                stream,
                data,
                end_stream,
            } => match self.open.get_mut(&stream) {
                Some(o) => {
                    o.unreleased += data.len();
                    o.shared.push(data, end_stream);
                }
                // Nobody reads it (the answer is out): given back at once, up to a bound.
                None => {
                    self.h2.release(stream, data.len());
                    if self.lingering.data(stream, data.len(), end_stream) == Late::TooMuch {
                        debug!("HTTP/2 stream {stream}: upload goes on after its answer, reset");
                        self.h2.end_request(stream);
                    }
                }
            },
            Event::Trailers { stream, fields } => {
                if let Some(o) = self.open.get(&stream) {
                    o.shared.trailers(fields);
                }
                self.lingering.forget(stream);
            }
            Event::Reset {
                stream,
                code,
                by_client,
            } => {
                self.blocked.remove(&stream);
                self.lingering.forget(stream);
                if let Some(o) = self.finish(stream) {
                    debug!("HTTP/2 stream {stream} reset ({code}) before its response ended");
                    o.shared.gone(code);
                    // A tunnel's reset is how a client closes a WebSocket over HTTP/2.
                    if by_client && !o.tunnel && self.resets.add() && !self.closing {
                        debug!("HTTP/2: rapid reset, sending GOAWAY");
                        goaways::abuse(Abuse::RapidReset);
                        self.h2.go_away(Reason::ENHANCE_YOUR_CALM);
                        self.closing = true;
                    }
                }
            }
            // Window for the bodies and tunnels that wait for it.
            Event::Window { stream: 0 } => {
                let ids: Vec<StreamId> = self.blocked.keys().copied().collect();
                for id in ids {
                    self.unblock(id);
                }
                let tunnels: Vec<StreamId> = self
                    .open
                    .iter()
                    .filter(|(_, o)| o.tunnel)
                    .map(|(&id, _)| id)
                    .collect();
                for id in tunnels {
                    self.dirty(id);
                }
            }
            Event::Window { stream } => {
                self.unblock(stream);
                if self.open.get(&stream).is_some_and(|o| o.tunnel) {
                    self.dirty(stream);
                }
            }
            Event::GoAway { .. } => {}
        }
    }

    /// The answer to a request with an expectation weir cannot meet: 417, through the same
    /// path as the pipeline's answers when the pipeline makes one; else the status alone,
    /// sent now (`None`). Out of line: `event` is on every request's path.
    #[cold]
    #[inline(never)]
    fn refusal(&mut self, stream: StreamId, req: Request<H::ReqBody>) -> Option<Call<'h, H::Body>> {
        let why = "an expectation other than 100-continue";
        self.handler.refused(417, &why, Some(&req));
        if let Some(resp) = self.handler.refusal(417) {
            return Some(Box::pin(async move { (stream, Some(resp)) }));
        }
        self.h2.send_headers(
            stream,
            StatusCode::EXPECTATION_FAILED,
            &HeaderMap::new(),
            true,
        );
        if self.h2.request_still_coming(stream) {
            self.lingering.start(stream, Instant::now());
        }
        None
    }

    /// The pipeline's answer to a stream (`None`: the client reset the stream first).
    fn answer(&mut self, cx: &mut Context<'_>, id: StreamId, resp: Option<Response<H::Body>>) {
        let Some(resp) = resp else {
            return;
        };
        let Some(mut open) = self.open.get(&id) else {
            return;
        };
        if open.expects_continue {
            // A `100` the pipeline asked for before its answer came (by the poll that
            // asked: a backend answering before it reads) goes first: the client still
            // waits for it to send the body the request goes on streaming.
            self.released(id);
            open = &self.open[&id];
        }
        if open.tunnel
            && resp.status() == StatusCode::SWITCHING_PROTOCOLS
            && self.handler.switches(resp.body())
        {
            let (head, body) = resp.into_parts();
            let ok = websocket::accepted(&head.headers);
            self.h2.send_headers(id, ok.status(), ok.headers(), false);
            let tunnel = Switched::Stream(Tunnel::new(open.shared.clone()));
            let relay = self.handler.switched(body, tunnel);
            self.tunnels.push(Box::pin(async move {
                relay.await;
                id
            }));
            return;
        }
        let (mut head, body) = resp.into_parts();
        head.version = Version::HTTP_2;
        strip_connection_fields(&mut head.headers);
        let end = body.is_end_stream();
        if !self.h2.send_headers(id, head.status, &head.headers, end) || end {
            self.finish(id);
            return;
        }
        self.pump(cx, id, body);
    }

    /// Sends a response body's frames as they are ready, polling it here first: a small
    /// answer's body is usually in memory already, and goes out in this pass without a
    /// `Pump` (an allocation and a trip through `pumps` per frame). Bounded so that one
    /// body cannot hold the loop; what is not ready waits in `pumps`.
    fn pump(&mut self, cx: &mut Context<'_>, id: StreamId, mut body: H::Body) {
        for _ in 0..INLINE_FRAMES {
            match Pin::new(&mut body).poll_frame(cx) {
                Poll::Ready(frame) => match self.frame(id, body, frame) {
                    Some(more) => body = more,
                    None => return,
                },
                Poll::Pending => break,
            }
        }
        self.pumps.push(Pump::new(id, body));
    }

    /// A response body's next frame; the body back when it has more to send.
    #[must_use]
    fn frame(&mut self, id: StreamId, body: H::Body, frame: PumpFrame<H::Body>) -> Option<H::Body> {
        match frame {
            Some(Ok(f)) => match f.into_data() {
                // The body's last DATA frame carries END_STREAM when the body knows it is
                // done (a Content-Length met): no empty frame after it.
                Ok(data) => {
                    let end = body.is_end_stream();
                    self.send(id, body, data, end)
                }
                Err(f) => match f.into_trailers() {
                    Ok(t) => {
                        self.h2.send_trailers(id, &t);
                        self.finish(id);
                        None
                    }
                    Err(_) => Some(body),
                },
            },
            Some(Err(e)) => {
                // The upstream's body broke off: the client must not take what it got for
                // the whole (HTTP/1 closes the connection; here, only this stream).
                debug!("HTTP/2 response body cut: {e}");
                self.h2.reset(id, Reason::INTERNAL_ERROR);
                self.finish(id);
                None
            }
            None => {
                self.h2.send_data(id, &[], true);
                self.finish(id);
                None
            }
        }
    }

    /// Sends what the window allows; the rest waits (`blocked`). The body back when the
    /// data went whole and more is to come.
    #[must_use]
    fn send(&mut self, id: StreamId, body: H::Body, data: Bytes, end: bool) -> Option<H::Body> {
        if !self.h2.is_sending(id) {
            // Reset meanwhile: the body is dropped.
            self.finish(id);
            return None;
        }
        let n = self.h2.send_data(id, &data, end);
        if n < data.len() {
            let since = match self.blocked.get(&id) {
                Some(b) if n == 0 => b.since,
                _ => Instant::now(),
            };
            let rest = data.slice(n..);
            self.blocked.insert(
                id,
                Blocked {
                    body,
                    rest,
                    end,
                    since,
                },
            );
            None
        } else if end {
            self.finish(id);
            None
        } else {
            Some(body)
        }
    }

    /// The stream leaves the pipeline: its answer is out, or it was reset. What the client
    /// sent that nobody took goes back to its windows: to the stream's, so that a client
    /// still uploading after an early answer (RFC 9113 §8.1) can finish, and what it sends
    /// after that is given back as it comes (`Event::Data`) while it lingers (`linger.rs`:
    /// then RST_STREAM NO_ERROR); to the connection's in any case, since every stream shares
    /// it (a client cancelling uploads that waited in a queue would otherwise stall its
    /// connection in four).
    fn finish(&mut self, id: StreamId) -> Option<Open> {
        if self.h2.request_still_coming(id) {
            self.lingering.start(id, Instant::now());
        }
        let o = self.open.remove(&id)?;
        if o.unreleased > 0 {
            self.h2.release(id, o.unreleased);
        }
        Some(o)
    }

    fn unblock(&mut self, id: StreamId) {
        if let Some(b) = self.blocked.remove(&id) {
            // Kept as it was if nothing goes: `send` puts it back with its time.
            let since = b.since;
            let n_before = b.rest.len();
            if let Some(body) = self.send(id, b.body, b.rest, b.end) {
                self.pumps.push(Pump::new(id, body));
            }
            if let Some(again) = self.blocked.get_mut(&id) {
                if again.rest.len() == n_before {
                    again.since = since;
                }
            }
        }
    }

    /// Bodies that waited for window longer than the stall time: reset.
    fn stalled(&mut self) {
        // The timer may wake a hair before a deadline; a stall is not that exact.
        let now = Instant::now() + Duration::from_millis(5);
        let stall = self.stall;
        let late: Vec<StreamId> = self
            .blocked
            .iter()
            .filter(|(_, b)| now >= b.since + stall)
            .map(|(&id, _)| id)
            .collect();
        for id in late {
            debug!("HTTP/2 stream stalled (no window for {stall:?}): reset");
            self.blocked.remove(&id);
            self.h2.reset(id, Reason::CANCEL);
            if let Some(o) = self.finish(id) {
                o.shared.gone(Reason::CANCEL);
            }
        }
    }

    /// When the timer must look again: a body's stall, or a request's linger.
    fn next_deadline(&self) -> Option<Instant> {
        let stall = self.blocked.values().map(|b| b.since + self.stall).min();
        match (stall, self.lingering.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Requests still coming when their linger ran out: the clients are told to stop.
    fn lingered(&mut self) {
        // The timer may wake a hair before a deadline.
        let now = Instant::now() + Duration::from_millis(5);
        for id in self.lingering.overdue(now) {
            debug!("HTTP/2 stream {id}: upload still coming after its answer, reset");
            self.h2.end_request(id);
        }
    }

    /// A stream whose pipeline took request body bytes (given back to the window) or
    /// queued tunnel bytes (sent as the window allows).
    fn dirty(&mut self, id: StreamId) {
        self.released(id);
        let Some(o) = self.open.get_mut(&id) else {
            return;
        };
        if !o.tunnel {
            return;
        }
        if !self.h2.is_sending(id) {
            // Its END_STREAM went already (or the stream is gone).
            if o.relay_over {
                self.finish(id);
            }
            return;
        }
        let (out, end) = o.shared.take_out(self.h2.window(id));
        for b in &out {
            self.h2.send_data(id, b, false);
        }
        if end {
            // The client may still send (and reset): the relay reads on until it ends.
            self.h2.send_data(id, &[], true);
            if o.relay_over {
                self.finish(id);
            }
        }
    }

    /// What the stream's pipeline asked of the client since the last pass: the `100` its
    /// first read of a body still to come asks for, and window for the bytes it took.
    fn released(&mut self, id: StreamId) {
        let Some(o) = self.open.get_mut(&id) else {
            return;
        };
        let (taken, continue_asked) = o.shared.take_released();
        if continue_asked {
            // Refused by weir-h2 once the answer went (asked after it, the `100` is not
            // needed: the answer came without the body).
            self.h2
                .send_headers(id, StatusCode::CONTINUE, &HeaderMap::new(), false);
        }
        if taken > 0 {
            // Bytes taken were counted in when they came.
            o.unreleased = o.unreleased.saturating_sub(taken);
            self.h2.release(id, taken);
        }
    }
}

/// A request head made the pipeline's request; whether it is a WebSocket extended CONNECT
/// (its stream is then the tunnel, and the request has no body).
fn request<H: Serve<ReqBody: StreamBody>>(
    head: RequestHead,
    shared: &Arc<StreamShared>,
) -> (Request<H::ReqBody>, bool) {
    let mut req = Request::new(());
    *req.method_mut() = head.method;
    *req.uri_mut() = head.uri;
    *req.version_mut() = Version::HTTP_2;
    *req.headers_mut() = head.headers;
    let (mut parts, ()) = req.into_parts();
    // A WebSocket's extended CONNECT goes through the pipeline as the HTTP/1.1 upgrade it
    // stands for; its stream is kept for the tunnel.
    if websocket::as_upgrade(&mut parts, head.protocol.as_deref()) {
        return (Request::from_parts(parts, H::ReqBody::default()), true);
    }
    let body = RequestBody::new(shared.clone(), head.content_length).into();
    (Request::from_parts(parts, body), false)
}

type PumpFrame<B> = Option<Result<http_body::Frame<Bytes>, <B as Body>::Error>>;

/// A response body's next frame, as a future that gives the body back with it.
struct Pump<B> {
    id: StreamId,
    body: Option<B>,
}

impl<B> Pump<B> {
    fn new(id: StreamId, body: B) -> Pump<B> {
        Pump {
            id,
            body: Some(body),
        }
    }
}

impl<B: Body<Data = Bytes> + Unpin> Future for Pump<B> {
    type Output = (StreamId, B, PumpFrame<B>);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let body = this
            .body
            .as_mut()
            .expect("a pump is polled until ready, once");
        let frame = std::task::ready!(Pin::new(body).poll_frame(cx));
        let body = this.body.take().expect("checked above");
        Poll::Ready((this.id, body, frame))
    }
}

/// Client resets in the current one-second window.
#[derive(Default)]
struct Resets {
    since: Option<Instant>,
    count: u32,
}

impl Resets {
    /// One more; whether the client is now over the bound.
    fn add(&mut self) -> bool {
        let now = Instant::now();
        match self.since {
            Some(t) if now.duration_since(t) < Duration::from_secs(1) => {}
            _ => {
                self.since = Some(now);
                self.count = 0;
            }
        }
        self.count += 1;
        self.count > MAX_RESETS_PER_SEC
    }
}

/// Fields that describe an HTTP/1 connection, which HTTP/2 forbids in a message
/// (RFC 9113 §8.2.2). One pass over the names first: the pipeline already removed them from
/// upstream answers, so there is rarely one to remove.
fn strip_connection_fields(h: &mut HeaderMap) {
    let forbidden = |n: &HeaderName| {
        matches!(
            n.as_str(),
            "connection"
                | "transfer-encoding"
                | "upgrade"
                | "te"
                | "keep-alive"
                | "proxy-connection"
        )
    };
    let found: Vec<HeaderName> = h.keys().filter(|n| forbidden(n)).cloned().collect();
    for name in found {
        h.remove(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_fields_are_taken_out_and_nothing_else() {
        let mut h = HeaderMap::new();
        for (n, v) in [
            ("connection", "close"),
            ("keep-alive", "timeout=5"),
            ("proxy-connection", "keep-alive"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "h2c"),
            ("te", "trailers"),
            ("x-kept", "1"),
            ("content-type", "text/plain"),
        ] {
            h.append(n, v.parse().unwrap());
        }
        h.append("keep-alive", "max=3".parse().unwrap());
        strip_connection_fields(&mut h);
        let mut left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        left.sort();
        assert_eq!(left, ["content-type", "x-kept"]);
        strip_connection_fields(&mut h);
        assert_eq!(h.len(), 2);
    }
}
