//! The server side of one HTTP/2 connection, sans I/O: bytes read from the client go in
//! ([`H2ServerConnection::recv`]) and come out as [`Event`]s (a request head, its body's DATA, its
//! trailers, a reset); answers go in as calls ([`H2ServerConnection::send_headers`],
//! [`H2ServerConnection::send_data`], ...) and everything to write collects in one buffer
//! ([`H2ServerConnection::output`]), so the caller writes once for as many frames and streams as
//! are ready.
//!
//! Here: the preface and SETTINGS, stream states and their rules (RFC 9113 §5.1), header
//! blocks with their CONTINUATION frames and HPACK, request heads checked (§8), both flow
//! control windows each way, PING, GOAWAY. Limits that protect weir: concurrent streams
//! (REFUSED_STREAM beyond), the header list size (431), the size of a block being gathered
//! (CONTINUATION flood, CVE-2024-27316: GOAWAY), and the control frames queued for a client
//! that sends SETTINGS or PING without reading the answers (GOAWAY), and the streams reset
//! for the client's own errors (GOAWAY past [`MAX_ERROR_RESETS`]). How often a client may
//! reset streams it opened (rapid reset) needs a clock and is the caller's: each reset is an
//! [`Event::Reset`].

mod head;
mod stream;

use std::collections::VecDeque;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, StatusCode};

use crate::flow::{self, Windows};
use crate::frame::{
    self, write, Frame, Settings, StreamId, StreamMap, DEFAULT_MAX_FRAME, MAX_WINDOW, PREFACE,
};
use crate::hpack::{encode, Decoder};
use crate::Reason;
use head::Builder;
pub use head::RequestHead;
use stream::Stream;

/// What this server allows its clients.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: a request whose fields decode to more is answered 431.
    pub max_header_list: u32,
    /// SETTINGS_INITIAL_WINDOW_SIZE: what one stream's body may have in flight; at least
    /// 65 535 (the default the client uses until it reads the SETTINGS).
    pub stream_window: u32,
    /// The connection's receive window, shared by its streams.
    pub connection_window: u32,
    /// SETTINGS_ENABLE_CONNECT_PROTOCOL (extended CONNECT, RFC 8441).
    pub connect_protocol: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            max_streams: 100,
            max_header_list: 64 * 1024,
            stream_window: 65_535,
            connection_window: 65_535,
            connect_protocol: false,
        }
    }
}

/// What the client did, for the caller to act on.
#[derive(Debug)]
pub enum Event {
    /// A new stream's request; `end_stream` when it has no body; `expect` when it has an
    /// `expect` field (what it asks is the server's to decide; said here, where the event
    /// has room, so that requests without one need no lookup to know it).
    Request {
        stream: StreamId,
        head: RequestHead,
        end_stream: bool,
        expect: bool,
    },
    /// Part of a request's body. Give it back with [`H2ServerConnection::release`] once taken, so
    /// that the client may send more.
    Data {
        stream: StreamId,
        data: Bytes,
        end_stream: bool,
    },
    /// A request's trailers (its end).
    Trailers { stream: StreamId, fields: HeaderMap },
    /// The stream is gone: the client reset it (`by_client`), or it broke a rule and weir
    /// reset it. Its request is to be cancelled.
    Reset {
        stream: StreamId,
        code: Reason,
        by_client: bool,
    },
    /// The client's window for the stream (or, for stream 0, the connection's) grew: data
    /// that waited may go.
    Window { stream: StreamId },
    /// The client is going away: it opens no more streams.
    GoAway { last_stream: StreamId, code: Reason },
}

/// A connection error: GOAWAY is in the output, and the connection is over once it is
/// written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("HTTP/2 connection error {reason}: {why}")]
pub struct ConnectionError {
    pub reason: Reason,
    pub why: &'static str,
    /// Set when the peer was cut off for flooding (ENHANCE_YOUR_CALM), to count it by kind.
    pub flood: Option<Flood>,
}

/// A flood a peer was sent GOAWAY for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// A header block growing far past the list size (CVE-2024-27316).
    Continuation,
    /// SETTINGS or PING sent faster than their answers are read.
    ControlFrames,
    /// More than [`MAX_ERROR_RESETS`] streams reset for the client's own errors.
    StreamErrors,
}

/// Closed streams remembered, to tell a frame on one of them (STREAM_CLOSED) from one on a
/// stream that never was (PROTOCOL_ERROR).
const RECENTLY_CLOSED: usize = 128;
/// Control frames (SETTINGS and PING answers, resets) queued while the caller has not taken
/// the output: past this, a client sends them faster than it reads the answers.
const MAX_CONTROL_QUEUED: usize = 10_000;
/// Streams reset for the client's own errors (malformed requests, windows overrun) on one
/// connection: past this, a client that provokes resets on purpose is sent GOAWAY.
const MAX_ERROR_RESETS: usize = 1024;

type Block = crate::block::Block<BlockKind>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Request,
    Trailers,
    /// Decoded (the HPACK state must follow it) but refused with this code.
    Refused(Reason),
    /// Decoded and ignored: a stream opened after weir's GOAWAY.
    Ignored,
}

pub struct H2ServerConnection {
    cfg: Config,
    preface_left: usize,
    settings_seen: bool,
    peer_max_frame: u32,
    peer_initial_window: u32,
    hpack: Decoder,
    streams: StreamMap<Stream>,
    last_stream: StreamId,
    recently_closed: VecDeque<StreamId>,
    /// Streams weir reset while the client could still send on them: what it sent before
    /// the reset reached it is ignored (RFC 9113 §5.1), not answered with a stream error.
    reset_sent: VecDeque<StreamId>,
    block: Option<Block>,
    /// The connection's windows.
    flow: Windows,
    out: Vec<u8>,
    scratch: Vec<u8>,
    events: VecDeque<Event>,
    goaway_sent: Option<StreamId>,
    closed: bool,
    control_queued: usize,
    error_resets: usize,
}

impl H2ServerConnection {
    /// A connection whose SETTINGS (and connection window) are already in the output.
    pub fn new(mut cfg: Config) -> H2ServerConnection {
        cfg.stream_window = cfg.stream_window.clamp(65_535, MAX_WINDOW);
        cfg.connection_window = cfg.connection_window.clamp(65_535, MAX_WINDOW);
        let mut out = Vec::with_capacity(4096);
        let settings = Settings {
            max_concurrent_streams: Some(cfg.max_streams),
            initial_window_size: Some(cfg.stream_window),
            max_header_list_size: Some(cfg.max_header_list),
            enable_connect_protocol: cfg.connect_protocol.then_some(true),
            ..Settings::default()
        };
        write::settings(&mut out, &settings.pairs());
        if cfg.connection_window > 65_535 {
            write::window_update(&mut out, 0, cfg.connection_window - 65_535);
        }
        H2ServerConnection {
            cfg,
            preface_left: PREFACE.len(),
            settings_seen: false,
            peer_max_frame: DEFAULT_MAX_FRAME,
            peer_initial_window: 65_535,
            hpack: Decoder::new(4096),
            streams: StreamMap::default(),
            last_stream: 0,
            recently_closed: VecDeque::new(),
            reset_sent: VecDeque::new(),
            block: None,
            flow: Windows::new(65_535, cfg.connection_window),
            out,
            scratch: Vec::new(),
            events: VecDeque::new(),
            goaway_sent: None,
            closed: false,
            control_queued: 0,
            error_resets: 0,
        }
    }

    /// Reads every whole frame in `buf` (what is left is the start of the next one).
    pub fn recv(&mut self, buf: &mut BytesMut) -> Result<(), ConnectionError> {
        if self.closed {
            buf.clear();
            return Ok(());
        }
        while self.preface_left > 0 {
            if buf.is_empty() {
                return Ok(());
            }
            let at = PREFACE.len() - self.preface_left;
            let n = self.preface_left.min(buf.len());
            if buf[..n] != PREFACE[at..at + n] {
                return Err(self.fail(Reason::PROTOCOL_ERROR, "not the HTTP/2 connection preface"));
            }
            buf.advance(n);
            self.preface_left -= n;
        }
        self.frames_in(buf)
    }

    /// The next thing the client did.
    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// What to write to the client. The caller writes it and clears it (which is when the
    /// control frames queued in it stop counting against the flood bound).
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

    /// Whether a stream's request is still coming (its client has not ended it).
    pub fn awaits_request(&self) -> bool {
        self.streams.values().any(|s| !s.recv_closed)
    }

    /// Whether no stream is open.
    pub fn is_idle(&self) -> bool {
        self.streams.is_empty() && self.block.is_none()
    }

    /// The highest stream id the client opened.
    pub fn last_stream(&self) -> StreamId {
        self.last_stream
    }

    /// Sends GOAWAY with the last stream id: streams opened up to it go on; later ones are
    /// ignored, and the client knows they were not processed.
    pub fn go_away(&mut self, code: Reason) {
        if self.goaway_sent.is_none() && !self.closed {
            self.goaway_sent = Some(self.last_stream);
            write::goaway(&mut self.out, self.last_stream, code, b"");
        }
    }

    /// A response head (an informational one leaves the stream waiting for the final).
    /// False when the stream is gone (the client reset it).
    pub fn send_headers(
        &mut self,
        stream: StreamId,
        status: StatusCode,
        headers: &HeaderMap,
        end_stream: bool,
    ) -> bool {
        let Some(s) = self.streams.get_mut(&stream) else {
            return false;
        };
        let informational = status.is_informational();
        if s.send_closed || s.answered || (informational && end_stream) {
            return false;
        }
        s.answered = !informational;
        self.scratch.clear();
        encode::status(&mut self.scratch, status.as_u16());
        fields(&mut self.scratch, headers);
        write::headers(
            &mut self.out,
            stream,
            &self.scratch,
            end_stream,
            self.peer_max_frame,
        );
        if end_stream {
            self.end_sent(stream);
        }
        true
    }

    /// Sends what the windows allow of `data` (the rest waits for an [`Event::Window`]);
    /// END_STREAM goes with its last byte when `end_stream`. How many bytes went.
    pub fn send_data(&mut self, stream: StreamId, data: &[u8], end_stream: bool) -> usize {
        let Some(s) = self.streams.get_mut(&stream) else {
            return 0;
        };
        if s.send_closed || !s.answered {
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

    /// Whether the stream is open for sending (not reset, not ended by weir).
    pub fn is_sending(&self, stream: StreamId) -> bool {
        self.streams.get(&stream).is_some_and(|s| !s.send_closed)
    }

    /// How much DATA the stream may send now.
    pub fn window(&self, stream: StreamId) -> usize {
        let s = self.streams.get(&stream).map_or(0, |s| s.flow.send);
        s.min(self.flow.send).max(0) as usize
    }

    /// A response's trailers, ending the stream.
    pub fn send_trailers(&mut self, stream: StreamId, trailers: &HeaderMap) -> bool {
        match self.streams.get(&stream) {
            Some(s) if s.answered && !s.send_closed => {}
            _ => return false,
        }
        self.scratch.clear();
        fields(&mut self.scratch, trailers);
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

    /// Resets a stream (weir gives up on it: the upstream failed mid-answer, the client
    /// stopped reading).
    pub fn reset(&mut self, stream: StreamId, code: Reason) {
        if let Some(s) = self.streams.remove(&stream) {
            self.closed_now(stream);
            self.reset_now(stream, &s);
            write::rst_stream(&mut self.out, stream, code);
        }
    }

    /// The stream's answer is whole and its request is not: the client is asked to stop
    /// sending it, with RST_STREAM NO_ERROR (RFC 9113 §8.1). Nothing when the request was
    /// whole or the stream is gone.
    pub fn end_request(&mut self, stream: StreamId) {
        if self.request_still_coming(stream) {
            self.reset(stream, Reason::NO_ERROR);
        }
    }

    /// Whether the stream's answer is whole while its request is not (the client may still
    /// be uploading, RFC 9113 §8.1).
    pub fn request_still_coming(&self, stream: StreamId) -> bool {
        self.streams
            .get(&stream)
            .is_some_and(|s| s.send_closed && !s.recv_closed)
    }

    /// `n` bytes of the stream's request body were taken: the client may send as many more
    /// (given back in WINDOW_UPDATEs once half a window has been taken).
    pub fn release(&mut self, stream: StreamId, n: usize) {
        let n = n as u32;
        self.release_connection(n);
        if let Some(s) = self.streams.get_mut(&stream) {
            let open = !s.recv_closed;
            s.flow
                .release(&mut self.out, stream, n, self.cfg.stream_window, open);
        }
    }

    fn release_connection(&mut self, n: u32) {
        self.flow
            .release(&mut self.out, 0, n, self.cfg.connection_window, true);
    }

    fn fail(&mut self, reason: Reason, why: &'static str) -> ConnectionError {
        if !self.closed {
            self.closed = true;
            write::goaway(&mut self.out, self.last_stream, reason, why.as_bytes());
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

    /// A stream error: RST_STREAM, and the stream's request cancelled if it had one.
    fn stream_error(&mut self, stream: StreamId, code: Reason) {
        self.control_queued += 1;
        if code != Reason::REFUSED_STREAM {
            self.error_resets += 1;
        }
        write::rst_stream(&mut self.out, stream, code);
        if let Some(s) = self.streams.remove(&stream) {
            self.closed_now(stream);
            self.reset_now(stream, &s);
            self.events.push_back(Event::Reset {
                stream,
                code,
                by_client: false,
            });
        }
    }

    /// `stream`, just reset by weir: frames the client sent before it saw the reset are
    /// ignored for a while.
    fn reset_now(&mut self, stream: StreamId, s: &Stream) {
        if s.recv_closed {
            return;
        }
        if self.reset_sent.len() == RECENTLY_CLOSED {
            self.reset_sent.pop_front();
        }
        self.reset_sent.push_back(stream);
    }

    fn closed_now(&mut self, stream: StreamId) {
        if self.recently_closed.len() == RECENTLY_CLOSED {
            self.recently_closed.pop_front();
        }
        self.recently_closed.push_back(stream);
    }

    fn end_sent(&mut self, stream: StreamId) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.send_closed = true;
            if s.done() {
                self.streams.remove(&stream);
                self.closed_now(stream);
            }
        }
    }

    fn end_received(&mut self, stream: StreamId) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.recv_closed = true;
            if s.done() {
                self.streams.remove(&stream);
                self.closed_now(stream);
            }
        }
    }

    /// A stream id the client never opened (above the last, or even: a server's).
    fn idle(&self, stream: StreamId) -> bool {
        stream > self.last_stream || stream.is_multiple_of(2)
    }

    crate::dispatch::frames!(
        preface: "the preface not followed by SETTINGS",
        push: "PUSH_PROMISE from a client"
    );

    fn go_away_received(&mut self, last_stream: StreamId, code: Reason) {
        self.events.push_back(Event::GoAway { last_stream, code });
    }

    fn reset_received(&mut self, stream: StreamId, code: Reason) {
        self.closed_now(stream);
        self.events.push_back(Event::Reset {
            stream,
            code,
            by_client: true,
        });
    }

    fn flooding(&self) -> Option<(Flood, &'static str)> {
        if self.error_resets > MAX_ERROR_RESETS {
            return Some((
                Flood::StreamErrors,
                "too many streams reset for the client's errors",
            ));
        }
        (self.control_queued > MAX_CONTROL_QUEUED).then_some((
            Flood::ControlFrames,
            "control frames sent faster than their answers are read",
        ))
    }

    /// A client's SETTINGS say nothing the server reads beyond what both ends read.
    fn peer_settings(&mut self, _: &Settings) {}

    fn headers(
        &mut self,
        stream: StreamId,
        block: &[u8],
        end_stream: bool,
        end_headers: bool,
    ) -> Result<(), ConnectionError> {
        let kind = if let Some(s) = self.streams.get(&stream) {
            if s.recv_closed {
                // Its block must still be decoded (the table), then the stream is reset.
                BlockKind::Refused(Reason::STREAM_CLOSED)
            } else if !end_stream {
                BlockKind::Refused(Reason::PROTOCOL_ERROR)
            } else {
                BlockKind::Trailers
            }
        } else if stream.is_multiple_of(2) {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "a client stream with an even id"));
        } else if stream <= self.last_stream && self.reset_sent.contains(&stream) {
            // Trailers sent before weir's reset reached the client: decoded (the table),
            // then dropped.
            BlockKind::Ignored
        } else if stream <= self.last_stream {
            let (r, why) = match self.recently_closed.contains(&stream) {
                true => (Reason::STREAM_CLOSED, "HEADERS on a closed stream"),
                false => (Reason::PROTOCOL_ERROR, "a stream id below the last one"),
            };
            return Err(self.fail(r, why));
        } else {
            self.last_stream = stream;
            if self.goaway_sent.is_some() {
                BlockKind::Ignored
            } else if self.streams.len() >= self.cfg.max_streams as usize {
                BlockKind::Refused(Reason::REFUSED_STREAM)
            } else {
                BlockKind::Request
            }
        };
        let mut b = Block {
            stream,
            bytes: Vec::new(),
            end_stream,
            kind,
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

    fn block_done(&mut self, b: Block, bytes: &[u8]) -> Result<(), ConnectionError> {
        let trailers = b.kind == BlockKind::Trailers;
        // Room for the fields a browser's request has and the few weir adds; trailers have
        // one or two (the map is made per message, and its size is what is allocated).
        let mut fields = Builder::new(if trailers { 4 } else { 16 });
        let mut list = 0usize;
        let max = self.cfg.max_header_list as usize;
        // Fields past the list size are decoded (the table must follow the block) but not
        // kept: one byte can name a 4 KiB table entry, so a block of such references would
        // otherwise decode to a thousand times its size (an HPACK bomb).
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
        let stream = b.stream;
        match b.kind {
            BlockKind::Ignored => Ok(()),
            BlockKind::Refused(code) => {
                self.stream_error(stream, code);
                Ok(())
            }
            BlockKind::Request => {
                if list > max {
                    self.too_large(stream, b.end_stream);
                    return Ok(());
                }
                let expect = fields.expect;
                match fields.request(self.cfg.connect_protocol) {
                    Err(_) => self.stream_error(stream, Reason::PROTOCOL_ERROR),
                    Ok(head) => {
                        let mut s = Stream::new(
                            self.peer_initial_window,
                            self.cfg.stream_window,
                            head.content_length,
                        );
                        if b.end_stream {
                            if s.content_length.is_some_and(|n| n != 0) {
                                self.stream_error(stream, Reason::PROTOCOL_ERROR);
                                return Ok(());
                            }
                            s.recv_closed = true;
                        }
                        self.streams.insert(stream, s);
                        self.events.push_back(Event::Request {
                            stream,
                            head,
                            end_stream: b.end_stream,
                            expect,
                        });
                    }
                }
                Ok(())
            }
            BlockKind::Trailers => {
                let Some(s) = self.streams.get(&stream) else {
                    return Ok(());
                };
                if list > max {
                    self.stream_error(stream, Reason::PROTOCOL_ERROR);
                    return Ok(());
                }
                if s.content_length.is_some_and(|n| n != s.received) {
                    self.stream_error(stream, Reason::PROTOCOL_ERROR);
                    return Ok(());
                }
                match fields.trailers() {
                    Err(_) => self.stream_error(stream, Reason::PROTOCOL_ERROR),
                    Ok(fields) => {
                        self.events.push_back(Event::Trailers { stream, fields });
                        self.end_received(stream);
                    }
                }
                Ok(())
            }
        }
    }

    /// A request whose fields are over the list size: 431, never seen by the caller.
    fn too_large(&mut self, stream: StreamId, end_stream: bool) {
        let mut s = Stream::new(self.peer_initial_window, self.cfg.stream_window, None);
        s.recv_closed = end_stream;
        self.streams.insert(stream, s);
        self.send_headers(
            stream,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            &HeaderMap::new(),
            true,
        );
        // Its body, if any, is not wanted.
        if !end_stream {
            self.reset(stream, Reason::NO_ERROR);
        }
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
        // Padding is never handed over: given back now.
        let padding = flow_len - data.len() as u32;
        let Some(s) = self.streams.get_mut(&stream) else {
            // A closed stream: its bytes given back to the connection; refused, unless weir
            // reset it and these were on their way.
            self.release_connection(flow_len);
            if !self.reset_sent.contains(&stream) {
                self.stream_error(stream, Reason::STREAM_CLOSED);
            }
            return Ok(());
        };
        if s.recv_closed {
            self.release_connection(flow_len);
            self.stream_error(stream, Reason::STREAM_CLOSED);
            return Ok(());
        }
        let overrun = !s.flow.take(flow_len);
        s.received += data.len() as u64;
        let over = s
            .content_length
            .is_some_and(|n| s.received > n || (end_stream && s.received != n));
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

/// A message's fields, never-indexed when sensitive.
fn fields(dst: &mut Vec<u8>, headers: &HeaderMap) {
    for (name, value) in headers {
        encode::field(
            dst,
            name.as_str().as_bytes(),
            value.as_bytes(),
            value.is_sensitive(),
        );
    }
}

#[cfg(test)]
mod tests;
