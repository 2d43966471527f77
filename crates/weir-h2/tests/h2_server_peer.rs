//! weir-h2's client connection against a real HTTP/2 server: the `h2` crate's. Its server
//! encodes with an indexing HPACK encoder and Huffman strings, sends SETTINGS of its own
//! (a stream limit, a small window), and answers with bodies larger than the windows and
//! trailers: all of which the client must read, and whose windows it must keep.

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use weir_h2::client::{Config, Event, H2ClientConnection, OpenError, Target};

/// A server on the `h2` crate: every request is answered with its body echoed back
/// `repeat` times, then trailers naming the stream's path.
async fn server(io: DuplexStream, repeat: usize) {
    let mut conn = h2::server::Builder::new()
        .max_concurrent_streams(3)
        .initial_window_size(1000)
        .handshake::<_, Bytes>(io)
        .await
        .unwrap();
    while let Some(r) = conn.accept().await {
        let (req, mut respond) = r.unwrap();
        tokio::spawn(async move {
            let path = req.uri().path().to_owned();
            let mut body = req.into_body();
            let mut got = Vec::new();
            while let Some(d) = body.data().await {
                let d = d.unwrap();
                body.flow_control().release_capacity(d.len()).unwrap();
                got.extend_from_slice(&d);
            }
            let resp = Response::builder()
                .status(StatusCode::OK)
                .header("x-path", &path)
                .body(())
                .unwrap();
            let mut send = respond.send_response(resp, false).unwrap();
            let all = got.repeat(repeat);
            send.reserve_capacity(all.len());
            let mut rest = Bytes::from(all);
            while !rest.is_empty() {
                let cap = std::future::poll_fn(|cx| send.poll_capacity(cx))
                    .await
                    .unwrap()
                    .unwrap();
                let chunk = rest.split_to(cap.min(rest.len()));
                send.send_data(chunk, false).unwrap();
            }
            let mut t = HeaderMap::new();
            t.insert("x-done", HeaderValue::from_str(&path).unwrap());
            send.send_trailers(t).unwrap();
        });
    }
}

/// What one stream got back.
#[derive(Default, Debug)]
struct Answer {
    status: Option<StatusCode>,
    path: String,
    body: Vec<u8>,
    trailer: String,
}

#[tokio::test]
async fn requests_with_bodies_and_answers_larger_than_the_windows() {
    let (client_io, server_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(server(server_io, 300));
    let mut io = client_io;
    let mut c = H2ClientConnection::new(Config {
        max_header_list: 16 * 1024,
        stream_window: 65_535,
        connection_window: 65_535,
    });
    let mut buf = BytesMut::new();
    // The server's SETTINGS first, so that its stream limit is known.
    while c.peer_max_streams() == u32::MAX {
        io.write_all(&std::mem::take(c.output())).await.unwrap();
        io.read_buf(&mut buf).await.unwrap();
        c.recv(&mut buf).unwrap();
    }
    assert_eq!(c.peer_max_streams(), 3);
    let mut streams = Vec::new();
    for i in 0..3 {
        let path = format!("/echo/{i}");
        let mut h = HeaderMap::new();
        h.insert("user-agent", HeaderValue::from_static("weir-h2 test"));
        let id = c
            .send_request(
                Target {
                    method: b"POST",
                    scheme: b"http",
                    authority: b"example.com",
                    path: path.as_bytes(),
                },
                &h,
                [],
                false,
            )
            .unwrap();
        streams.push((id, format!("body of {i} ").repeat(200).into_bytes(), 0usize));
    }
    let full = c.send_request(
        Target {
            method: b"GET",
            scheme: b"http",
            authority: b"example.com",
            path: b"/",
        },
        &HeaderMap::new(),
        [],
        true,
    );
    assert_eq!(full, Err(OpenError::Full));
    let mut answers: Vec<Answer> = (0..3).map(|_| Answer::default()).collect();
    let mut ended = 0;
    while ended < 3 {
        // Request bodies as the server's (small) windows allow.
        for (id, body, sent) in &mut streams {
            if *sent < body.len() {
                *sent += c.send_data(*id, &body[*sent..], true);
            }
        }
        let out = std::mem::take(c.output());
        if !out.is_empty() {
            io.write_all(&out).await.unwrap();
        }
        let n = io.read_buf(&mut buf).await.unwrap();
        assert!(n > 0, "the server closed the connection");
        c.recv(&mut buf).unwrap();
        while let Some(ev) = c.next_event() {
            let slot = |s: u32| (s as usize - 1) / 2;
            match ev {
                Event::Response { stream, head, .. } => {
                    let a = &mut answers[slot(stream)];
                    a.status = Some(head.status);
                    a.path = head.headers["x-path"].to_str().unwrap().to_owned();
                }
                Event::Data { stream, data, .. } => {
                    answers[slot(stream)].body.extend_from_slice(&data);
                    c.release(stream, data.len());
                }
                Event::Trailers { stream, fields } => {
                    answers[slot(stream)].trailer = fields["x-done"].to_str().unwrap().to_owned();
                    ended += 1;
                }
                Event::Window { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    for (i, a) in answers.iter().enumerate() {
        let body = streams[i].1.repeat(300);
        assert_eq!(a.status, Some(StatusCode::OK));
        assert_eq!(a.path, format!("/echo/{i}"));
        assert_eq!(a.trailer, format!("/echo/{i}"));
        assert_eq!(a.body.len(), body.len(), "stream {i}");
        assert!(a.body == body, "stream {i}'s body");
    }
    assert_eq!(c.open_streams(), 0);
}
