//! Properties over arbitrary input, for the cargo-fuzz targets in `crates/weir-h2/fuzz/` and
//! for unit tests that feed them pseudo-random input (nightly is not always at hand). This
//! crate parses what clients and upstreams send by hand, so each side is held to:
//!
//! - no panic, whatever comes and in whatever pieces;
//! - once a connection error is reported, no other (the connection stays closed);
//! - what it queues to write stays bounded by what came in (no flood amplified);
//! - events follow each stream's life: a body, trailers or a response only for a stream
//!   that opened (a request came, weir sent one) and whose side has not ended, nothing for it
//!   once it has, and a client's reset only for a stream weir sent a request on.
//!
//! And for HPACK: a header block decodes without panic, and the fields it decodes to, encoded
//! again by weir's encoder, decode to the same fields.
//!
//! Each input's first bytes are knobs (limits, how the bytes are cut, what the application
//! does with each event), so that one corpus reaches small windows and stream limits too.

use std::collections::HashMap;

use bytes::BytesMut;
use http::{HeaderMap, StatusCode};

use crate::client;
use crate::frame::{StreamId, PREFACE};
use crate::hpack::{encode, Decoder};
use crate::server;
use crate::Reason;

/// Most bytes one step may queue to write beyond a few times what it read: answers to
/// requests, window updates and a GOAWAY are a few dozen bytes each.
const SLACK: usize = 64 * 1024;

/// Asserts that one step queued to write no more than [`SLACK`] beyond a few times what it read.
fn bounded(queued: usize, read: usize) {
    assert!(
        queued <= 4 * read + SLACK,
        "{queued} bytes queued after a piece of {read}"
    );
}

/// The knob bytes at the front of an input, and the rest.
fn knobs<const N: usize>(data: &[u8]) -> ([u8; N], &[u8]) {
    let mut k = [0u8; N];
    let n = data.len().min(N);
    k[..n].copy_from_slice(&data[..n]);
    (k, &data[n..])
}

/// Cuts `data` into pieces of 1 to `1 << (bits & 7)` bytes (lengths from the bytes
/// themselves, so that the cuts vary within one input).
fn pieces(data: &[u8], bits: u8) -> impl Iterator<Item = &[u8]> {
    let most = 1usize << (bits & 7);
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= data.len() {
            return None;
        }
        let n = 1 + usize::from(data[at]) % most;
        let piece = &data[at..(at + n).min(data.len())];
        at += piece.len();
        Some(piece)
    })
}

/// Where one side of a stream stands, as its events told.
#[derive(Debug, PartialEq)]
enum Side {
    /// Opened; its body or trailers may still come.
    Open,
    /// Ended by the peer (END_STREAM, trailers) or by a reset: nothing more may come.
    Ended,
}

/// Notes an event about `stream` that must find it open (a body, trailers), and its end.
fn arrives(streams: &mut HashMap<StreamId, Side>, stream: StreamId, ends: bool, what: &str) {
    match streams.get_mut(&stream) {
        Some(s @ Side::Open) => {
            if ends {
                *s = Side::Ended;
            }
        }
        other => panic!("{what} for stream {stream}, which is {other:?}"),
    }
}

/// Server side: `data` is what a client sends after the preface (knob 0's top bit clear: the
/// preface is put first; set: the input must bring it).
pub fn server(data: &[u8]) {
    let ([k0, k1, k2], rest) = knobs::<3>(data);
    let mut c = server::H2ServerConnection::new(server::Config {
        max_streams: 1 + u32::from(k0 & 7),
        max_header_list: 64 << (k0 >> 3 & 7),
        stream_window: 65_535,
        connection_window: 65_535 << (k2 & 3),
        connect_protocol: k2 & 4 != 0,
    });
    let mut input = Vec::with_capacity(PREFACE.len() + rest.len());
    if k0 & 0x80 == 0 {
        input.extend_from_slice(PREFACE);
    }
    input.extend_from_slice(rest);
    // What the application does: answer requests at once (bit 0), with a body (1) and
    // trailers (2); reset every other one (3); give bodies back (4); go away once a request
    // came (5).
    let act = k1;
    let mut streams: HashMap<StreamId, Side> = HashMap::new();
    let mut last_request = 0;
    let mut answer = Vec::new();
    let mut buf = BytesMut::new();
    let mut failed = false;
    for piece in pieces(&input, k2 >> 3) {
        buf.extend_from_slice(piece);
        let r = c.recv(&mut buf);
        assert!(!(failed && r.is_err()), "a second connection error: {r:?}");
        failed |= r.is_err();
        // Every event this read brought is seen before the application acts on any (a reset
        // it sends cannot take back events already queued).
        let events: Vec<server::Event> = std::iter::from_fn(|| c.next_event()).collect();
        for ev in events {
            match ev {
                server::Event::Request {
                    stream, end_stream, ..
                } => {
                    assert!(
                        stream > last_request,
                        "request on stream {stream} after {last_request}"
                    );
                    last_request = stream;
                    let side = if end_stream { Side::Ended } else { Side::Open };
                    streams.insert(stream, side);
                    answer.push(stream);
                }
                server::Event::Data {
                    stream,
                    data,
                    end_stream,
                } => {
                    arrives(&mut streams, stream, end_stream, "a body");
                    if act & 16 != 0 {
                        c.release(stream, data.len());
                    }
                }
                server::Event::Trailers { stream, .. } => {
                    arrives(&mut streams, stream, true, "trailers");
                }
                server::Event::Reset { stream, .. } => {
                    // A stream weir refused before its request was whole is reset without
                    // having opened; one that opened is over.
                    if let Some(s) = streams.get_mut(&stream) {
                        *s = Side::Ended;
                    }
                }
                server::Event::Window { .. } | server::Event::GoAway { .. } => {}
            }
        }
        for stream in answer.drain(..) {
            if act & 8 != 0 && stream % 4 == 1 {
                c.reset(stream, Reason::CANCEL);
                streams.insert(stream, Side::Ended);
            } else if act & 1 != 0 {
                let body = act & 2 != 0;
                let trailers = act & 4 != 0;
                c.send_headers(
                    stream,
                    StatusCode::OK,
                    &HeaderMap::new(),
                    !body && !trailers,
                );
                if body {
                    c.send_data(stream, b"answer", !trailers);
                }
                if trailers {
                    let mut t = HeaderMap::new();
                    t.insert("grpc-status", http::HeaderValue::from_static("0"));
                    c.send_trailers(stream, &t);
                }
            }
            if act & 32 != 0 {
                c.go_away(Reason::NO_ERROR);
            }
        }
        bounded(c.output_len(), piece.len());
        c.output().clear();
    }
}

/// Client side: weir has opened one to four streams (knob 0), some with a body still to
/// send, and `data` is what the server sends back, its SETTINGS first.
pub fn client(data: &[u8]) {
    let ([k0, k1], rest) = knobs::<2>(data);
    let mut c = client::H2ClientConnection::new(client::Config {
        max_header_list: 64 << (k0 >> 2 & 7),
        stream_window: 65_535,
        connection_window: 65_535,
    });
    let mut streams: HashMap<StreamId, Side> = HashMap::new();
    // Whether each stream's response head came.
    let mut answered: HashMap<StreamId, bool> = HashMap::new();
    for i in 0..=(k0 & 3) {
        let body = k1 & (1 << i) != 0;
        let target = client::Target {
            method: if body { b"POST" } else { b"GET" },
            scheme: b"http",
            authority: b"backend",
            path: b"/",
        };
        let id = c
            .send_request(target, &HeaderMap::new(), std::iter::empty(), !body)
            .expect("a new connection opens streams");
        if body {
            c.send_data(id, b"request body", true);
        }
        streams.insert(id, Side::Open);
        answered.insert(id, false);
    }
    c.output().clear();
    let mut buf = BytesMut::new();
    let mut failed = false;
    for piece in pieces(rest, k1 >> 4) {
        buf.extend_from_slice(piece);
        let r = c.recv(&mut buf);
        assert!(!(failed && r.is_err()), "a second connection error: {r:?}");
        failed |= r.is_err();
        while let Some(ev) = c.next_event() {
            match ev {
                client::Event::Response {
                    stream, end_stream, ..
                } => {
                    let seen = answered
                        .get_mut(&stream)
                        .unwrap_or_else(|| panic!("a response on stream {stream}, never opened"));
                    assert!(!*seen, "a second response head on stream {stream}");
                    *seen = true;
                    arrives(&mut streams, stream, end_stream, "a response");
                }
                client::Event::Data {
                    stream,
                    data,
                    end_stream,
                } => {
                    assert!(
                        answered.get(&stream) == Some(&true),
                        "a body before its head on {stream}"
                    );
                    arrives(&mut streams, stream, end_stream, "a body");
                    if k1 & 8 != 0 {
                        c.release(stream, data.len());
                    }
                }
                client::Event::Trailers { stream, .. } => {
                    assert!(
                        answered.get(&stream) == Some(&true),
                        "trailers before the head on {stream}"
                    );
                    arrives(&mut streams, stream, true, "trailers");
                }
                client::Event::Reset { stream, .. } => {
                    let s = streams
                        .get_mut(&stream)
                        .unwrap_or_else(|| panic!("a reset of stream {stream}, never opened"));
                    *s = Side::Ended;
                }
                client::Event::GoAway { last_stream, .. } => {
                    // Those above it are gone, without an event each.
                    for (id, s) in streams.iter_mut() {
                        if *id > last_stream {
                            *s = Side::Ended;
                        }
                    }
                }
                client::Event::Window { .. } => {}
            }
        }
        bounded(c.output_len(), piece.len());
        c.output().clear();
    }
}

/// HPACK: `data` after two knob bytes (the dynamic table's size) is one header block.
pub fn hpack(data: &[u8]) {
    let ([a, b], block) = knobs::<2>(data);
    let limit = usize::from(u16::from_le_bytes([a, b])) % 8192;
    let mut fields: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
    let decoded = Decoder::new(limit).decode(block, |n, v, sensitive| {
        fields.push((n.to_vec(), v.to_vec(), sensitive))
    });
    if decoded.is_err() {
        return;
    }
    let mut again = Vec::new();
    for (n, v, sensitive) in &fields {
        encode::field(&mut again, n, v, *sensitive);
    }
    let mut back = Vec::new();
    Decoder::new(limit)
        .decode(&again, |n, v, sensitive| {
            back.push((n.to_vec(), v.to_vec(), sensitive))
        })
        .expect("what weir encodes decodes");
    assert_eq!(back, fields, "encoded again, the fields decode differently");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::write;

    /// xorshift: the same inputs every run.
    fn inputs(
        seed: u64,
        count: usize,
        f: impl Fn(&mut dyn FnMut() -> u64) -> Vec<u8>,
    ) -> Vec<Vec<u8>> {
        let mut s = seed;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        (0..count).map(|_| f(&mut next)).collect()
    }

    /// Frames of random kinds, flags and streams, their payloads random bytes or a valid
    /// request or response block, among well-formed HEADERS and DATA on the streams in turn,
    /// so that deep paths are reached too.
    fn frames(next: &mut dyn FnMut() -> u64, block: &[u8], knob_bytes: usize) -> Vec<u8> {
        let mut out: Vec<u8> = (0..knob_bytes).map(|_| next() as u8 & 0x7f).collect();
        if !next().is_multiple_of(8) {
            write::settings(&mut out, &[]);
        }
        let mut stream = 1;
        for _ in 0..(next() % 24) {
            match next() % 4 {
                // A whole head, ending the stream or not.
                0 => {
                    let end = next().is_multiple_of(2);
                    write::headers(&mut out, stream, block, end, 16_384);
                    if end {
                        stream += 2;
                    }
                }
                // Some of its body, perhaps the end of it.
                1 => {
                    let len = next() as usize % 100;
                    let end = next().is_multiple_of(2);
                    write::data(&mut out, stream, &vec![b'x'; len], end);
                    if end {
                        stream += 2;
                    }
                }
                _ => {
                    let kind = (next() % 11) as u8;
                    let flags = (next() & 0x2d) as u8;
                    let on = (next() % 8) as u32;
                    let payload: Vec<u8> = match next() % 3 {
                        0 => block[..(next() as usize % (block.len() + 1))].to_vec(),
                        _ => (0..next() % 40).map(|_| next() as u8).collect(),
                    };
                    write::head(&mut out, payload.len(), kind, flags, on);
                    out.extend_from_slice(&payload);
                }
            }
        }
        out
    }

    #[test]
    fn server_holds_on_random_input() {
        // :method GET, :scheme http, :path /, :authority a
        let block = [0x82, 0x86, 0x84, 0x41, 0x01, b'a'];
        for input in inputs(0x9e37_79b9_7f4a_7c15, 3000, |n| frames(n, &block, 3)) {
            server(&input);
        }
    }

    #[test]
    fn client_holds_on_random_input() {
        // :status 200, content-length: 3
        let block = [0x88, 0x0f, 0x0d, 0x01, b'3'];
        for input in inputs(0x2545_f491_4f6c_dd1d, 3000, |n| frames(n, &block, 2)) {
            client(&input);
        }
    }

    #[test]
    fn hpack_holds_on_random_input() {
        // RFC 7541 C.4.1, Huffman-coded: a request's first block.
        let example = [
            0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab,
            0x90, 0xf4, 0xff,
        ];
        let all = inputs(0x1234_5678_9abc_def1, 5000, |next| {
            let mut v = vec![next() as u8, next() as u8];
            match next() % 3 {
                0 => v.extend((0..next() % 64).map(|_| next() as u8)),
                // Valid blocks, some with a byte changed.
                _ => {
                    v.extend_from_slice(&example);
                    if next().is_multiple_of(2) {
                        let i = 2 + next() as usize % example.len();
                        v[i] = next() as u8;
                    }
                }
            }
            v
        });
        for input in all {
            hpack(&input);
        }
    }
}
