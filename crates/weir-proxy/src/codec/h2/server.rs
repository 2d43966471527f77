//! HTTP/2 server side: one client connection's streams, each a request through the
//! handler (the proxy pipeline, the same as HTTP/1.1's), all in the connection's one task.
//!
//! `h2` enforces the limits set here (concurrent streams, header list size, windows) and
//! defends against rapid reset (streams reset before weir accepted them are bounded,
//! CVE-2023-44487) and CONTINUATION floods (CVE-2024-27316). A drain sends GOAWAY with the
//! last stream id; streams in flight finish. A stream the client resets while its request
//! is in flight cancels the request, as a client closing an HTTP/1 connection does. An
//! idle connection gets GOAWAY before its close. A WebSocket extended CONNECT (RFC 8441)
//! goes through the handler as an HTTP/1.1 upgrade (`websocket.rs`) and, once switched,
//! its stream is the tunnel the handler relays (`tunnel.rs`).

use std::fmt::Display;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::Ordering::Relaxed;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::server::SendResponse;
use h2::SendStream;
use http::{header, HeaderMap, Request, Response, StatusCode, Version};
use http_body::Body;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::body::StreamBody;
use super::io::Joined;
use super::tunnel::Tunnel;
use super::websocket;
use crate::codec::h1::server::DrainFlags;

/// The proxy as this server sees it.
pub trait Handler: Sync {
    /// A stream's body, or none (`Default`) for an extended CONNECT, whose stream is
    /// the tunnel.
    type ReqBody: From<StreamBody> + Default;
    type Body: Body<Data = Bytes> + Unpin + Send;
    fn call(
        &self,
        req: Request<Self::ReqBody>,
    ) -> impl Future<Output = Response<Self::Body>> + Send + '_;

    /// A stream opened (for the client timeouts: the connection is not idle).
    #[inline]
    fn stream_opened(&self) {}

    /// The connection was closed with GOAWAY for abusing the protocol.
    fn abuse(&self, _why: Abuse) {}

    /// Whether `body` is a `101`'s, holding an upstream connection that switched
    /// protocols (for an extended CONNECT made into an HTTP/1.1 upgrade).
    fn is_switched(&self, _body: &Self::Body) -> bool {
        false
    }

    /// Relays the tunnel of an extended CONNECT whose upgrade `body` carries, until
    /// either side ends it.
    fn tunnel(&self, _body: Self::Body, _io: Tunnel) -> impl Future<Output = ()> + Send + '_ {
        async {}
    }
}

/// Why a client was sent GOAWAY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abuse {
    /// It reset more than [`MAX_RESETS_PER_SEC`] of its own streams within a second
    /// (rapid reset, CVE-2023-44487: each reset stream cost weir a request upstream).
    RapidReset,
}

/// What the server allows a client.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Streams open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    pub max_streams: u32,
    /// Decoded size of one request's header list (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_list: u32,
    /// A response whose stream gets no flow-control window for this long is reset: a
    /// client that stops reading (a zero window) must not hold its request's upstream
    /// connection and endpoint slot for ever.
    pub stall: Duration,
}

/// Per stream receive window: what one upload may have in flight to weir before the
/// pipeline takes it.
const STREAM_WINDOW: u32 = 256 * 1024;
/// The connection's receive window, shared by its streams.
const CONNECTION_WINDOW: u32 = 1024 * 1024;
/// Streams reset by the client before weir accepted them, kept at most: beyond, the
/// connection is closed with GOAWAY (rapid reset).
const MAX_PENDING_RESETS: usize = 20;
/// Streams the client may reset (after weir accepted them) per second before it is sent
/// GOAWAY (ENHANCE_YOUR_CALM): far above what cancelling clients do (a browser leaving a
/// page resets a few dozen), far below an attack's thousands.
pub const MAX_RESETS_PER_SEC: u32 = 200;
/// Streams weir resets because the client misbehaved, per connection, before it gives up
/// on the client (h2's own defence against a peer provoking resets).
const MAX_ERROR_RESETS: usize = 1024;

/// Serves the connection until the client closes it, an error ends it, or a drain's GOAWAY
/// has let every stream finish.
///
/// `idle` is cancelled when the connection has been idle too long: GOAWAY (NO_ERROR, the
/// last stream id) goes out before the close, so a client whose new stream crossed it
/// knows the stream was not processed and may send it again.
pub async fn run<H: Handler>(
    io: Joined,
    handler: &H,
    ctl: &DrainFlags,
    drain: &CancellationToken,
    idle: &CancellationToken,
    limits: Limits,
) where
    <H::Body as Body>::Error: Display,
{
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(limits.max_streams)
        .max_header_list_size(limits.max_header_list)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_pending_accept_reset_streams(MAX_PENDING_RESETS)
        .max_local_error_reset_streams(Some(MAX_ERROR_RESETS))
        // WebSocket over HTTP/2 (RFC 8441): SETTINGS_ENABLE_CONNECT_PROTOCOL.
        .enable_connect_protocol();
    let mut conn = match builder.handshake::<_, Bytes>(io).await {
        Ok(c) => c,
        Err(e) => {
            debug!("HTTP/2 handshake failed: {e}");
            return;
        }
    };
    let mut streams = FuturesUnordered::new();
    let mut draining = false;
    let mut closing = false;
    let mut resets = Resets::default();
    loop {
        // Streams first: every stream that can finish queues its frames before the
        // connection is polled again, so one write carries many streams' answers (polled
        // the other way round, h2 wrote and flushed after each one).
        tokio::select! {
            biased;
            Some(end) = streams.next(), if !streams.is_empty() => {
                if end == End::Reset && resets.add() {
                    debug!("HTTP/2: rapid reset, sending GOAWAY");
                    handler.abuse(Abuse::RapidReset);
                    conn.abrupt_shutdown(h2::Reason::ENHANCE_YOUR_CALM);
                }
            }
            accepted = conn.accept() => match accepted {
                Some(Ok((req, respond))) => {
                    handler.stream_opened();
                    streams.push(stream(handler, req, respond, limits.stall));
                }
                Some(Err(e)) => {
                    // h2 has answered it (RST_STREAM or GOAWAY); a connection error ends
                    // the connection at the next accept.
                    debug!("HTTP/2: {e}");
                    // h2's own rapid-reset defence: streams reset before weir accepted
                    // them, beyond MAX_PENDING_RESETS.
                    if e.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) && !e.is_remote() {
                        handler.abuse(Abuse::RapidReset);
                    }
                    if e.is_io() || e.is_go_away() {
                        break;
                    }
                }
                None => break,
            },
            _ = drain.cancelled(), if !draining => {
                conn.graceful_shutdown();
                draining = true;
            }
            _ = idle.cancelled(), if !closing => {
                conn.abrupt_shutdown(h2::Reason::NO_ERROR);
                closing = true;
            }
        }
        ctl.busy.store(!streams.is_empty(), Relaxed);
    }
    // The connection is done; a stream still here could only fail to send.
    drop(streams);
    ctl.busy.store(false, Relaxed);
}

/// Client resets in the current one-second window.
#[derive(Default)]
struct Resets {
    since: Option<std::time::Instant>,
    count: u32,
}

impl Resets {
    /// One more; whether the client is now over the bound.
    fn add(&mut self) -> bool {
        let now = std::time::Instant::now();
        match self.since {
            Some(t) if now.duration_since(t) < std::time::Duration::from_secs(1) => {}
            _ => {
                self.since = Some(now);
                self.count = 0;
            }
        }
        self.count += 1;
        self.count > MAX_RESETS_PER_SEC
    }
}

/// How a stream ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Done,
    /// The client reset it before its response was complete.
    Reset,
}

/// One stream: the request through the handler, then its response.
async fn stream<H: Handler>(
    handler: &H,
    req: Request<h2::RecvStream>,
    mut respond: SendResponse<Bytes>,
    stall: Duration,
) -> End
where
    <H::Body as Body>::Error: Display,
{
    let (mut parts, recv) = req.into_parts();
    // A WebSocket's extended CONNECT goes through the pipeline as the HTTP/1.1 upgrade
    // it stands for; its stream is kept for the tunnel.
    let (req, tunnel) = match websocket::as_upgrade(&mut parts) {
        true => (
            Request::from_parts(parts, H::ReqBody::default()),
            Some(recv),
        ),
        false => {
            let length = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok());
            let body = StreamBody::new(recv, length).into();
            (Request::from_parts(parts, body), None)
        }
    };
    let resp = {
        let mut call = pin!(handler.call(req));
        poll_fn(|cx| {
            if let Poll::Ready(r) = call.as_mut().poll(cx) {
                return Poll::Ready(Some(r));
            }
            // RST_STREAM from the client: the request is cancelled with the future.
            match respond.poll_reset(cx) {
                Poll::Ready(_) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    };
    let Some(resp) = resp else {
        debug!("HTTP/2 stream reset by the client before its response");
        return End::Reset;
    };
    if let Some(recv) = tunnel {
        if resp.status() == StatusCode::SWITCHING_PROTOCOLS && handler.is_switched(resp.body()) {
            let (head, body) = resp.into_parts();
            let send = match respond.send_response(websocket::accepted(&head.headers), false) {
                Ok(s) => s,
                Err(e) => {
                    debug!("HTTP/2 tunnel not opened: {e}");
                    return End::Reset;
                }
            };
            handler.tunnel(body, Tunnel::new(recv, send)).await;
            return End::Done;
        }
    }
    let (mut head, mut body) = resp.into_parts();
    head.version = Version::HTTP_2;
    strip_connection_fields(&mut head.headers);
    let end = body.is_end_stream();
    let mut send = match respond.send_response(Response::from_parts(head, ()), end) {
        Ok(s) => s,
        Err(e) => {
            debug!("HTTP/2 response not sent: {e}");
            return End::Reset;
        }
    };
    if end {
        return End::Done;
    }
    loop {
        match poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await {
            Some(Ok(frame)) => match frame.into_data() {
                // The body's last DATA frame carries END_STREAM when the body knows it is
                // done (a Content-Length met): no empty frame after it.
                Ok(data) => match send_data(&mut send, data, stall, body.is_end_stream()).await {
                    Ok(true) => return End::Done,
                    Ok(false) => {}
                    Err(Unsent::Stalled) => {
                        debug!("HTTP/2 stream stalled (no window for {stall:?}): reset");
                        send.send_reset(h2::Reason::CANCEL);
                        return End::Done;
                    }
                    Err(Unsent::Gone) => return End::Reset,
                },
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        let _ = send.send_trailers(trailers);
                        return End::Done;
                    }
                }
            },
            Some(Err(e)) => {
                // The upstream's body broke off: the client must not take what it got
                // for the whole (HTTP/1 closes the connection; here, only this stream).
                debug!("HTTP/2 response body cut: {e}");
                send.send_reset(h2::Reason::INTERNAL_ERROR);
                return End::Done;
            }
            None => {
                let _ = send.send_data(Bytes::new(), true);
                return End::Done;
            }
        }
    }
}

/// Why a response's data did not go out.
enum Unsent {
    /// The stream or connection is gone (reset by the client, connection closed).
    Gone,
    /// No window came within the stall time.
    Stalled,
}

/// Sends `data` as the stream's flow-control window allows, the last of it with
/// END_STREAM when `end`; whether the stream ended.
async fn send_data(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    stall: Duration,
    end: bool,
) -> Result<bool, Unsent> {
    if data.is_empty() {
        if end {
            send.send_data(data, true).map_err(|_| Unsent::Gone)?;
        }
        return Ok(end);
    }
    while !data.is_empty() {
        send.reserve_capacity(data.len());
        let granted = match tokio::time::timeout(stall, poll_fn(|cx| send.poll_capacity(cx))).await
        {
            Ok(Some(Ok(n))) => n,
            Ok(Some(Err(_)) | None) => return Err(Unsent::Gone),
            Err(_) => return Err(Unsent::Stalled),
        };
        if granted == 0 {
            continue;
        }
        let chunk = data.split_to(granted.min(data.len()));
        let last = end && data.is_empty();
        send.send_data(chunk, last).map_err(|_| Unsent::Gone)?;
    }
    Ok(end)
}

/// Fields that describe an HTTP/1 connection, which HTTP/2 forbids in a message
/// (RFC 9113 §8.2.2).
fn strip_connection_fields(h: &mut HeaderMap) {
    for name in [
        header::CONNECTION,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::TE,
    ] {
        h.remove(name);
    }
    h.remove("keep-alive");
    h.remove("proxy-connection");
}
