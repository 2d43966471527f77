//! The server connection driven by a client made of this crate's frame writer and HPACK
//! encoder: what it hands over, what it answers, and every rule it enforces.

use bytes::BytesMut;
use http::{HeaderMap, HeaderValue, Method, StatusCode};

use super::*;
use crate::frame::{flag, kind, Setting, MAX_MAX_FRAME};
use crate::hpack::encode;

const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/a?b"),
    (":authority", "example.com"),
];

fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        encode::field(&mut b, n.as_bytes(), v.as_bytes(), false);
    }
    b
}

/// A server that has read the preface and the client's SETTINGS, its first output taken.
fn open(cfg: Config) -> H2ServerConnection {
    let mut c = H2ServerConnection::new(cfg);
    let mut input = BytesMut::from(PREFACE);
    let mut s = Vec::new();
    write::settings(&mut s, &[]);
    input.extend_from_slice(&s);
    c.recv(&mut input).unwrap();
    let out = frames(c.output());
    assert!(matches!(out[0], Frame::Settings(_)), "{out:?}");
    assert_eq!(out.last(), Some(&Frame::SettingsAck));
    c
}

fn send(c: &mut H2ServerConnection, bytes: &[u8]) -> Result<(), ConnectionError> {
    c.recv(&mut BytesMut::from(bytes))
}

fn headers(stream: u32, fields: &[(&str, &str)], end_stream: bool) -> Vec<u8> {
    let mut w = Vec::new();
    write::headers(
        &mut w,
        stream,
        &block(fields),
        end_stream,
        DEFAULT_MAX_FRAME,
    );
    w
}

fn data(stream: u32, payload: &[u8], end_stream: bool) -> Vec<u8> {
    let mut w = Vec::new();
    write::data(&mut w, stream, payload, end_stream);
    w
}

/// The frames in (and taken out of) the output.
fn frames(out: &mut Vec<u8>) -> Vec<Frame> {
    let mut buf = BytesMut::from(&out[..]);
    out.clear();
    let mut v = Vec::new();
    while let Some(f) = frame::read(&mut buf, MAX_MAX_FRAME).unwrap() {
        v.push(f);
    }
    assert!(buf.is_empty());
    v
}

/// The request heads among `ev`.
fn request_heads(ev: &[Event]) -> Vec<&RequestHead> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Request { head, .. } => Some(head),
            _ => None,
        })
        .collect()
}

fn events(c: &mut H2ServerConnection) -> Vec<Event> {
    std::iter::from_fn(|| c.next_event()).collect()
}

fn rst(stream: u32, code: Reason) -> Frame {
    Frame::RstStream {
        stream,
        code: code.0,
    }
}

fn goaway_reason(c: &mut H2ServerConnection, r: Result<(), ConnectionError>) -> Reason {
    let e = r.expect_err("a connection error");
    let out = frames(c.output());
    match out.last() {
        Some(Frame::GoAway { code, .. }) => assert_eq!(Reason(*code), e.reason),
        other => panic!("no GOAWAY last: {other:?}"),
    }
    assert!(c.is_closed());
    e.reason
}

#[test]
fn a_request_and_its_answer() {
    let mut c = open(Config::default());
    send(
        &mut c,
        &headers(
            1,
            &[
                GET,
                &[("user-agent", "t"), ("cookie", "a=1"), ("cookie", "b=2")],
            ]
            .concat(),
            true,
        ),
    )
    .unwrap();
    let ev = events(&mut c);
    let [Event::Request {
        stream: 1,
        head,
        end_stream: true,
        expect: false,
    }] = &ev[..]
    else {
        panic!("{ev:?}")
    };
    assert_eq!(head.method, Method::GET);
    assert_eq!(head.uri, "https://example.com/a?b");
    assert_eq!(head.headers["user-agent"], "t");
    // Cookie crumbs are joined into one field (RFC 9113 §8.2.3).
    let cookies: Vec<_> = head.headers.get_all("cookie").iter().collect();
    assert_eq!(cookies, ["a=1; b=2"]);

    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("text/plain"));
    assert!(c.send_headers(1, StatusCode::OK, &h, false));
    assert_eq!(c.send_data(1, b"hello", true), 5);
    let out = frames(c.output());
    let [Frame::Headers {
        stream: 1,
        block,
        end_stream: false,
        end_headers: true,
    }, Frame::Data {
        stream: 1,
        data,
        end_stream: true,
        ..
    }] = &out[..]
    else {
        panic!("{out:?}")
    };
    assert_eq!(&data[..], b"hello");
    let mut got = Vec::new();
    Decoder::new(4096)
        .decode(block, |n, v, _| got.push((n.to_vec(), v.to_vec())))
        .unwrap();
    assert_eq!(
        got,
        vec![
            (b":status".to_vec(), b"200".to_vec()),
            (b"content-type".to_vec(), b"text/plain".to_vec())
        ]
    );
    assert!(c.is_idle(), "closed both ways, the stream is gone");
}

#[test]
fn a_body_and_trailers_come_as_events_and_the_window_is_given_back() {
    let mut c = open(Config {
        stream_window: 100_000,
        connection_window: 100_000,
        ..Config::default()
    });
    let mut input = headers(
        1,
        &[
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/"),
            ("content-length", "70000"),
        ],
        false,
    );
    input.extend(data(1, &[1; 16_384], false));
    input.extend(data(1, &[2; 16_384], false));
    input.extend(data(1, &[3; 16_384], false));
    input.extend(data(1, &[4; 16_384], false));
    input.extend(data(1, &[5; 4464], false));
    let mut t = Vec::new();
    write::headers(
        &mut t,
        1,
        &block(&[("grpc-status", "0")]),
        true,
        DEFAULT_MAX_FRAME,
    );
    input.extend(t);
    send(&mut c, &input).unwrap();
    let ev = events(&mut c);
    assert!(matches!(
        ev[0],
        Event::Request {
            end_stream: false,
            ..
        }
    ));
    let body: usize = ev
        .iter()
        .map(|e| match e {
            Event::Data { data, .. } => data.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(body, 70_000);
    let Some(Event::Trailers { stream: 1, fields }) = ev.last() else {
        panic!("{ev:?}")
    };
    assert_eq!(fields["grpc-status"], "0");
    // Taking the body gives the connection's window back (the stream's own has ended).
    c.release(1, 70_000);
    let out = frames(c.output());
    assert_eq!(
        out,
        vec![Frame::WindowUpdate {
            stream: 0,
            increment: 70_000
        }]
    );
}

#[test]
fn data_waits_for_the_window() {
    let mut c = open(Config::default());
    let mut s = Vec::new();
    write::settings(&mut s, &[(Setting::InitialWindowSize, 10)]);
    send(&mut c, &s).unwrap();
    send(&mut c, &headers(1, GET, true)).unwrap();
    events(&mut c);
    assert!(c.send_headers(1, StatusCode::OK, &HeaderMap::new(), false));
    assert_eq!(c.send_data(1, &[7; 25], true), 10);
    assert_eq!(c.window(1), 0);
    let mut w = Vec::new();
    write::window_update(&mut w, 1, 100);
    send(&mut c, &w).unwrap();
    assert!(matches!(events(&mut c)[..], [Event::Window { stream: 1 }]));
    assert_eq!(c.send_data(1, &[7; 15], true), 15);
    let out = frames(c.output());
    let sizes: Vec<(usize, bool)> = out
        .iter()
        .filter_map(|f| match f {
            Frame::Data {
                data, end_stream, ..
            } => Some((data.len(), *end_stream)),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, vec![(10, false), (15, true)]);
    assert!(c.is_idle());
}

#[test]
fn ping_and_settings_are_answered() {
    let mut c = open(Config::default());
    let mut w = Vec::new();
    write::ping(&mut w, false, *b"abcdefgh");
    write::settings(&mut w, &[(Setting::MaxFrameSize, 1 << 20)]);
    send(&mut c, &w).unwrap();
    assert_eq!(
        frames(c.output()),
        vec![
            Frame::Ping {
                ack: true,
                payload: *b"abcdefgh"
            },
            Frame::SettingsAck
        ]
    );
}

#[test]
fn a_client_reset_cancels_the_request() {
    let mut c = open(Config::default());
    send(&mut c, &headers(1, GET, false)).unwrap();
    events(&mut c);
    let mut w = Vec::new();
    write::rst_stream(&mut w, 1, Reason::CANCEL);
    send(&mut c, &w).unwrap();
    assert!(matches!(
        events(&mut c)[..],
        [Event::Reset {
            stream: 1,
            code: Reason::CANCEL,
            by_client: true
        }]
    ));
    assert!(!c.send_headers(1, StatusCode::OK, &HeaderMap::new(), true));
    assert!(c.is_idle());
    // A HEADERS frame on it now: STREAM_CLOSED.
    let r = send(&mut c, &headers(1, GET, true));
    assert_eq!(goaway_reason(&mut c, r), Reason::STREAM_CLOSED);
}

#[test]
fn malformed_requests_are_reset_and_never_handed_over() {
    let bad: Vec<Vec<(&str, &str)>> = vec![
        vec![(":method", "GET"), (":scheme", "http")],
        vec![(":method", "GET"), (":path", "/")],
        vec![(":method", "GET"), (":scheme", "http"), (":path", "")],
        [GET, &[("Upper", "x")]].concat(),
        [GET, &[("connection", "close")]].concat(),
        [GET, &[("te", "gzip")]].concat(),
        [GET, &[("x", " padded")]].concat(),
        [&[("x", "y")], GET].concat(),
        [GET, &[(":status", "200")]].concat(),
        [GET, &[(":method", "GET")]].concat(),
        [GET, &[(":protocol", "websocket")]].concat(),
        [GET, &[("content-length", "x")]].concat(),
        vec![(":method", "CONNECT"), (":scheme", "http"), (":path", "/")],
    ];
    let mut c = open(Config::default());
    for (i, fields) in bad.iter().enumerate() {
        let stream = 2 * i as u32 + 1;
        send(&mut c, &headers(stream, fields, true)).unwrap();
        assert!(events(&mut c).is_empty(), "{fields:?}");
        assert_eq!(
            frames(c.output()),
            vec![rst(stream, Reason::PROTOCOL_ERROR)],
            "{fields:?}"
        );
    }
    // Allowed: te: trailers, a CONNECT with only an authority, an extended CONNECT when
    // enabled.
    let mut c = open(Config {
        connect_protocol: true,
        ..Config::default()
    });
    send(
        &mut c,
        &headers(1, &[GET, &[("te", "trailers")]].concat(), true),
    )
    .unwrap();
    send(
        &mut c,
        &headers(
            3,
            &[(":method", "CONNECT"), (":authority", "example.com:443")],
            true,
        ),
    )
    .unwrap();
    let ws = [
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":path", "/chat"),
        (":authority", "a"),
    ];
    send(&mut c, &headers(5, &ws, false)).unwrap();
    let ev = events(&mut c);
    assert_eq!(ev.len(), 3, "{ev:?}");
    let Event::Request { head, .. } = &ev[2] else {
        panic!()
    };
    assert_eq!(head.protocol.as_deref(), Some(&b"websocket"[..]));
}

#[test]
fn body_length_must_match_content_length() {
    let mut c = open(Config::default());
    let post = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/"),
        ("content-length", "3"),
    ];
    let mut w = headers(1, &post, false);
    w.extend(data(1, b"abcd", true));
    send(&mut c, &w).unwrap();
    assert!(matches!(
        events(&mut c)[..],
        [
            Event::Request { .. },
            Event::Reset {
                stream: 1,
                code: Reason::PROTOCOL_ERROR,
                by_client: false
            }
        ]
    ));
    let mut w = headers(3, &post, false);
    w.extend(data(3, b"ab", true));
    send(&mut c, &w).unwrap();
    assert!(matches!(
        events(&mut c)[..],
        [Event::Request { .. }, Event::Reset { stream: 3, .. }]
    ));
    // Announced but absent.
    send(&mut c, &headers(5, &post, true)).unwrap();
    assert!(events(&mut c).is_empty());
}

#[test]
fn limits_are_kept() {
    // Streams past the limit are refused.
    let mut c = open(Config {
        max_streams: 1,
        ..Config::default()
    });
    send(&mut c, &headers(1, GET, false)).unwrap();
    send(&mut c, &headers(3, GET, true)).unwrap();
    assert_eq!(events(&mut c).len(), 1);
    assert_eq!(frames(c.output()), vec![rst(3, Reason::REFUSED_STREAM)]);

    // A header list past the limit is answered 431 by the connection itself.
    let mut c = open(Config {
        max_header_list: 200,
        ..Config::default()
    });
    let big = "v".repeat(300);
    send(
        &mut c,
        &headers(1, &[GET, &[("x-big", big.as_str())]].concat(), true),
    )
    .unwrap();
    assert!(events(&mut c).is_empty());
    let out = frames(c.output());
    let [Frame::Headers {
        block,
        end_stream: true,
        ..
    }] = &out[..]
    else {
        panic!("{out:?}")
    };
    let mut status = Vec::new();
    Decoder::new(4096)
        .decode(block, |_, v, _| status.push(v.to_vec()))
        .unwrap();
    assert_eq!(status, vec![b"431".to_vec()]);

    // An HPACK bomb: an entry put in the table once, then named by one byte 33 000 times.
    // Answered 431 like any list too large. (That the fields past the size are not kept,
    // `block_done` makes sure of; this test sees only the answer.)
    let mut c = open(Config::default());
    let mut b = super::tests::block(GET);
    b.extend([0x40, 0x01, b'x', 0x01, b'y']);
    b.extend(std::iter::repeat_n(0xbe, 33_000)); // index 62: that entry
    let mut w = Vec::new();
    write::headers(&mut w, 1, &b, true, DEFAULT_MAX_FRAME);
    send(&mut c, &w).unwrap();
    assert!(events(&mut c).is_empty());
    let out = frames(c.output());
    let [Frame::Headers { block: answer, .. }] = &out[..] else {
        panic!("{out:?}")
    };
    let mut status = Vec::new();
    Decoder::new(4096)
        .decode(answer, |_, v, _| status.push(v.to_vec()))
        .unwrap();
    assert_eq!(status, vec![b"431".to_vec()]);

    // DATA past the stream's window (within the connection's).
    let mut c = open(Config {
        connection_window: 1 << 20,
        ..Config::default()
    });
    let mut w = headers(
        1,
        &[(":method", "POST"), (":scheme", "http"), (":path", "/")],
        false,
    );
    for _ in 0..4 {
        w.extend(data(1, &[0; 16_384], false));
    }
    send(&mut c, &w).unwrap();
    let ev = events(&mut c);
    assert!(
        matches!(
            ev.last(),
            Some(Event::Reset {
                code: Reason::FLOW_CONTROL_ERROR,
                ..
            })
        ),
        "{ev:?}"
    );
}

#[test]
fn floods_end_the_connection() {
    // CONTINUATION without end.
    let mut c = open(Config {
        max_header_list: 1000,
        ..Config::default()
    });
    let mut w = Vec::new();
    write::head(&mut w, 0, kind::HEADERS, 0, 1);
    let mut r = send(&mut c, &w);
    for _ in 0..10 {
        let mut w = Vec::new();
        write::head(&mut w, 4000, kind::CONTINUATION, 0, 1);
        w.extend([0x82; 4000]);
        r = send(&mut c, &w);
        if r.is_err() {
            break;
        }
    }
    assert_eq!(goaway_reason(&mut c, r), Reason::ENHANCE_YOUR_CALM);

    // Malformed requests, one stream reset after another.
    let mut c = open(Config::default());
    let mut r = Ok(());
    for i in 0..=MAX_ERROR_RESETS as u32 {
        r = send(&mut c, &headers(2 * i + 1, &[(":method", "GET")], true));
        c.output().clear();
        if r.is_err() {
            break;
        }
    }
    let e = r.expect_err("GOAWAY after the bound");
    assert_eq!(e.reason, Reason::ENHANCE_YOUR_CALM);

    // PINGs whose answers are never taken.
    let mut c = open(Config::default());
    let mut w = Vec::new();
    for _ in 0..=MAX_CONTROL_QUEUED {
        write::ping(&mut w, false, [0; 8]);
    }
    let r = send(&mut c, &w);
    assert_eq!(goaway_reason(&mut c, r), Reason::ENHANCE_YOUR_CALM);
}

#[test]
fn connection_rules_are_kept() {
    let cases: Vec<(Vec<u8>, Reason)> = vec![
        (headers(2, GET, true), Reason::PROTOCOL_ERROR),
        (data(1, b"x", true), Reason::PROTOCOL_ERROR),
        (
            {
                let mut w = Vec::new();
                write::rst_stream(&mut w, 7, Reason::CANCEL);
                w
            },
            Reason::PROTOCOL_ERROR,
        ),
        (
            {
                let mut w = Vec::new();
                write::window_update(&mut w, 0, MAX_WINDOW);
                w
            },
            Reason::FLOW_CONTROL_ERROR,
        ),
        (
            {
                // A frame between HEADERS and its CONTINUATION.
                let mut w = Vec::new();
                write::head(&mut w, 0, kind::HEADERS, 0, 1);
                write::ping(&mut w, false, [0; 8]);
                w
            },
            Reason::PROTOCOL_ERROR,
        ),
        (
            {
                let mut w = Vec::new();
                write::head(&mut w, 0, kind::PUSH_PROMISE, flag::END_HEADERS, 1);
                w.truncate(w.len() - 9);
                write::head(&mut w, 4, kind::PUSH_PROMISE, flag::END_HEADERS, 1);
                w.extend([0, 0, 0, 2]);
                w
            },
            Reason::PROTOCOL_ERROR,
        ),
        (
            {
                let mut w = Vec::new();
                write::head(&mut w, 1, kind::CONTINUATION, flag::END_HEADERS, 1);
                w.push(0x82);
                w
            },
            Reason::PROTOCOL_ERROR,
        ),
        (vec![0x40, 0x01, 0x00], Reason::COMPRESSION_ERROR),
    ];
    for (i, (bytes, expect)) in cases.into_iter().enumerate() {
        let mut c = open(Config::default());
        let bytes = if i == 7 {
            // A HEADERS frame whose block does not decode.
            let mut w = Vec::new();
            write::headers(&mut w, 1, &bytes, true, DEFAULT_MAX_FRAME);
            w
        } else {
            bytes
        };
        let r = send(&mut c, &bytes);
        assert_eq!(goaway_reason(&mut c, r), expect, "case {i}");
    }
    // A lower stream id than one already opened.
    let mut c = open(Config::default());
    send(&mut c, &headers(5, GET, true)).unwrap();
    let r = send(&mut c, &headers(3, GET, true));
    assert_eq!(goaway_reason(&mut c, r), Reason::PROTOCOL_ERROR);
}

#[test]
fn the_preface_and_first_settings_are_required() {
    let mut c = H2ServerConnection::new(Config::default());
    let r = c.recv(&mut BytesMut::from(&b"GET / HTTP/1.1\r\n\r\n"[..]));
    assert_eq!(goaway_reason(&mut c, r), Reason::PROTOCOL_ERROR);
    let mut c = H2ServerConnection::new(Config::default());
    let mut w = PREFACE.to_vec();
    write::ping(&mut w, false, [0; 8]);
    let r = c.recv(&mut BytesMut::from(&w[..]));
    assert_eq!(goaway_reason(&mut c, r), Reason::PROTOCOL_ERROR);
    // The preface may come a byte at a time.
    let mut c = H2ServerConnection::new(Config::default());
    for b in PREFACE {
        c.recv(&mut BytesMut::from(&[*b][..])).unwrap();
    }
}

#[test]
fn after_goaway_new_streams_are_ignored_and_open_ones_finish() {
    let mut c = open(Config::default());
    send(&mut c, &headers(1, GET, true)).unwrap();
    events(&mut c);
    c.go_away(Reason::NO_ERROR);
    assert!(matches!(
        frames(c.output())[..],
        [Frame::GoAway {
            last_stream: 1,
            code: 0,
            ..
        }]
    ));
    send(&mut c, &headers(3, GET, true)).unwrap();
    assert!(events(&mut c).is_empty());
    assert!(c.send_headers(1, StatusCode::NO_CONTENT, &HeaderMap::new(), true));
    assert!(c.is_idle());
}

/// Whatever follows the preface, in whatever pieces: no panic, and once a connection error
/// is reported, the connection stays closed. Frames are built from random types, flags,
/// streams and payloads (often valid HPACK), so that deep paths are reached too.
#[test]
fn random_input_never_panics() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..3000 {
        let mut c = open(Config {
            max_streams: 4,
            max_header_list: 300,
            ..Config::default()
        });
        let mut input = Vec::new();
        for _ in 0..(next() % 12) {
            let kind = (next() % 11) as u8;
            let flags = (next() & 0x2d) as u8;
            let stream = (next() % 8) as u32;
            let len = (next() % 40) as usize;
            let payload: Vec<u8> = match next() % 3 {
                0 => block(&GET[..(next() % 5) as usize]),
                _ => (0..len).map(|_| next() as u8).collect(),
            };
            write::head(&mut input, payload.len(), kind, flags, stream);
            input.extend_from_slice(&payload);
        }
        let mut buf = BytesMut::new();
        let mut at = 0;
        while at < input.len() {
            let n = (1 + next() % 64) as usize;
            buf.extend_from_slice(&input[at..(at + n).min(input.len())]);
            at += n;
            let was_closed = c.is_closed();
            let r = c.recv(&mut buf);
            assert!(!(was_closed && r.is_err()), "an error after the close");
            while let Some(ev) = c.next_event() {
                if let Event::Request { stream, .. } = ev {
                    c.send_headers(stream, StatusCode::OK, &HeaderMap::new(), false);
                    c.send_data(stream, b"x", true);
                }
            }
            c.output().clear();
        }
    }
}

/// Fields a client indexes are made once and taken from the table's entry after that; a
/// content-length is never taken that way, so each request's DATA is still held to its own.
#[test]
fn indexed_fields_are_reused_and_content_length_is_checked_each_time() {
    let mut c = open(Config::default());
    // :method POST, :scheme http, :path /, :authority indexed as a new entry (62 after the
    // next two), then x-trace: abc and content-length: 3, both indexed as new entries.
    let mut first = vec![0x83, 0x86, 0x84];
    for (n, v) in [
        (&b":authority"[..], &b"a.test"[..]),
        (b"x-trace", b"abc"),
        (b"content-length", b"3"),
    ] {
        first.push(0x40);
        first.push(n.len() as u8);
        first.extend_from_slice(n);
        first.push(v.len() as u8);
        first.extend_from_slice(v);
    }
    // The same fields again by their indexes: content-length 62, x-trace 63, :authority 64.
    let again = [0x83, 0x86, 0x84, 0x80 | 64, 0x80 | 63, 0x80 | 62];
    let mut w = Vec::new();
    write::headers(&mut w, 1, &first, false, DEFAULT_MAX_FRAME);
    write::data(&mut w, 1, b"abc", true);
    for (id, body) in [(3, &b"abc"[..]), (5, b"abc"), (7, b"toolong")] {
        write::headers(&mut w, id, &again, false, DEFAULT_MAX_FRAME);
        write::data(&mut w, id, body, true);
    }
    send(&mut c, &w).unwrap();
    let ev = events(&mut c);
    let heads = request_heads(&ev);
    assert_eq!(heads.len(), 4, "{ev:?}");
    for h in &heads {
        assert_eq!(h.headers["x-trace"], "abc");
        assert_eq!(h.headers["content-length"], "3");
        assert_eq!(h.content_length, Some(3));
        assert_eq!(h.uri, "http://a.test/");
    }
    assert!(
        ev.iter().any(|e| matches!(
            e,
            Event::Reset {
                stream: 7,
                code: Reason::PROTOCOL_ERROR,
                ..
            }
        )),
        "{ev:?}"
    );
}

#[test]
fn indexed_path_and_authority_are_checked_once_and_shared() {
    let mut c = open(Config::default());
    // :method GET, :scheme http, then :path and :authority as new entries; the next requests
    // refer to them (:authority 62, :path 63). Then an invalid :path (one with a space) as a
    // new entry, which each request using it must still be refused for.
    let mut first = vec![0x82, 0x86];
    for (n, v) in [
        (&b":path"[..], &b"/svc/Call?x=1"[..]),
        (b":authority", b"a.test"),
    ] {
        first.extend_from_slice(&[0x40, n.len() as u8]);
        first.extend_from_slice(n);
        first.push(v.len() as u8);
        first.extend_from_slice(v);
    }
    let again = [0x82, 0x86, 0x80 | 63, 0x80 | 62];
    let mut bad = vec![0x82, 0x86, 0x80 | 62, 0x40, 5];
    bad.extend_from_slice(b":path");
    bad.push(4);
    bad.extend_from_slice(b"/a b");
    // Now :path "/a b" is 62, :authority 63.
    let bad_again = [0x82, 0x86, 0x80 | 63, 0x80 | 62];
    let mut w = Vec::new();
    write::headers(&mut w, 1, &first, true, DEFAULT_MAX_FRAME);
    write::headers(&mut w, 3, &again, true, DEFAULT_MAX_FRAME);
    write::headers(&mut w, 5, &again, true, DEFAULT_MAX_FRAME);
    write::headers(&mut w, 7, &bad, true, DEFAULT_MAX_FRAME);
    write::headers(&mut w, 9, &bad_again, true, DEFAULT_MAX_FRAME);
    send(&mut c, &w).unwrap();
    let ev = events(&mut c);
    let heads = request_heads(&ev);
    assert_eq!(heads.len(), 3, "{ev:?}");
    let at = |h: &RequestHead| {
        let pq = h.uri.path_and_query().unwrap().as_str().as_ptr();
        let a = h.uri.authority().unwrap().as_str().as_ptr();
        (pq, a)
    };
    for h in &heads {
        assert_eq!(h.uri, "http://a.test/svc/Call?x=1");
        // The same bytes each time: made once, with the entry, and shared.
        assert_eq!(at(h), at(heads[0]));
    }
    let resets: Vec<Frame> = frames(c.output())
        .into_iter()
        .filter(|f| matches!(f, Frame::RstStream { .. }))
        .collect();
    assert_eq!(
        resets,
        vec![
            rst(7, Reason::PROTOCOL_ERROR),
            rst(9, Reason::PROTOCOL_ERROR)
        ]
    );
}

/// A request's event says whether it has an `expect` field, whether the field came as a
/// literal, from the static table's name (35) or indexed from the dynamic table.
#[test]
fn a_request_says_whether_it_expects() {
    let mut c = open(Config::default());
    let start = [
        0x83, 0x86, 0x84, 0x41, 6, b'a', b'.', b't', b'e', b's', b't',
    ];
    // expect: 100-continue, its name from the static table, indexed as a new entry (62).
    let mut with = start.to_vec();
    with.extend_from_slice(&[0x40 | 35, 12]);
    with.extend_from_slice(b"100-continue");
    let mut w = Vec::new();
    write::headers(&mut w, 1, &with, true, DEFAULT_MAX_FRAME);
    write::headers(
        &mut w,
        3,
        &[0x83, 0x86, 0x84, 0x80 | 63, 0x80 | 62],
        true,
        DEFAULT_MAX_FRAME,
    );
    write::headers(
        &mut w,
        5,
        &[0x83, 0x86, 0x84, 0x80 | 63],
        true,
        DEFAULT_MAX_FRAME,
    );
    send(&mut c, &w).unwrap();
    let ev = events(&mut c);
    let expects: Vec<bool> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Request { expect, .. } => Some(*expect),
            _ => None,
        })
        .collect();
    assert_eq!(expects, [true, true, false], "{ev:?}");
}

/// An interim `100` leaves the stream waiting for its final answer: no DATA before that,
/// no END_STREAM on it, and none once the final answer went.
#[test]
fn an_interim_answer_comes_before_the_final_one_only() {
    let post: Vec<(&str, &str)> = GET
        .iter()
        .map(|&(n, v)| if n == ":method" { (n, "POST") } else { (n, v) })
        .collect();
    let mut c = open(Config::default());
    send(&mut c, &headers(1, &post, false)).unwrap();
    events(&mut c);
    let none = HeaderMap::new();
    assert!(!c.send_headers(1, StatusCode::CONTINUE, &none, true));
    assert!(c.send_headers(1, StatusCode::CONTINUE, &none, false));
    assert_eq!(
        c.send_data(1, b"early", false),
        0,
        "no DATA before the final head"
    );
    assert!(c.send_headers(1, StatusCode::OK, &none, false));
    assert!(!c.send_headers(1, StatusCode::CONTINUE, &none, false));
    assert_eq!(c.send_data(1, b"done", true), 4);
    let out = frames(c.output());
    let statuses: Vec<(Vec<u8>, bool)> = out
        .iter()
        .filter_map(|f| match f {
            Frame::Headers {
                block, end_stream, ..
            } => {
                let mut status = Vec::new();
                Decoder::new(4096)
                    .decode(block, |n, v, _| {
                        if n == b":status" {
                            status = v.to_vec();
                        }
                    })
                    .unwrap();
                Some((status, *end_stream))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [(b"100".to_vec(), false), (b"200".to_vec(), false)],
        "{out:?}"
    );
}
