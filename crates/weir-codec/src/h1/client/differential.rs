//! The codec against hyper's client: the same response bytes, sent by a
//! loopback backend whole or a byte at a time, must give the same status,
//! headers and body (or fail in both), except where weir is deliberately
//! stricter. Also the whole response path (head, then body) fed in two
//! pieces split at every byte.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{send, H1ClientConnection, Payload};
use weir_h1::decode::Decoder;
use weir_h1::fields::only_persistence;
use weir_h1::response as parse;

/// What a client made of a response.
#[derive(Debug, PartialEq)]
enum Seen {
    /// Status, reason phrase when not the usual one, headers, body.
    Ok(StatusCode, Option<Vec<u8>>, Vec<(String, Vec<u8>)>, Vec<u8>),
    Failed,
}

/// Where weir parts from hyper on purpose.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    Same,
    /// weir refuses what hyper accepts.
    WeirRejects,
}

const CASES: &[(&str, &str, Expect)] = &[
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: 1\r\nX-A: 2\r\n\r\nhello", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\nhello", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\nhello", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: +5\r\n\r\nhello", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: abc\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\nA;a=b\r\n0123456789\r\n1 ; x\r\n!\r\n0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nx-sum: 3\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n00003\r\nabc\r\n000\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10000000000000000\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nuntil the end", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked, gzip\r\n\r\nraw", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n", Expect::WeirRejects),
    ("GET", "HTTP/1.1 200 OK\r\n\r\nclose-delimited body", Expect::Same),
    ("GET", "HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok", Expect::Same),
    ("GET", "HTTP/1.0 200 OK\r\n\r\nten-style", Expect::Same),
    ("GET", "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", Expect::Same),
    ("GET", "HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n", Expect::WeirRejects),
    ("HEAD", "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n", Expect::Same),
    ("HEAD", "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 204 No Content\r\ncontent-length: 4\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 304 Not Modified\r\netag: \"x\"\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 404 Nicht Gefunden\r\ncontent-length: 1\r\n\r\n!", Expect::Same),
    ("GET", "HTTP/1.1 200 \r\ncontent-length: 1\r\n\r\n!", Expect::Same),
    ("GET", "HTTP/1.1 599 Custom\r\ncontent-length: 1\r\n\r\n!", Expect::Same),
    ("GET", "HTTP/1.1 099 Low\r\ncontent-length: 1\r\n\r\n!", Expect::Same),
    ("GET", "\r\nHTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n!", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\ncontent-length: 2\n\nok", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nx-bin: caf\u{e9}\t1\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nx-fold: a\r\n b\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nx-space : a\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nx-empty:\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nx-ctl: a\x01b\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/2 200 OK\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 20 OK\r\ncontent-length: 0\r\n\r\n", Expect::Same),
    ("GET", "not http at all\r\n\r\n", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA", Expect::Same),
    ("GET", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n", Expect::Same),
    ("GET", "", Expect::Same),
];

/// A backend that reads one request head, answers `response` (whole or a
/// byte at a time), then closes its side.
async fn backend(response: Vec<u8>, bytewise: bool) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let _ = s.set_nodelay(true);
        let mut req = Vec::new();
        let mut b = [0u8; 1024];
        while !req.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut b).await {
                Ok(0) | Err(_) => return,
                Ok(n) => req.extend_from_slice(&b[..n]),
            }
        }
        if bytewise {
            for byte in &response {
                if s.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
        } else if s.write_all(&response).await.is_err() {
            return;
        }
        let _ = s.shutdown().await;
        // Until the client is done.
        while let Ok(n) = s.read(&mut b).await {
            if n == 0 {
                break;
            }
        }
    });
    addr
}

fn request(method: &str) -> Request<Empty<Bytes>> {
    Request::builder()
        .method(method)
        .uri("/x")
        .header("host", "backend")
        .body(Empty::new())
        .unwrap()
}

/// The fields, but a `Connection` line that says only `close` or `keep-alive`: weir's codec
/// reads it and leaves it out of the map (`fold_connection`), where hyper keeps it; both
/// drop it before the response goes on, as a hop-by-hop field.
fn headers(h: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    h.iter()
        .filter(|(k, v)| *k != http::header::CONNECTION || !only_persistence(v.as_bytes()))
        .map(|(k, v)| (k.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect()
}

fn reason(e: &http::Extensions) -> Option<Vec<u8>> {
    e.get::<hyper::ext::ReasonPhrase>()
        .map(|r| r.as_bytes().to_vec())
}

async fn with_weir(method: &str, response: &[u8], bytewise: bool) -> Seen {
    let addr = backend(response.to_vec(), bytewise).await;
    let conn = H1ClientConnection::new(weir_transport::UpstreamStream::Plain(
        TcpStream::connect(addr).await.unwrap(),
    ));
    let (parts, _) = request(method).into_parts();
    let Ok(resp) = send(
        conn,
        &parts,
        Payload::<Empty<Bytes>>::Bytes(Bytes::new()),
        std::time::Instant::now() + std::time::Duration::from_secs(60),
    )
    .await
    else {
        return Seen::Failed;
    };
    let (p, body) = resp.into_parts();
    match body.collect().await {
        Ok(b) => Seen::Ok(
            p.status,
            reason(&p.extensions),
            headers(&p.headers),
            b.to_bytes().to_vec(),
        ),
        Err(_) => Seen::Failed,
    }
}

async fn with_hyper(method: &str, response: &[u8], bytewise: bool) -> Seen {
    let addr = backend(response.to_vec(), bytewise).await;
    let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
    let (mut tx, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(conn);
    let Ok(resp) = tx.send_request(request(method)).await else {
        return Seen::Failed;
    };
    let (p, body) = resp.into_parts();
    match body.collect().await {
        Ok(b) => Seen::Ok(
            p.status,
            reason(&p.extensions),
            headers(&p.headers),
            b.to_bytes().to_vec(),
        ),
        Err(_) => Seen::Failed,
    }
}

#[tokio::test]
async fn agrees_with_hyper() {
    let limit = Duration::from_secs(5);
    for (method, response, expect) in CASES {
        for bytewise in [false, true] {
            let what = format!("{method} {response:?} bytewise={bytewise}");
            let ours =
                tokio::time::timeout(limit, with_weir(method, response.as_bytes(), bytewise))
                    .await
                    .unwrap_or_else(|_| panic!("weir hung on {what}"));
            let theirs =
                tokio::time::timeout(limit, with_hyper(method, response.as_bytes(), bytewise))
                    .await
                    .unwrap_or_else(|_| panic!("hyper hung on {what}"));
            match expect {
                Expect::Same => assert_eq!(ours, theirs, "{what}"),
                Expect::WeirRejects => {
                    assert_eq!(ours, Seen::Failed, "{what}");
                    assert_ne!(theirs, Seen::Failed, "{what}");
                }
            }
        }
    }
}

/// The head parser and the body decoder together, on `input` in pieces.
fn read_all(
    method: &Method,
    pieces: &[&[u8]],
) -> Result<Option<(StatusCode, Vec<u8>, bool)>, super::Error> {
    let mut buf = BytesMut::new();
    let mut head = None;
    let mut body = Vec::new();
    let mut decoder = Decoder::Done;
    for piece in pieces {
        buf.extend_from_slice(piece);
        if head.is_none() {
            match parse::parse(&mut buf, method)? {
                Some(h) => {
                    decoder = h.decoder;
                    head = Some(h.parts.status);
                }
                None => continue,
            }
        }
        while let Some(d) = decoder.decode(&mut buf)? {
            body.extend_from_slice(&d);
        }
    }
    Ok(head.map(|s| (s, body, decoder.is_done())))
}

#[test]
fn every_split_of_a_response_reads_the_same() {
    let responses: &[&[u8]] = &[
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 11\r\nx: y\r\n\r\nhello world",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nt: 1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\n\r\n",
    ];
    for r in responses {
        let whole = read_all(&Method::GET, &[r]).unwrap().unwrap();
        assert!(whole.2, "{:?}", String::from_utf8_lossy(r));
        for cut in 0..=r.len() {
            let (a, b) = r.split_at(cut);
            assert_eq!(
                read_all(&Method::GET, &[a, b]).unwrap().unwrap(),
                whole,
                "cut {cut}"
            );
        }
        let bytes: Vec<&[u8]> = r.chunks(1).collect();
        assert_eq!(read_all(&Method::GET, &bytes).unwrap().unwrap(), whole);
    }
}
