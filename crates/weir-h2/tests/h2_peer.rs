//! The frames and header blocks of this crate against a real HTTP/2 peer: the `h2` crate's
//! client sends requests (Huffman strings, an indexing encoder, a field block split into
//! CONTINUATION frames) to a server made of `weir_h2::frame` and `weir_h2::hpack` alone, and
//! must read that server's responses (static indexes and plain literals, a field block split
//! the same way, DATA) as a server on the `h2` crate would have sent them.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use weir_h2::frame::{self, write, Frame, Setting, DEFAULT_MAX_FRAME};
use weir_h2::hpack::{encode, Decoder};

/// One request as the server read it.
#[derive(Debug)]
struct Got {
    stream: u32,
    fields: Vec<(String, String)>,
    body: Vec<u8>,
}

/// The minimal server side: reads the preface and frames until a whole request (its field
/// block and its body to END_STREAM) is in, answering SETTINGS as it goes.
async fn next_request(io: &mut DuplexStream, buf: &mut BytesMut, hpack: &mut Decoder) -> Got {
    let mut block = Vec::new();
    let mut got = Got {
        stream: 0,
        fields: Vec::new(),
        body: Vec::new(),
    };
    loop {
        let f = loop {
            if let Some(f) = frame::read(buf, DEFAULT_MAX_FRAME).expect("a valid frame") {
                break f;
            }
            let n = io.read_buf(buf).await.unwrap();
            assert!(n > 0, "the client closed the connection");
        };
        let mut end_headers = false;
        let mut end_stream = false;
        match f {
            Frame::Settings(_) => {
                let mut out = Vec::new();
                write::settings_ack(&mut out);
                io.write_all(&out).await.unwrap();
            }
            Frame::Headers {
                stream,
                block: b,
                end_stream: es,
                end_headers: eh,
            } => {
                got.stream = stream;
                block.extend_from_slice(&b);
                (end_headers, end_stream) = (eh, es);
            }
            Frame::Continuation {
                block: b,
                end_headers: eh,
                ..
            } => {
                block.extend_from_slice(&b);
                end_headers = eh;
            }
            Frame::Data {
                data,
                end_stream: es,
                ..
            } => {
                got.body.extend_from_slice(&data);
                end_stream = es;
            }
            Frame::SettingsAck | Frame::WindowUpdate { .. } | Frame::Priority { .. } => {}
            other => panic!("unexpected frame {other:?}"),
        }
        if end_headers {
            hpack
                .decode(&block, |n, v, _| {
                    got.fields.push((
                        String::from_utf8(n.to_vec()).unwrap(),
                        String::from_utf8(v.to_vec()).unwrap(),
                    ))
                })
                .expect("the h2 crate's block decodes");
        }
        if end_stream {
            return got;
        }
    }
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn the_h2_crate_and_these_frames_understand_each_other() {
    let (client_io, mut io) = tokio::io::duplex(1 << 20);
    let long = "x".repeat(20_000);
    let long_c = long.clone();
    let client = tokio::spawn(async move {
        let (send, conn) = h2::client::handshake(client_io).await.unwrap();
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut answers = Vec::new();
        for (i, path) in ["/a/b?c=d", "/a/b?c=e"].into_iter().enumerate() {
            let mut send = send.clone().ready().await.unwrap();
            let mut req = http::Request::builder()
                .method("POST")
                .uri(format!("http://example.com{path}"))
                .header("user-agent", "weir-h2-peer-test")
                .header("x-request", i.to_string());
            if i == 1 {
                req = req.header("x-long", &long_c);
            }
            let (resp, mut body) = send.send_request(req.body(()).unwrap(), false).unwrap();
            body.send_data(Bytes::from_static(b"ping"), true).unwrap();
            let (parts, mut body) = resp.await.unwrap().into_parts();
            let mut data = Vec::new();
            while let Some(chunk) = body.data().await {
                let chunk = chunk.unwrap();
                body.flow_control().release_capacity(chunk.len()).unwrap();
                data.extend_from_slice(&chunk);
            }
            answers.push((parts, data));
        }
        answers
    });

    // The preface, then our SETTINGS.
    let mut buf = BytesMut::new();
    while buf.len() < frame::PREFACE.len() {
        io.read_buf(&mut buf).await.unwrap();
    }
    assert_eq!(&buf[..frame::PREFACE.len()], frame::PREFACE);
    let _ = buf.split_to(frame::PREFACE.len());
    let mut out = Vec::new();
    write::settings(&mut out, &[(Setting::MaxConcurrentStreams, 10)]);
    io.write_all(&out).await.unwrap();

    let mut hpack = Decoder::new(4096);
    for i in 0..2 {
        let req = next_request(&mut io, &mut buf, &mut hpack).await;
        let f = &req.fields;
        assert_eq!(field(f, ":method"), Some("POST"));
        assert_eq!(field(f, ":scheme"), Some("http"));
        assert_eq!(field(f, ":authority"), Some("example.com"));
        let path = ["/a/b?c=d", "/a/b?c=e"][i];
        assert_eq!(field(f, ":path"), Some(path));
        assert_eq!(field(f, "user-agent"), Some("weir-h2-peer-test"));
        assert_eq!(field(f, "x-request"), Some(i.to_string().as_str()));
        assert_eq!(field(f, "x-long"), (i == 1).then_some(long.as_str()));
        assert_eq!(req.body, b"ping");

        // The answer: a status not in the static table on the second, a field block larger
        // than a frame (CONTINUATION), a sensitive field, and a body.
        let mut block = Vec::new();
        encode::status(&mut block, if i == 0 { 200 } else { 418 });
        encode::field(&mut block, b"content-type", b"text/plain", false);
        encode::field(&mut block, b"set-cookie", b"s=1", true);
        encode::field(&mut block, b"x-answer", long.as_bytes(), false);
        let mut out = Vec::new();
        write::headers(&mut out, req.stream, &block, false, DEFAULT_MAX_FRAME);
        write::data(&mut out, req.stream, b"pong", true);
        io.write_all(&out).await.unwrap();
    }

    let answers = client.await.unwrap();
    for (i, (parts, data)) in answers.iter().enumerate() {
        assert_eq!(parts.status.as_u16(), if i == 0 { 200 } else { 418 });
        assert_eq!(parts.headers["content-type"], "text/plain");
        assert_eq!(parts.headers["set-cookie"], "s=1");
        assert_eq!(parts.headers["x-answer"], long.as_str());
        assert_eq!(data, b"pong");
    }
}
