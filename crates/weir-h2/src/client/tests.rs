//! The client connection against this crate's server connection (each one's output is the
//! other's input), and against hand-made frames for the rules a well-behaved server never
//! breaks.

use bytes::BytesMut;
use http::{HeaderMap, HeaderValue, StatusCode};

use super::*;
use crate::frame::write;
use crate::hpack::encode;
use crate::server;

const TARGET: Target<'static> = Target {
    method: b"POST",
    scheme: b"http",
    authority: b"example.com",
    path: b"/svc/Call",
};

/// Moves every byte each side has written to the other, until neither has more.
fn pump(c: &mut H2ClientConnection, s: &mut server::H2ServerConnection) {
    loop {
        let to_server = std::mem::take(c.output());
        let to_client = std::mem::take(s.output());
        if to_server.is_empty() && to_client.is_empty() {
            return;
        }
        s.recv(&mut BytesMut::from(&to_server[..])).unwrap();
        c.recv(&mut BytesMut::from(&to_client[..])).unwrap();
    }
}

fn pair() -> (H2ClientConnection, server::H2ServerConnection) {
    let mut c = H2ClientConnection::new(Config::default());
    let mut s = server::H2ServerConnection::new(server::Config::default());
    pump(&mut c, &mut s);
    (c, s)
}

fn events(c: &mut H2ClientConnection) -> Vec<Event> {
    std::iter::from_fn(|| c.next_event()).collect()
}

/// A client that has read a server's SETTINGS (as `frames` gives them), its output taken.
fn alone(settings: &[(crate::frame::Setting, u32)]) -> H2ClientConnection {
    let mut c = H2ClientConnection::new(Config::default());
    let mut w = Vec::new();
    write::settings(&mut w, settings);
    c.recv(&mut BytesMut::from(&w[..])).unwrap();
    c.output().clear();
    events(&mut c);
    c
}

fn response_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (n, v) in fields {
        encode::field(&mut b, n.as_bytes(), v.as_bytes(), false);
    }
    b
}

fn feed(c: &mut H2ClientConnection, f: impl FnOnce(&mut Vec<u8>)) -> Result<(), ConnectionError> {
    let mut w = Vec::new();
    f(&mut w);
    c.recv(&mut BytesMut::from(&w[..]))
}

fn reset_code(c: &mut H2ClientConnection, id: StreamId) -> Option<Reason> {
    events(c).into_iter().find_map(|e| match e {
        Event::Reset { stream, code, .. } if stream == id => Some(code),
        _ => None,
    })
}

#[test]
fn a_request_and_its_answer_go_both_ways_with_body_and_trailers() {
    let (mut c, mut s) = pair();
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/grpc"));
    h.insert("te", HeaderValue::from_static("trailers"));
    // Fields HTTP/2 does not carry are left out, not sent malformed.
    h.insert("connection", HeaderValue::from_static("keep-alive"));
    h.insert("host", HeaderValue::from_static("example.com"));
    for n in [
        "keep-alive",
        "proxy-connection",
        "upgrade",
        "transfer-encoding",
    ] {
        h.insert(n, HeaderValue::from_static("x"));
    }
    let extra: [(&str, &[u8]); 1] = [("x-forwarded-for", b"192.0.2.1")];
    let id = c.send_request(TARGET, &h, extra, false).unwrap();
    assert_eq!(id, 1);
    assert_eq!(c.send_data(id, b"hello", true), 5);
    pump(&mut c, &mut s);
    let mut got = Vec::new();
    while let Some(e) = s.next_event() {
        got.push(e);
    }
    let server::Event::Request { head, .. } = &got[0] else {
        panic!("{got:?}")
    };
    assert_eq!(head.method, http::Method::POST);
    assert_eq!(head.uri.to_string(), "http://example.com/svc/Call");
    assert_eq!(head.headers["content-type"], "application/grpc");
    assert_eq!(head.headers["te"], "trailers");
    let names: Vec<&str> = head.headers.keys().map(|n| n.as_str()).collect();
    // The extra fields after the map's.
    assert_eq!(names, ["content-type", "te", "x-forwarded-for"]);
    assert_eq!(head.headers["x-forwarded-for"], "192.0.2.1");
    assert!(
        matches!(&got[1], server::Event::Data { data, end_stream: true, .. } if &data[..] == b"hello")
    );

    let mut rh = HeaderMap::new();
    rh.insert("content-type", HeaderValue::from_static("application/grpc"));
    assert!(s.send_headers(id, StatusCode::OK, &rh, false));
    s.send_data(id, b"world", false);
    let mut t = HeaderMap::new();
    t.insert("grpc-status", HeaderValue::from_static("0"));
    assert!(s.send_trailers(id, &t));
    pump(&mut c, &mut s);
    let ev = events(&mut c);
    assert!(
        matches!(&ev[0], Event::Response { stream: 1, head, end_stream: false } if head.status == 200 && head.headers["content-type"] == "application/grpc"),
        "{ev:?}"
    );
    assert!(matches!(&ev[1], Event::Data { data, end_stream: false, .. } if &data[..] == b"world"));
    assert!(matches!(&ev[2], Event::Trailers { fields, .. } if fields["grpc-status"] == "0"));
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn informational_heads_are_skipped_and_101_is_refused() {
    let mut c = alone(&[]);
    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let early = response_block(&[(":status", "103"), ("link", "</a>")]);
    feed(&mut c, |w| {
        write::headers(w, id, &early, false, DEFAULT_MAX_FRAME)
    })
    .unwrap();
    assert!(events(&mut c).is_empty());
    let fin = response_block(&[(":status", "204")]);
    feed(&mut c, |w| {
        write::headers(w, id, &fin, true, DEFAULT_MAX_FRAME)
    })
    .unwrap();
    assert!(
        matches!(&events(&mut c)[..], [Event::Response { head, end_stream: true, .. }] if head.status == 204)
    );

    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let switching = response_block(&[(":status", "101")]);
    feed(&mut c, |w| {
        write::headers(w, id, &switching, false, DEFAULT_MAX_FRAME)
    })
    .unwrap();
    assert_eq!(reset_code(&mut c, id), Some(Reason::PROTOCOL_ERROR));
}

#[test]
fn malformed_responses_reset_their_stream_only() {
    for fields in [
        &[("content-type", "x")][..],
        &[(":status", "200"), (":path", "/")],
        &[(":status", "200"), (":status", "200")],
        &[(":status", "20")],
        &[(":status", "200"), ("Upper", "x")],
        &[(":status", "200"), ("transfer-encoding", "chunked")],
    ] {
        let mut c = alone(&[]);
        let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
        let b = response_block(fields);
        feed(&mut c, |w| {
            write::headers(w, id, &b, false, DEFAULT_MAX_FRAME)
        })
        .unwrap();
        assert_eq!(
            reset_code(&mut c, id),
            Some(Reason::PROTOCOL_ERROR),
            "{fields:?}"
        );
        assert!(!c.is_closed());
    }
}

#[test]
fn data_must_follow_a_head_and_add_up_to_content_length() {
    let mut c = alone(&[]);
    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    feed(&mut c, |w| write::data(w, id, b"early", false)).unwrap();
    assert_eq!(reset_code(&mut c, id), Some(Reason::PROTOCOL_ERROR));

    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let b = response_block(&[(":status", "200"), ("content-length", "3")]);
    feed(&mut c, |w| {
        write::headers(w, id, &b, false, DEFAULT_MAX_FRAME);
        write::data(w, id, b"four", true);
    })
    .unwrap();
    let ev = events(&mut c);
    assert!(matches!(&ev[0], Event::Response { .. }), "{ev:?}");
    assert!(
        matches!(
            &ev[1],
            Event::Reset {
                code: Reason::PROTOCOL_ERROR,
                by_server: false,
                ..
            }
        ),
        "{ev:?}"
    );
}

#[test]
fn goaway_refuses_the_streams_above_its_last_id_and_new_ones() {
    let mut c = alone(&[]);
    let a = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let b = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    feed(&mut c, |w| write::goaway(w, a, Reason::NO_ERROR, b"")).unwrap();
    assert!(
        matches!(&events(&mut c)[..], [Event::GoAway { last_stream, code: Reason::NO_ERROR }] if *last_stream == a)
    );
    assert_eq!(c.open_streams(), 1, "{b} is gone, {a} runs on");
    assert_eq!(
        c.send_request(TARGET, &HeaderMap::new(), [], true),
        Err(OpenError::GoingAway)
    );
}

#[test]
fn the_servers_stream_limit_and_windows_are_kept() {
    use crate::frame::Setting;
    let mut c = alone(&[
        (Setting::MaxConcurrentStreams, 1),
        (Setting::InitialWindowSize, 4),
    ]);
    assert_eq!(c.peer_max_streams(), 1);
    let id = c
        .send_request(TARGET, &HeaderMap::new(), [], false)
        .unwrap();
    assert_eq!(
        c.send_request(TARGET, &HeaderMap::new(), [], true),
        Err(OpenError::Full)
    );
    assert_eq!(c.send_data(id, b"abcdef", true), 4);
    assert!(c.is_sending(id));
    feed(&mut c, |w| write::window_update(w, id, 10)).unwrap();
    assert!(matches!(&events(&mut c)[..], [Event::Window { stream }] if *stream == id));
    assert_eq!(c.send_data(id, b"ef", true), 2);
    assert!(!c.is_sending(id));
}

#[test]
fn a_response_header_list_past_the_limit_resets_the_stream_and_keeps_nothing() {
    let mut c = H2ClientConnection::new(Config {
        max_header_list: 1024,
        ..Config::default()
    });
    feed(&mut c, |w| write::settings(w, &[])).unwrap();
    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let big = "x".repeat(2000);
    let b = response_block(&[(":status", "200"), ("big", &big)]);
    feed(&mut c, |w| {
        write::headers(w, id, &b, true, DEFAULT_MAX_FRAME)
    })
    .unwrap();
    assert_eq!(reset_code(&mut c, id), Some(Reason::PROTOCOL_ERROR));
}

#[test]
fn a_server_breaking_the_connection_rules_gets_goaway() {
    // Push is disabled.
    let mut c = alone(&[]);
    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let mut w = Vec::new();
    write::head(&mut w, 4, crate::frame::kind::PUSH_PROMISE, 0x4, id);
    w.extend_from_slice(&2u32.to_be_bytes());
    assert!(c.recv(&mut BytesMut::from(&w[..])).is_err());
    assert!(c.is_closed());
    // The first frame must be SETTINGS.
    let mut c = H2ClientConnection::new(Config::default());
    assert!(feed(&mut c, |w| write::ping(w, false, [0; 8])).is_err());
    // A stream never opened.
    let mut c = alone(&[]);
    let b = response_block(&[(":status", "200")]);
    assert!(feed(&mut c, |w| write::headers(
        w,
        5,
        &b,
        true,
        DEFAULT_MAX_FRAME
    ))
    .is_err());
}

#[test]
fn a_refused_stream_is_reported_as_the_servers_reset() {
    let mut c = alone(&[]);
    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    feed(&mut c, |w| write::rst_stream(w, id, Reason::REFUSED_STREAM)).unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Reset {
            code: Reason::REFUSED_STREAM,
            by_server: true,
            ..
        }]
    ));
    assert_eq!(c.open_streams(), 0);
}

#[test]
fn response_data_is_given_back_to_the_windows_once_taken() {
    let (mut c, mut s) = pair();
    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    pump(&mut c, &mut s);
    while s.next_event().is_some() {}
    s.send_headers(id, StatusCode::OK, &HeaderMap::new(), false);
    // The client's default window: 65 535 bytes.
    let body = vec![7u8; 70_000];
    assert_eq!(s.send_data(id, &body, true), 65_535);
    pump(&mut c, &mut s);
    let got: usize = events(&mut c)
        .iter()
        .map(|e| match e {
            Event::Data { data, .. } => data.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(got, 65_535);
    c.release(id, got);
    pump(&mut c, &mut s);
    while s.next_event().is_some() {}
    assert_eq!(s.send_data(id, &body[65_535..], true), 70_000 - 65_535);
    pump(&mut c, &mut s);
    assert!(events(&mut c).iter().any(|e| matches!(
        e,
        Event::Data {
            end_stream: true,
            ..
        }
    )));
}

#[test]
fn a_head_answer_and_a_304_may_say_a_length_without_content() {
    let mut c = alone(&[]);
    let head = Target {
        method: b"HEAD",
        ..TARGET
    };
    let id = c.send_request(head, &HeaderMap::new(), [], true).unwrap();
    let b = response_block(&[(":status", "200"), ("content-length", "1000")]);
    feed(&mut c, |w| {
        write::headers(w, id, &b, true, DEFAULT_MAX_FRAME)
    })
    .unwrap();
    assert!(matches!(
        &events(&mut c)[..],
        [Event::Response {
            end_stream: true,
            ..
        }]
    ));

    let id = c.send_request(TARGET, &HeaderMap::new(), [], true).unwrap();
    let b = response_block(&[(":status", "304"), ("content-length", "1000")]);
    feed(&mut c, |w| {
        write::headers(w, id, &b, false, DEFAULT_MAX_FRAME);
        write::data(w, id, b"", true);
    })
    .unwrap();
    let ev = events(&mut c);
    assert!(matches!(&ev[0], Event::Response { .. }), "{ev:?}");
    assert!(
        matches!(
            &ev[1],
            Event::Data {
                end_stream: true,
                ..
            }
        ),
        "{ev:?}"
    );

    // Content where there should be none is still refused.
    let id = c.send_request(head, &HeaderMap::new(), [], true).unwrap();
    let b = response_block(&[(":status", "200"), ("content-length", "4")]);
    feed(&mut c, |w| {
        write::headers(w, id, &b, false, DEFAULT_MAX_FRAME);
        write::data(w, id, b"body", true);
    })
    .unwrap();
    assert_eq!(reset_code(&mut c, id), Some(Reason::PROTOCOL_ERROR));
}

#[test]
fn a_ping_is_answered_by_the_server_and_not_sent_once_closed() {
    let (mut c, mut s) = pair();
    c.ping(*b"weir-png");
    let mut sent = BytesMut::from(&std::mem::take(c.output())[..]);
    assert_eq!(sent.len(), 9 + 8, "one PING frame");
    s.recv(&mut sent).unwrap();
    let answer = std::mem::take(s.output());
    // The server's answer: PING with ACK and the same payload.
    assert_eq!(&answer[3..5], &[0x6, 0x1], "PING, ACK");
    assert_eq!(&answer[9..], b"weir-png");
    c.recv(&mut BytesMut::from(&answer[..])).unwrap();
    assert!(events(&mut c).is_empty());
    c.go_away(Reason::NO_ERROR);
    c.output().clear();
    c.ping(*b"weir-png");
    assert!(c.output().is_empty(), "no PING after GOAWAY");
}
