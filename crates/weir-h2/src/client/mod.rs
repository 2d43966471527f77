//! The client side of one HTTP/2 connection, sans I/O: requests go in as calls
//! ([`H2ClientConnection::send_request`], [`H2ClientConnection::send_data`], ...),
//! everything to write collects in one buffer ([`H2ClientConnection::output`]), and bytes
//! read from the server come out as [`Event`]s (a response head, its body's DATA, its
//! trailers, a reset, GOAWAY). The caller writes once for as many streams' frames as are
//! ready, as on the server side.
//!
//! Here: the preface and SETTINGS (push disabled), stream states (RFC 9113 §5.1), field
//! blocks with their CONTINUATION frames and HPACK, response heads checked (§8.3.2;
//! informational ones skipped), content-length against DATA, both flow-control windows
//! each way, PING, GOAWAY (streams above its last id are reported unprocessed). Limits that
//! protect weir from a server: the header list size (the stream is reset), the size of a
//! block being gathered (CONTINUATION flood: GOAWAY), control frames queued while the
//! caller has not written (GOAWAY).

mod head;
mod stream;

use std::collections::VecDeque;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName};

use crate::block::Block;
use crate::flow::{self, Windows};
use crate::frame::{self, write, Frame, Settings, StreamId, StreamMap, DEFAULT_MAX_FRAME};
use crate::frame::{MAX_WINDOW, PREFACE};
use crate::hpack::{encode, Decoder};
use crate::Reason;
use head::Builder;
pub use head::ResponseHead;
use stream::Stream;

pub use crate::server::{ConnectionError, Flood};

/// What this client asks of its server.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a response whose fields decode to more is reset.
    pub max_header_list: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: what one response body may have in flight.
    pub stream_window: u32,
    /// The connection's receive window, shared by its streams.
    pub connection_window: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_header_list: 64 * 1024,
            stream_window: 65_535,
            connection_window: 65_535,
        }
    }
}

/// A request's pseudo-fields.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub method: &'a [u8],
    pub scheme: &'a [u8],
    pub authority: &'a [u8],
    pub path: &'a [u8],
}

/// What the server did, for the caller to act on.
#[derive(Debug)]
pub enum Event {
    /// A stream's final response head; `end_stream` when it has no body.
    Response {
        stream: StreamId,
        head: ResponseHead,
        end_stream: bool,
    },
    /// Part of a response's body. Give it back with [`H2ClientConnection::release`] once taken, so
    /// that the server may send more.
    Data {
        stream: StreamId,
        data: Bytes,
        end_stream: bool,
    },
    /// A response's trailers (its end).
    Trailers { stream: StreamId, fields: HeaderMap },
    /// The stream is gone: the server reset it (`by_server`), or it broke a rule and weir
    /// reset it. REFUSED_STREAM from the server means it did not process the request.
    Reset {
        stream: StreamId,
        code: Reason,
        by_server: bool,
    },
    /// The server's window for the stream (or, for stream 0, the connection's) grew: data
    /// that waited may go.
    Window { stream: StreamId },
    /// The server is going away: streams above `last_stream` were not processed (they are
    /// gone from the connection, each without an event of its own), and no stream may be
    /// opened on it again.
    GoAway { last_stream: StreamId, code: Reason },
}

/// Why a stream could not be opened; nothing was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("the connection is closed")]
    Closed,
    #[error("the server sent GOAWAY")]
    GoingAway,
    #[error("the server's concurrent stream limit is reached")]
    Full,
    #[error("the connection's stream ids are used up")]
    IdsExhausted,
}

/// Control frames (SETTINGS and PING answers) queued while the caller has not taken the
/// output: past this, a server sends them faster than weir writes the answers.
const MAX_CONTROL_QUEUED: usize = 10_000;
/// The highest stream id.
const MAX_ID: StreamId = (1 << 31) - 1;

pub struct H2ClientConnection {
    cfg: Config,
    settings_seen: bool,
    peer_max_frame: u32,
    peer_initial_window: u32,
    peer_max_streams: u32,
    hpack: Decoder,
    streams: StreamMap<Stream>,
    next_id: StreamId,
    block: Option<Block<()>>,
    /// The connection's windows.
    flow: Windows,
    out: Vec<u8>,
    scratch: Vec<u8>,
    events: VecDeque<Event>,
    goaway_received: bool,
    closed: bool,
    control_queued: usize,
}

impl H2ClientConnection {
    /// A connection whose preface, SETTINGS and connection window are in the output.
    pub fn new(mut cfg: Config) -> H2ClientConnection {
        cfg.stream_window = cfg.stream_window.clamp(65_535, MAX_WINDOW);
        cfg.connection_window = cfg.connection_window.clamp(65_535, MAX_WINDOW);
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(PREFACE);
        let settings = Settings {
            enable_push: Some(false),
            initial_window_size: Some(cfg.stream_window),
            max_header_list_size: Some(cfg.max_header_list),
            ..Settings::default()
        };
        write::settings(&mut out, &settings.pairs());
        if cfg.connection_window > 65_535 {
            write::window_update(&mut out, 0, cfg.connection_window - 65_535);
        }
        H2ClientConnection {
            cfg,
            settings_seen: false,
            peer_max_frame: DEFAULT_MAX_FRAME,
            peer_initial_window: 65_535,
            peer_max_streams: u32::MAX,
            hpack: Decoder::new(4096),
            streams: StreamMap::default(),
            next_id: 1,
            block: None,
            flow: Windows::new(65_535, cfg.connection_window),
            out,
            scratch: Vec::new(),
            events: VecDeque::new(),
            goaway_received: false,
            closed: false,
            control_queued: 0,
        }
    }

    /// Reads every whole frame in `buf` (what is left is the start of the next one).
    pub fn recv(&mut self, buf: &mut BytesMut) -> Result<(), ConnectionError> {
        if self.closed {
            buf.clear();
            return Ok(());
        }
        self.frames_in(buf)
    }

    /// The next thing the server did.
    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// What to write to the server. The caller writes it and clears it.
    pub fn output(&mut self) -> &mut Vec<u8> {
        self.control_queued = 0;
        &mut self.out
    }

    /// How many bytes wait to be written.
    pub fn output_len(&self) -> usize {
        self.out.len()
    }

    /// Whether a connection error ended the connection (its GOAWAY is in the output).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Whether the server said it is going away.
    pub fn is_going_away(&self) -> bool {
        self.goaway_received
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unbounded until it says).
    pub fn peer_max_streams(&self) -> u32 {
        self.peer_max_streams
    }

    /// Streams open (not yet closed both ways nor reset).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Whether a stream's response has begun (its head came) and is still coming.
    pub fn awaits_rest(&self) -> bool {
        self.streams
            .values()
            .any(|s| s.head.is_some() && !s.recv_closed)
    }

    /// Whether a stream waits for its response head.
    pub fn awaits_head(&self) -> bool {
        self.streams
            .values()
            .any(|s| s.head.is_none() && !s.recv_closed)
    }

    /// The id of the last stream opened (0 before the first).
    pub fn last_opened(&self) -> StreamId {
        self.next_id.saturating_sub(2)
    }

    /// Opens a stream with a request head. The HTTP/1 fields that describe a connection
    /// (RFC 9113 §8.2.2) and `host` (said by `:authority`) are left out of `headers`, as is
    /// `te` unless it is `trailers`. `extra`: fields (lower-case names, valid values) sent
    /// after `headers`' own, as they are.
    pub fn send_request<'n, 'v>(
        &mut self,
        target: Target<'_>,
        headers: &HeaderMap,
        extra: impl IntoIterator<Item = (&'n str, &'v [u8])>,
        end_stream: bool,
    ) -> Result<StreamId, OpenError> {
        if self.closed {
            return Err(OpenError::Closed);
        }
        if self.goaway_received {
            return Err(OpenError::GoingAway);
        }
        if self.streams.len() >= self.peer_max_streams as usize {
            return Err(OpenError::Full);
        }
        if self.next_id > MAX_ID {
            return Err(OpenError::IdsExhausted);
        }
        let id = self.next_id;
        self.next_id += 2;
        self.scratch.clear();
        let b = &mut self.scratch;
        encode::field(b, b":method", target.method, false);
        encode::field(b, b":scheme", target.scheme, false);
        encode::field(b, b":authority", target.authority, false);
        encode::field(b, b":path", target.path, false);
        for (name, value) in headers {
            if !forbidden(name, value.as_bytes()) {
                encode::field(
                    b,
                    name.as_str().as_bytes(),
                    value.as_bytes(),
                    value.is_sensitive(),
                );
            }
        }
        for (name, value) in extra {
            encode::field(b, name.as_bytes(), value, false);
        }
        write::headers(&mut self.out, id, b, end_stream, self.peer_max_frame);
        let mut s = Stream::new(self.peer_initial_window, self.cfg.stream_window);
        s.send_closed = end_stream;
        s.head_request = target.method == b"HEAD";
        self.streams.insert(id, s);
        Ok(id)
    }

    /// Sends what the windows allow of `data` (the rest waits for an [`Event::Window`]);
    /// END_STREAM goes with its last byte when `end_stream`. How many bytes went.
    pub fn send_data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) -> usize {
        let Some(s) = self.streams.get_mut(&stream) else {
            return 0;
        };
        if s.send_closed {
            return 0;
        }
        let sent = flow::send_data(
            &mut self.out,
            &mut self.flow,
            &mut s.flow,
            stream,
            data,
            end_stream,
            self.peer_max_frame,
        );
        if end_stream && sent == data.len() {
            self.end_sent(stream);
        }
        sent
    }

    /// A request's trailers, ending the stream.
    pub fn send_trailers(&mut self, stream: StreamId, trailers: &HeaderMap) -> bool {
        match self.streams.get(&stream) {
            Some(s) if !s.send_closed => {}
            _ => return false,
        }
        self.scratch.clear();
        for (name, value) in trailers {
            if !forbidden(name, value.as_bytes()) {
                encode::field(
                    &mut self.scratch,
                    name.as_str().as_bytes(),
                    value.as_bytes(),
                    value.is_sensitive(),
                );
            }
        }
        write::headers(
            &mut self.out,
            stream,
            &self.scratch,
            true,
            self.peer_max_frame,
        );
        self.end_sent(stream);
        true
    }

    /// Whether the stream is open for sending (not reset, not ended).
    pub fn is_sending(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|s| !s.send_closed)
    }

    /// How much DATA the stream may send now.
    pub fn window(&self, stream: StreamId) -> usize {
        let s = self.streams.get(&stream).map_or(0, |s| s.flow.send);
        s.min(self.flow.send).max(0) as usize
    }

    /// Resets a stream (weir gives up on it: the client went away, the request body broke
    /// off, the response ended while the request still had a body to send).
    pub fn reset(&mut self, stream: StreamId, code: Reason) {
        if self.streams.remove(&stream).is_some() {
            write::rst_stream(&mut self.out, stream, code);
        }
    }

    /// `n` bytes of the stream's response body were taken: the server may send as many
    /// more (given back in WINDOW_UPDATEs once half a window has been taken).
    pub fn release(&mut self, stream: StreamId, n: usize) {
        let n = n as u32;
        self.release_connection(n);
        if let Some(s) = self.streams.get_mut(&stream) {
            let open = !s.recv_closed;
            s.flow
                .release(&mut self.out, stream, n, self.cfg.stream_window, open);
        }
    }

    /// Sends a PING: the server answers it as soon as it reads it, so a connection that
    /// stays silent after one is no longer being served (its host or process hung, or
    /// the path to it silently dropped).
    pub fn ping(&mut self, payload: [u8; 8]) {
        if !self.closed {
            write::ping(&mut self.out, false, payload);
        }
    }

    /// Sends GOAWAY: weir opens no more streams on this connection and is closing it.
    pub fn go_away(&mut self, code: Reason) {
        if !self.closed {
            self.closed = true;
            write::goaway(&mut self.out, 0, code, b"");
        }
    }

    fn release_connection(&mut self, n: u32) {
        self.flow
            .release(&mut self.out, 0, n, self.cfg.connection_window, true);
    }

    fn fail(&mut self, reason: Reason, why: &'static str) -> ConnectionError {
        if !self.closed {
            self.closed = true;
            write::goaway(&mut self.out, 0, reason, why.as_bytes());
        }
        ConnectionError {
            reason,
            why,
            flood: None,
        }
    }

    fn flooded(&mut self, flood: Flood, why: &'static str) -> ConnectionError {
        ConnectionError {
            flood: Some(flood),
            ..self.fail(Reason::ENHANCE_YOUR_CALM, why)
        }
    }

    /// A stream error: RST_STREAM, and the stream's request failed if it had one.
    fn stream_error(&mut self, stream: StreamId, code: Reason) {
        self.control_queued += 1;
        write::rst_stream(&mut self.out, stream, code);
        if self.streams.remove(&stream).is_some() {
            self.events.push_back(Event::Reset {
                stream,
                code,
                by_server: false,
            });
        }
    }

    fn end_sent(&mut self, stream: StreamId) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.send_closed = true;
            if s.done() {
                self.streams.remove(&stream);
            }
        }
    }

    fn end_received(&mut self, stream: StreamId) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.recv_closed = true;
            if s.done() {
                self.streams.remove(&stream);
            }
        }
    }

    /// A stream id this client never opened: even (the server's, which push would need),
    /// or not yet used.
    fn idle(&self, stream: StreamId) -> bool {
        stream.is_multiple_of(2) || stream >= self.next_id
    }

    fn headers(
        &mut self,
        stream: StreamId,
        block: &[u8],
        end_stream: bool,
        end_headers: bool,
    ) -> Result<(), ConnectionError> {
        if self.idle(stream) {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "HEADERS on an idle stream"));
        }
        let mut b = Block {
            stream,
            bytes: Vec::new(),
            end_stream,
            kind: (),
        };
        // A whole block is decoded where it lies; only one that CONTINUATION frames finish
        // is gathered.
        if end_headers {
            self.block_done(b, block)
        } else {
            b.bytes = block.to_vec();
            self.block = Some(b);
            Ok(())
        }
    }

    crate::dispatch::frames!(
        preface: "the server's preface is not SETTINGS",
        push: "PUSH_PROMISE, push disabled"
    );

    fn go_away_received(&mut self, last_stream: StreamId, code: Reason) {
        self.goaway_received = true;
        self.streams.retain(|id, _| *id <= last_stream);
        self.events.push_back(Event::GoAway { last_stream, code });
    }

    fn reset_received(&mut self, stream: StreamId, code: Reason) {
        self.events.push_back(Event::Reset {
            stream,
            code,
            by_server: true,
        });
    }

    fn flooding(&self) -> Option<(Flood, &'static str)> {
        (self.control_queued > MAX_CONTROL_QUEUED).then_some((
            Flood::ControlFrames,
            "control frames sent faster than their answers are written",
        ))
    }

    fn peer_settings(&mut self, s: &Settings) {
        if let Some(m) = s.max_concurrent_streams {
            self.peer_max_streams = m;
        }
    }

    fn block_done(&mut self, b: Block<()>, bytes: &[u8]) -> Result<(), ConnectionError> {
        let stream = b.stream;
        // A stream weir reset or that ended: its block is decoded for the table's sake
        // and dropped.
        let (trailers, recv_closed) = match self.streams.get(&stream) {
            Some(s) => (s.head.is_some(), s.recv_closed),
            None => (false, true),
        };
        // Room for the fields a response usually has; trailers have one or two (the map is
        // made per message, and its size is what is allocated: 16 is 2.7 KB).
        let mut fields = Builder::new(if trailers { 4 } else { 12 });
        let mut list = 0usize;
        let max = self.cfg.max_header_list as usize;
        // Fields past the list size are decoded (the table must follow the block) but not
        // kept: an HPACK bomb must not grow weir's memory.
        let decoded = self.hpack.decode_cached(bytes, |n, v, sensitive, cached| {
            list += n.len() + v.len() + 32;
            if list <= max {
                fields.field(n, v, sensitive, trailers, cached);
            }
        });
        if decoded.is_err() {
            return Err(self.fail(
                Reason::COMPRESSION_ERROR,
                "a header block that does not decode",
            ));
        }
        if !self.streams.contains_key(&stream) {
            return Ok(());
        }
        if recv_closed {
            self.stream_error(stream, Reason::STREAM_CLOSED);
            return Ok(());
        }
        if list > max {
            self.stream_error(stream, Reason::PROTOCOL_ERROR);
            return Ok(());
        }
        if trailers {
            let fields = match fields.trailers() {
                Ok(f) if b.end_stream => f,
                // A second head, or malformed trailers.
                _ => {
                    self.stream_error(stream, Reason::PROTOCOL_ERROR);
                    return Ok(());
                }
            };
            let s = &self.streams[&stream];
            if s.head.flatten().is_some_and(|n| n != s.received) {
                self.stream_error(stream, Reason::PROTOCOL_ERROR);
                return Ok(());
            }
            self.events.push_back(Event::Trailers { stream, fields });
            self.end_received(stream);
            return Ok(());
        }
        let head = match fields.response() {
            Ok(h) => h,
            Err(_) => {
                self.stream_error(stream, Reason::PROTOCOL_ERROR);
                return Ok(());
            }
        };
        if head.status.is_informational() {
            // 101 has no place in HTTP/2 (§8.6); others (100, 103) are not passed on, and
            // may not end the stream.
            if head.status.as_u16() == 101 || b.end_stream {
                self.stream_error(stream, Reason::PROTOCOL_ERROR);
            }
            return Ok(());
        }
        // A response with no content (to HEAD, or 204 and 304) may still say the length
        // the content would have had (RFC 9113 §8.1.1); only DATA is held to none.
        let no_content = self.streams.get(&stream).is_some_and(|s| s.head_request)
            || matches!(head.status.as_u16(), 204 | 304);
        let length = match no_content {
            true => Some(0),
            false => head.content_length,
        };
        if b.end_stream && length.is_some_and(|n| n != 0) {
            self.stream_error(stream, Reason::PROTOCOL_ERROR);
            return Ok(());
        }
        if let Some(s) = self.streams.get_mut(&stream) {
            s.head = Some(length);
        }
        self.events.push_back(Event::Response {
            stream,
            head,
            end_stream: b.end_stream,
        });
        if b.end_stream {
            self.end_received(stream);
        }
        Ok(())
    }

    fn data(
        &mut self,
        stream: StreamId,
        data: Bytes,
        end_stream: bool,
        flow_len: u32,
    ) -> Result<(), ConnectionError> {
        if !self.flow.take(flow_len) {
            return Err(self.fail(
                Reason::FLOW_CONTROL_ERROR,
                "DATA past the connection window",
            ));
        }
        if self.idle(stream) {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "DATA on an idle stream"));
        }
        let padding = flow_len - data.len() as u32;
        let Some(s) = self.streams.get_mut(&stream) else {
            // A stream weir reset (frames in flight may still come) or that ended: its
            // bytes are given back to the connection.
            self.release_connection(flow_len);
            return Ok(());
        };
        let Some(length) = s.head else {
            self.release_connection(flow_len);
            self.stream_error(stream, Reason::PROTOCOL_ERROR);
            return Ok(());
        };
        if s.recv_closed {
            self.release_connection(flow_len);
            self.stream_error(stream, Reason::STREAM_CLOSED);
            return Ok(());
        }
        let overrun = !s.flow.take(flow_len);
        s.received += data.len() as u64;
        let over = length.is_some_and(|n| s.received > n || (end_stream && s.received != n));
        if overrun || over {
            let code = if over {
                Reason::PROTOCOL_ERROR
            } else {
                Reason::FLOW_CONTROL_ERROR
            };
            self.release_connection(flow_len);
            self.stream_error(stream, code);
            return Ok(());
        }
        if padding > 0 {
            self.release(stream, padding as usize);
        }
        self.events.push_back(Event::Data {
            stream,
            data,
            end_stream,
        });
        if end_stream {
            self.end_received(stream);
        }
        Ok(())
    }
}

/// A field HTTP/2 does not carry (RFC 9113 §8.2.2), or `host`, which `:authority` says.
fn forbidden(name: &HeaderName, value: &[u8]) -> bool {
    // One match on the (lower-case) name: a length switch and a compare, for every field of
    // every request.
    match name.as_str() {
        "host" | "connection" | "transfer-encoding" | "upgrade" | "keep-alive"
        | "proxy-connection" => true,
        "te" => value != b"trailers",
        _ => false,
    }
}

#[cfg(test)]
mod tests;
