//! Frames written then read back, and every §6 rule a frame alone can break.

use bytes::{Bytes, BytesMut};

use super::write;
use super::*;
use crate::Reason;

fn one(bytes: &[u8]) -> Result<Option<Frame>, Error> {
    read(&mut BytesMut::from(bytes), DEFAULT_MAX_FRAME)
}

fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    write::head(&mut v, payload.len(), kind, flags, stream);
    v.extend_from_slice(payload);
    v
}

fn conn_err(bytes: &[u8]) -> Reason {
    match one(bytes) {
        Err(Error::Connection(r, _)) => r,
        other => panic!("expected a connection error, got {other:?}"),
    }
}

fn stream_err(bytes: &[u8]) -> (u32, Reason) {
    match one(bytes) {
        Err(Error::Stream(s, r, _)) => (s, r),
        other => panic!("expected a stream error, got {other:?}"),
    }
}

#[test]
fn written_frames_read_back() {
    let mut w = Vec::new();
    write::settings(
        &mut w,
        &[
            (Setting::MaxConcurrentStreams, 100),
            (Setting::InitialWindowSize, 65_535),
        ],
    );
    write::settings_ack(&mut w);
    write::ping(&mut w, true, *b"12345678");
    write::goaway(&mut w, 7, Reason::ENHANCE_YOUR_CALM, b"calm");
    write::rst_stream(&mut w, 3, Reason::CANCEL);
    write::window_update(&mut w, 0, 1 << 20);
    write::headers(&mut w, 1, b"abc", true, DEFAULT_MAX_FRAME);
    write::data(&mut w, 1, b"hello", true);
    let mut buf = BytesMut::from(&w[..]);
    let mut got = Vec::new();
    while let Some(f) = read(&mut buf, DEFAULT_MAX_FRAME).unwrap() {
        got.push(f);
    }
    assert!(buf.is_empty());
    assert_eq!(
        got,
        vec![
            Frame::Settings(Settings {
                max_concurrent_streams: Some(100),
                initial_window_size: Some(65_535),
                ..Settings::default()
            }),
            Frame::SettingsAck,
            Frame::Ping {
                ack: true,
                payload: *b"12345678"
            },
            Frame::GoAway {
                last_stream: 7,
                code: 0xb,
                debug: Bytes::from_static(b"calm")
            },
            Frame::RstStream {
                stream: 3,
                code: 0x8
            },
            Frame::WindowUpdate {
                stream: 0,
                increment: 1 << 20
            },
            Frame::Headers {
                stream: 1,
                block: Bytes::from_static(b"abc"),
                end_stream: true,
                end_headers: true
            },
            Frame::Data {
                stream: 1,
                data: Bytes::from_static(b"hello"),
                end_stream: true,
                flow_len: 5
            },
        ]
    );
}

#[test]
fn a_large_block_goes_in_continuation_frames() {
    let block: Vec<u8> = (0..40_000u32).map(|i| i as u8).collect();
    let mut w = Vec::new();
    write::headers(&mut w, 5, &block, false, DEFAULT_MAX_FRAME);
    let mut buf = BytesMut::from(&w[..]);
    let mut joined = Vec::new();
    let mut kinds = Vec::new();
    while let Some(f) = read(&mut buf, DEFAULT_MAX_FRAME).unwrap() {
        match f {
            Frame::Headers {
                block,
                end_headers,
                end_stream,
                ..
            } => {
                assert!(!end_stream);
                kinds.push(("headers", end_headers));
                joined.extend_from_slice(&block);
            }
            Frame::Continuation {
                block, end_headers, ..
            } => {
                kinds.push(("continuation", end_headers));
                joined.extend_from_slice(&block);
            }
            f => panic!("{f:?}"),
        }
    }
    assert_eq!(joined, block);
    assert_eq!(
        kinds,
        vec![
            ("headers", false),
            ("continuation", false),
            ("continuation", true)
        ]
    );
}

#[test]
fn a_frame_is_read_only_once_whole() {
    let mut w = Vec::new();
    write::data(&mut w, 1, b"hello", false);
    let mut buf = BytesMut::from(&w[..4]);
    assert_eq!(read(&mut buf, DEFAULT_MAX_FRAME), Ok(None));
    buf.extend_from_slice(&w[4..w.len() - 1]);
    assert_eq!(read(&mut buf, DEFAULT_MAX_FRAME), Ok(None));
    buf.extend_from_slice(&w[w.len() - 1..]);
    assert!(matches!(
        read(&mut buf, DEFAULT_MAX_FRAME),
        Ok(Some(Frame::Data { .. }))
    ));
}

#[test]
fn padding_and_priority_are_taken_off() {
    // DATA, padded: Pad Length 3, "hi", 3 bytes of padding.
    let f = one(&raw(kind::DATA, flag::PADDED, 1, b"\x03hi\0\0\0"))
        .unwrap()
        .unwrap();
    assert_eq!(
        f,
        Frame::Data {
            stream: 1,
            data: Bytes::from_static(b"hi"),
            end_stream: false,
            flow_len: 6
        }
    );
    // HEADERS, padded and with a priority block (parent 3, weight 16).
    let f = one(&raw(
        kind::HEADERS,
        flag::PADDED | flag::PRIORITY | flag::END_HEADERS,
        1,
        b"\x01\x00\x00\x00\x03\x10abc\0",
    ))
    .unwrap()
    .unwrap();
    assert_eq!(
        f,
        Frame::Headers {
            stream: 1,
            block: Bytes::from_static(b"abc"),
            end_stream: false,
            end_headers: true
        }
    );
}

#[test]
fn frame_rules_are_checked() {
    let max = DEFAULT_MAX_FRAME as usize;
    let p = Reason::PROTOCOL_ERROR;
    let size = Reason::FRAME_SIZE_ERROR;
    // Larger than SETTINGS_MAX_FRAME_SIZE: refused from the header alone.
    let big = raw(kind::DATA, 0, 1, &vec![0; max + 1]);
    assert_eq!(conn_err(&big[..HEAD_LEN]), size);
    // Frames that belong on a stream, on stream 0.
    for k in [
        kind::DATA,
        kind::HEADERS,
        kind::PRIORITY,
        kind::RST_STREAM,
        kind::PUSH_PROMISE,
        kind::CONTINUATION,
    ] {
        assert_eq!(conn_err(&raw(k, 0, 0, &[0; 5])), p, "type {k}");
    }
    // Frames that belong to the connection, on a stream.
    assert_eq!(conn_err(&raw(kind::SETTINGS, 0, 1, &[])), p);
    assert_eq!(conn_err(&raw(kind::PING, 0, 1, &[0; 8])), p);
    assert_eq!(conn_err(&raw(kind::GOAWAY, 0, 1, &[0; 8])), p);
    // Sizes.
    assert_eq!(conn_err(&raw(kind::SETTINGS, flag::ACK, 0, &[0])), size);
    assert_eq!(conn_err(&raw(kind::SETTINGS, 0, 0, &[0; 5])), size);
    assert_eq!(conn_err(&raw(kind::PING, 0, 0, &[0; 7])), size);
    assert_eq!(conn_err(&raw(kind::GOAWAY, 0, 0, &[0; 7])), size);
    assert_eq!(conn_err(&raw(kind::RST_STREAM, 0, 1, &[0; 3])), size);
    assert_eq!(conn_err(&raw(kind::WINDOW_UPDATE, 0, 1, &[0; 5])), size);
    assert_eq!(stream_err(&raw(kind::PRIORITY, 0, 1, &[0; 4])), (1, size));
    assert_eq!(
        conn_err(&raw(kind::HEADERS, flag::PRIORITY, 1, &[0; 4])),
        size
    );
    // Padding as long as the payload, or a padded frame with no Pad Length.
    assert_eq!(conn_err(&raw(kind::DATA, flag::PADDED, 1, b"\x03ab")), p);
    assert_eq!(conn_err(&raw(kind::DATA, flag::PADDED, 1, b"")), size);
    assert_eq!(
        conn_err(&raw(kind::HEADERS, flag::PADDED, 1, b"\x05abc")),
        p
    );
    // A stream depending on itself.
    assert_eq!(
        stream_err(&raw(kind::PRIORITY, 0, 3, b"\x00\x00\x00\x03\x10")),
        (3, p)
    );
    assert_eq!(
        stream_err(&raw(
            kind::HEADERS,
            flag::PRIORITY,
            3,
            b"\x00\x00\x00\x03\x10ab"
        )),
        (3, p)
    );
    // A zero window increment: the stream's error on a stream, the connection's on 0.
    assert_eq!(stream_err(&raw(kind::WINDOW_UPDATE, 0, 5, &[0; 4])), (5, p));
    assert_eq!(conn_err(&raw(kind::WINDOW_UPDATE, 0, 0, &[0; 4])), p);
    // Unknown types are read and skipped.
    assert_eq!(
        one(&raw(0x42, 0xff, 9, b"x")).unwrap(),
        Some(Frame::Unknown {
            kind: 0x42,
            stream: 9
        })
    );
}

#[test]
fn settings_values_are_checked() {
    let s = |id: u16, v: u32| {
        let mut p = id.to_be_bytes().to_vec();
        p.extend_from_slice(&v.to_be_bytes());
        raw(kind::SETTINGS, 0, 0, &p)
    };
    assert_eq!(conn_err(&s(0x2, 2)), Reason::PROTOCOL_ERROR);
    assert_eq!(conn_err(&s(0x4, 1 << 31)), Reason::FLOW_CONTROL_ERROR);
    assert_eq!(conn_err(&s(0x5, (1 << 14) - 1)), Reason::PROTOCOL_ERROR);
    assert_eq!(conn_err(&s(0x5, 1 << 24)), Reason::PROTOCOL_ERROR);
    assert_eq!(conn_err(&s(0x8, 2)), Reason::PROTOCOL_ERROR);
    // An unknown identifier is ignored; the last value of one given twice counts.
    let mut p = s(0x99, 7);
    p.extend_from_slice(&s(0x3, 1)[HEAD_LEN..]);
    p.extend_from_slice(&s(0x3, 2)[HEAD_LEN..]);
    p[2] = 18;
    assert_eq!(
        one(&p).unwrap(),
        Some(Frame::Settings(Settings {
            max_concurrent_streams: Some(2),
            ..Settings::default()
        }))
    );
    let all = Settings {
        header_table_size: Some(0),
        enable_push: Some(false),
        max_concurrent_streams: Some(100),
        initial_window_size: Some(1 << 20),
        max_frame_size: Some(1 << 20),
        max_header_list_size: Some(1 << 16),
        enable_connect_protocol: Some(true),
    };
    let mut w = Vec::new();
    write::settings(&mut w, &all.pairs());
    assert_eq!(one(&w).unwrap(), Some(Frame::Settings(all)));
}

/// Only a HEADERS frame that is all there and holds a whole block and nothing else is taken
/// in place; every other is left to `read`, with its checks.
#[test]
fn only_plain_whole_headers_are_decoded_in_place() {
    let (h, eh, es) = (kind::HEADERS, flag::END_HEADERS, flag::END_STREAM);
    let f = raw(h, eh | es, 3, b"\x82\x84");
    assert_eq!(whole_headers(&f, DEFAULT_MAX_FRAME), Some((3, true, 9..11)));
    let f = raw(h, eh, 5, b"\x82");
    assert_eq!(
        whole_headers(&f, DEFAULT_MAX_FRAME),
        Some((5, false, 9..10))
    );
    for f in [
        raw(h, 0, 3, b"\x82"),                         // CONTINUATION follows
        raw(h, eh | flag::PADDED, 3, b"\x01\x82\x00"), // padded
        raw(h, eh | flag::PRIORITY, 3, b"\x00\x00\x00\x01\x10\x82"), // priority
        raw(h, eh, 0, b"\x82"),                        // stream 0: read's error
        raw(kind::DATA, es, 3, b"ab"),                 // not HEADERS
    ] {
        assert_eq!(whole_headers(&f, DEFAULT_MAX_FRAME), None, "{f:?}");
    }
    let f = raw(h, eh, 3, b"\x82\x84");
    assert_eq!(
        whole_headers(&f[..10], DEFAULT_MAX_FRAME),
        None,
        "not all there"
    );
    assert_eq!(
        whole_headers(&f, 1),
        None,
        "larger than allowed: read's error"
    );
}
