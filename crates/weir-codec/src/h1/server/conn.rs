//! One client connection, in the connection's own task: read a head, call
//! the handler (the pipeline, through `server::Serve`), write the response,
//! and again for the next request (whose bytes may already be in the buffer:
//! pipelining). The first bytes are those the protocol selection read.
//!
//! While the handler works, the connection answers `100 Continue` when the
//! body is first read, and watches for the client leaving (as hyper did:
//! EOF before the answer drops the request, which frees its queue place).
//! After the response, a request body the handler did not read is drained
//! if it is already here, else the connection closes.

use std::fmt::Display;
use std::future::{poll_fn, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Request;
use http_body::Body;
use tokio::time::Sleep;
use tokio_util::io::poll_read_buf;
use tracing::debug;

use super::body::ReqBody;
use super::reader::{Home, Reader, READ_CHUNK};
use super::respond::{self, Asked, Framing, Length};
use super::write::Writer;
use crate::server::control::DrainFlags;
use crate::server::handoff::Handoff;
use crate::server::serve::{Serve, Switched};
use weir_h1::request::{self as parse, Head};
use weir_transport::{ClientReader, ClientStream, ClientWriter};

/// What follows an exchange.
enum After<B> {
    Next,
    Close,
    /// The response switched protocols; its body carries the switch.
    Switch(B),
}

/// An unread request body is drained up to this much; beyond, the
/// connection closes instead.
const DRAIN_LIMIT: usize = 256 * 1024;

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// How far into a request on a socket not yet in epoll the watch for the
/// client leaving starts: a client that leaves is noticed this much later
/// at most, and then the upstream exchange is cancelled as always.
const WATCH_DELAY: Duration = Duration::from_millis(5);

/// Serves a connection known to speak HTTP/1.1, nothing read from it yet, until it closes
/// (waiting between requests too: for the codec's own tests).
pub async fn run<H>(stream: ClientStream, handler: &H, ctl: &DrainFlags, max_head: usize)
where
    H: Serve,
    H::ReqBody: From<ReqBody>,
    <H::Body as Body>::Error: Display,
{
    let mut next = serve(Handoff::new(stream), handler, ctl, max_head).await;
    loop {
        let mut idle = match next {
            Some(Pause::Idle(idle)) => idle,
            Some(Pause::Relay(relay)) => return relay.await,
            None => return,
        };
        let Some(read) = poll_fn(|cx| idle.poll_arrival(cx, handler)).await else {
            return;
        };
        next = idle.resume(read, handler, ctl, max_head).await;
    }
}

/// Where serving an HTTP/1.1 connection stopped with the connection still open, for its
/// owner: both outlive the requests' future, which the owner frees first.
pub enum Pause<'a> {
    /// Waiting for its next request.
    Idle(Idle),
    /// A request switched protocols (`101`): the relay that carries it until it ends
    /// ([`Serve::switched`]).
    Relay(Pin<Box<dyn Future<Output = ()> + Send + 'a>>),
}

/// An HTTP/1.1 connection waiting for its next request: the stream's two halves and
/// nothing else (no buffer, no request state), so that an idle keep-alive connection
/// costs little more than its socket. Its owner waits with [`Idle::poll_arrival`], then
/// serves what came with [`Idle::resume`] (in a future it boxes for the requests' time:
/// see `pipeline/http/conn.rs`).
pub struct Idle {
    reader: ClientReader,
    writer: ClientWriter,
    /// Where a request body reads from (made at the connection's first body, kept).
    home: Option<Arc<Home>>,
    /// The last read found the socket empty, in this task's poll: its waker is registered,
    /// so the first wait reads nothing (another read would find nothing either).
    armed: bool,
}

impl Idle {
    /// `Ready(Some(bytes))` once the next request's first bytes came, `Ready(None)` when
    /// the client closed the connection (or it failed). While none came, it holds no
    /// buffer (one is lent to each read and given back).
    pub fn poll_arrival<H: Serve>(
        &mut self,
        cx: &mut Context<'_>,
        handler: &H,
    ) -> Poll<Option<BytesMut>> {
        if std::mem::take(&mut self.armed) {
            return Poll::Pending;
        }
        let mut read = BytesMut::with_capacity(READ_CHUNK);
        match poll_read_buf(Pin::new(&mut self.reader), cx, &mut read) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(n)) if n > 0 => {
                handler.request_arriving();
                Poll::Ready(Some(read))
            }
            // EOF or an error: the connection is over, closed without a write shutdown
            // (closing the socket sends the FIN).
            Poll::Ready(_) => Poll::Ready(None),
        }
    }

    /// Serves the requests that begin with `read` (the bytes [`Idle::poll_arrival`] gave)
    /// until the connection closes or waits again.
    pub fn resume<'a, H>(
        self,
        read: BytesMut,
        handler: &'a H,
        ctl: &'a DrainFlags,
        max_head: usize,
    ) -> impl Future<Output = Option<Pause<'a>>> + 'a
    where
        H: Serve,
        H::ReqBody: From<ReqBody>,
        <H::Body as Body>::Error: Display,
    {
        ConnIo::new(self.reader, read, self.writer, self.home).serve(handler, ctl, max_head)
    }

    /// Closes the connection without a write shutdown (closing the socket sends the FIN).
    pub fn close(self) {
        self.writer.forget();
    }
}

/// Serves the connection, starting with the bytes already read from it (the protocol
/// selection's), until it closes or waits for its next request: then it is handed back as
/// [`Idle`]. Heads over `max_head` get 431.
pub fn serve<'a, H>(
    stream: Handoff,
    handler: &'a H,
    ctl: &'a DrainFlags,
    max_head: usize,
) -> impl Future<Output = Option<Pause<'a>>> + 'a
where
    H: Serve,
    H::ReqBody: From<ReqBody>,
    <H::Body as Body>::Error: Display,
{
    let Handoff {
        reader,
        read,
        writer,
    } = stream;
    ConnIo::new(reader, read, writer, None).serve(handler, ctl, max_head)
}

/// What [`ConnIo::next_head`] found. The head inline, as `Option<Head>` had it: boxing it
/// would cost an allocation per request.
#[allow(clippy::large_enum_variant)]
enum Next {
    Head(Head),
    /// No bytes of a next request are here (a read just found none): the connection waits
    /// as [`Idle`].
    Idle,
    /// The connection is over (EOF, an error, or a head weir refused and answered).
    Over,
}

struct ConnIo {
    /// Here unless a request body has it (then it returns through `home`).
    reader: Option<Reader>,
    w: Writer,
    home: Option<Arc<Home>>,
    /// The client sent more bytes while a request was in flight: no need
    /// to watch for EOF until the next request.
    peeked: bool,
    /// While the socket is not in epoll: when watching for the client's
    /// EOF starts (see `client_gone`).
    watch_from: Option<Pin<Box<Sleep>>>,
}

impl ConnIo {
    /// The connection serving again from `read`, the bytes already read from it.
    fn new(
        reader: ClientReader,
        read: BytesMut,
        writer: ClientWriter,
        home: Option<Arc<Home>>,
    ) -> ConnIo {
        ConnIo {
            reader: Some(Reader::resume(reader, read)),
            w: Writer::new(writer),
            home,
            peeked: false,
            watch_from: None,
        }
    }

    /// Requests, one after another (pipelined ones from the buffer), until the connection
    /// closes or no bytes of a next one are here.
    async fn serve<'a, H>(
        mut self,
        handler: &'a H,
        ctl: &DrainFlags,
        max_head: usize,
    ) -> Option<Pause<'a>>
    where
        H: Serve,
        H::ReqBody: From<ReqBody>,
        <H::Body as Body>::Error: Display,
    {
        loop {
            let head = match self.next_head(handler, max_head).await {
                Next::Head(head) => head,
                Next::Idle => return self.into_idle(),
                Next::Over => break,
            };
            ctl.busy.store(true, Relaxed);
            let keep = match self.exchange(handler, head, ctl).await {
                After::Next => true,
                After::Close => false,
                After::Switch(body) => {
                    // Still busy: a drain lets the switched connection run until
                    // its grace is over, as it does a request in flight.
                    // The EOF watch's timer and the body's home go now, not when the
                    // relay ends: it may last for hours.
                    let ConnIo {
                        reader,
                        w,
                        home,
                        watch_from,
                        ..
                    } = self;
                    drop((home, watch_from));
                    let (reader, read) = reader.map(Reader::into_parts)?;
                    let client = Switched::Connection(Handoff {
                        reader,
                        read,
                        writer: w.into_io(),
                    });
                    // Handed to the owner, which frees the requests' future (kilobytes)
                    // before it carries the relay (which may last for hours).
                    return Some(Pause::Relay(Box::pin(handler.switched(body, client))));
                }
            };
            ctl.busy.store(false, Relaxed);
            // The EOF watch's timer (boxed, 112 B) is for a request in flight.
            self.watch_from = None;
            if !keep || ctl.draining.load(Relaxed) {
                break;
            }
        }
        // With the read half here, dropping it next closes the socket; if a
        // request body still holds it somewhere, the FIN must not wait for that.
        self.reclaim();
        if self.reader.is_some() {
            self.w.close();
        }
        None
    }

    /// The connection between requests, once a read (in this poll) found nothing: its
    /// halves, its buffers given back.
    fn into_idle<'a>(self) -> Option<Pause<'a>> {
        let ConnIo {
            reader, w, home, ..
        } = self;
        let (reader, _) = reader?.into_parts();
        Some(Pause::Idle(Idle {
            reader,
            writer: w.into_io(),
            home,
            armed: true,
        }))
    }

    /// The next request head; [`Next::Idle`] when no bytes of one are here (the owner
    /// waits for them, see [`Idle`]).
    async fn next_head<H: Serve>(&mut self, handler: &H, max_head: usize) -> Next {
        let Some(r) = self.reader.as_mut() else {
            return Next::Over;
        };
        if r.buf.is_empty() {
            // One read first, into the buffer the last request left (no allocation): the
            // next request may be here already. Nothing: the connection waits as `Idle`.
            match poll_fn(|cx| Poll::Ready(r.poll_fill(cx))).await {
                Poll::Pending => return Next::Idle,
                Poll::Ready(Ok(0) | Err(_)) => return Next::Over,
                Poll::Ready(Ok(_)) => handler.request_arriving(),
            }
        }
        r.acked = false;
        let parsed = poll_fn(|cx| loop {
            if !r.buf.is_empty() {
                match parse::parse(&mut r.buf, max_head) {
                    Ok(Some(head)) => return Poll::Ready(Ok(Some(head))),
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Err(e)),
                }
            }
            match r.poll_fill(cx) {
                Poll::Pending => {
                    // Part of the head is here, the rest is not.
                    r.awaiting_rest();
                    return Poll::Pending;
                }
                // EOF (mid-head too: hyper answered nothing either) or an error.
                Poll::Ready(Ok(0) | Err(_)) => return Poll::Ready(Ok(None)),
                Poll::Ready(Ok(_)) => handler.request_arriving(),
            }
        })
        .await;
        match parsed {
            Ok(Some(head)) => Next::Head(head),
            Ok(None) => Next::Over,
            Err(e) => {
                debug!("refused request: {e}");
                if let Some(status) = e.status() {
                    handler.refused(status, &e, None);
                    respond::refusal(&mut self.w.buf, status);
                    let _ = poll_fn(|cx| self.w.poll_flush(cx)).await;
                }
                Next::Over
            }
        }
    }

    /// One request and its response; whether the connection can carry
    /// another, or switches protocols.
    async fn exchange<H>(&mut self, handler: &H, head: Head, ctl: &DrainFlags) -> After<H::Body>
    where
        H: Serve,
        H::ReqBody: From<ReqBody>,
        <H::Body as Body>::Error: Display,
    {
        let asked = Asked::of(&head.parts.method, head.parts.version);
        let mut keep_alive = head.keep_alive;
        self.peeked = false;
        self.watch_from = None;
        let body = if head.body.is_done() {
            ReqBody::empty()
        } else {
            let Some(mut r) = self.reader.take() else {
                return After::Close;
            };
            let remaining = head.body.remaining();
            r.body = head.body;
            let home = self.home.get_or_insert_with(Default::default);
            home.lend(r);
            ReqBody::new(home.clone(), remaining, head.expect_continue)
        };
        let mut call = pin!(handler.call(Request::from_parts(head.parts, body.into())));
        let Some(resp) = poll_fn(|cx| self.wait(call.as_mut(), cx)).await else {
            debug!("client went away before the response");
            return After::Close;
        };
        if self.home.as_ref().is_some_and(|h| h.continue_asked()) {
            // The pipeline asked for the body before its answer came (by the poll that
            // asked: a backend answering before it reads): the client still waits for the
            // `100` to send the body the request goes on streaming, so it goes first.
            // Not asked by now, it is not sent: the answer came without the body.
            self.w.buf.extend_from_slice(CONTINUE);
        }

        let (parts, body) = resp.into_parts();
        self.reclaim();
        if parts.status == http::StatusCode::SWITCHING_PROTOCOLS && handler.switches(&body) {
            return self.switch(parts, body, asked).await;
        }
        if ctl.draining.load(Relaxed) || self.reader.as_ref().is_some_and(|r| r.broken) {
            keep_alive = false;
        }
        let length = if body.is_end_stream() {
            Length::None
        } else {
            match body.size_hint().exact() {
                Some(n) => Length::Known(n),
                None => Length::Unknown,
            }
        };
        let framing = respond::head(&mut self.w.buf, &parts, length, asked, &mut keep_alive);
        // The body is dropped as soon as it ends, before its last bytes
        // are written (as hyper did): the request is counted and logged,
        // and its upstream slot freed, by the time the client has it all.
        let mut body = (framing != Framing::Nothing).then_some(body);
        let mut sent = 0;
        if !poll_fn(|cx| self.send_body(&mut body, framing, &mut sent, cx)).await {
            return After::Close;
        }
        if poll_fn(|cx| self.w.poll_flush(cx)).await.is_err() || !keep_alive {
            return After::Close;
        }
        self.reclaim();
        let keep = match self.reader.as_mut() {
            Some(r) if r.broken => false,
            Some(r) if !r.body.is_done() => poll_fn(|cx| drain(r, cx)).await,
            Some(_) => true,
            // The body outlived its response somewhere: nothing to read with.
            None => false,
        };
        match keep {
            true => After::Next,
            false => After::Close,
        }
    }

    /// Writes the `101` head; the connection then belongs to the new
    /// protocol. It cannot switch while a request body still reads from
    /// the stream (the pipeline only asks for upgrades without one).
    async fn switch<B>(&mut self, parts: http::response::Parts, body: B, asked: Asked) -> After<B> {
        if !self
            .reader
            .as_ref()
            .is_some_and(|r| r.body.is_done() && !r.broken)
        {
            debug!("no switch with a request body unread");
            return After::Close;
        }
        // Kept alive as far as the head says: no `Connection: close` beside
        // the backend's `Connection: upgrade`.
        let mut keep_alive = true;
        respond::head(
            &mut self.w.buf,
            &parts,
            Length::None,
            asked,
            &mut keep_alive,
        );
        match poll_fn(|cx| self.w.poll_flush(cx)).await {
            Ok(()) => After::Switch(body),
            Err(_) => After::Close,
        }
    }

    /// Takes the reader back once no body reads from it.
    fn reclaim(&mut self) {
        if self.reader.is_none() {
            self.reader = self.home.as_ref().and_then(|h| h.take());
        }
    }

    /// Flushes what weir has for the client while a request may still be coming. Bytes
    /// sent while a body still reads the request (the reader lent: a `100 Continue`, an
    /// answer going out as the body still comes) have the kernel hold its ACKs back again,
    /// so the body's next wait acknowledges what came at once anew (`transport/acks.rs`).
    fn flush_during_request(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.reader.is_none() && !self.w.is_empty() {
            if let Some(home) = &self.home {
                home.rearm_ack();
            }
        }
        self.w.poll_flush(cx)
    }

    /// Polls the handler; meanwhile answers `100 Continue` and watches the
    /// client. `None`: the client left.
    fn wait<F: Future>(
        &mut self,
        call: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<F::Output>> {
        if let Poll::Ready(resp) = call.poll(cx) {
            return Poll::Ready(Some(resp));
        }
        if self.home.as_ref().is_some_and(|h| h.continue_asked()) {
            self.w.buf.extend_from_slice(CONTINUE);
        }
        if !self.w.is_empty() {
            if let Poll::Ready(Err(_)) = self.flush_during_request(cx) {
                return Poll::Ready(None);
            }
        }
        if self.client_gone(cx) {
            return Poll::Ready(None);
        }
        Poll::Pending
    }

    /// Whether the client closed the connection while a request is in
    /// flight. Only looks when the reader is here and nothing is buffered.
    fn client_gone(&mut self, cx: &mut Context<'_>) -> bool {
        if self.peeked {
            return false;
        }
        self.reclaim();
        let Some(r) = self.reader.as_mut() else {
            return false;
        };
        if !r.buf.is_empty() {
            return false;
        }
        if !r.registered() {
            // Watching needs the socket in epoll: an epoll_ctl to add it and
            // one to remove it, ~5 % of a `Connection: close` request's CPU,
            // for a watch that finds nothing when the answer comes first,
            // as it mostly does. So a connection whose socket never had to
            // wait starts watching only WATCH_DELAY into its request.
            let t = self
                .watch_from
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(WATCH_DELAY)));
            if t.as_mut().poll(cx).is_pending() {
                return false;
            }
        }
        match r.poll_gone(cx) {
            Poll::Ready(true) => true,
            Poll::Ready(false) => {
                self.peeked = true;
                false
            }
            Poll::Pending => false,
        }
    }

    /// Moves the response body to the client; `Ready(false)` when the
    /// connection must close without finishing it.
    fn send_body<B>(
        &mut self,
        body: &mut Option<B>,
        framing: Framing,
        sent: &mut u64,
        cx: &mut Context<'_>,
    ) -> Poll<bool>
    where
        B: Body<Data = Bytes> + Unpin,
        B::Error: Display,
    {
        loop {
            let mut body_pending = false;
            while self.w.has_room() {
                let Some(b) = body.as_mut() else { break };
                match Pin::new(b).poll_frame(cx) {
                    Poll::Pending => {
                        body_pending = true;
                        break;
                    }
                    Poll::Ready(None) => {
                        if let Framing::Length(n) = framing {
                            if *sent != n {
                                debug!("response body ended {sent} bytes into {n}");
                                return Poll::Ready(false);
                            }
                        }
                        self.w.end(framing);
                        *body = None;
                    }
                    Poll::Ready(Some(Ok(frame))) => {
                        // Trailers are dropped, as hyper did without `TE: trailers`.
                        let Ok(data) = frame.into_data() else {
                            continue;
                        };
                        *sent += data.len() as u64;
                        if matches!(framing, Framing::Length(n) if *sent > n) {
                            debug!("response body longer than its Content-Length");
                            return Poll::Ready(false);
                        }
                        self.w.data(framing, data);
                    }
                    Poll::Ready(Some(Err(e))) => {
                        debug!("response body failed: {e}");
                        return Poll::Ready(false);
                    }
                }
            }
            match self.flush_during_request(cx) {
                Poll::Ready(Err(_)) => return Poll::Ready(false),
                Poll::Ready(Ok(())) if body.is_none() => return Poll::Ready(true),
                Poll::Ready(Ok(())) if !body_pending => continue,
                _ => {}
            }
            if self.client_gone(cx) {
                return Poll::Ready(false);
            }
            return Poll::Pending;
        }
    }
}

/// Reads and drops what is left of a request body, as far as it is already
/// here (hyper did the same); `Ready(false)` if it is not all here.
fn drain(r: &mut Reader, cx: &mut Context<'_>) -> Poll<bool> {
    let mut drained = 0;
    loop {
        match r.body.decode(&mut r.buf) {
            Ok(Some(data)) => {
                drained += data.len();
                continue;
            }
            Ok(None) if r.body.is_done() => return Poll::Ready(true),
            Ok(None) => {}
            Err(_) => return Poll::Ready(false),
        }
        if drained > DRAIN_LIMIT {
            return Poll::Ready(false);
        }
        match r.poll_fill(cx) {
            Poll::Ready(Ok(n)) if n > 0 => {}
            _ => return Poll::Ready(false),
        }
    }
}
