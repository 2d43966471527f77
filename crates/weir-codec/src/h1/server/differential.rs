//! The server against hyper's: the same request bytes, sent whole or a byte
//! at a time, must reach the handler as the same requests (method, target,
//! version, header fields in order, body bytes) and be refused or answered
//! alike, except where weir is deliberately stricter (request smuggling:
//! see `parse.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::{run, ReqBody};
use crate::server::{DrainFlags, Serve};
use weir_h1::fields::only_persistence;
use weir_transport::ClientStream;

/// What the handler saw of one request.
type Seen = (
    String,
    String,
    String,
    Vec<(String, Vec<u8>)>,
    Result<Vec<u8>, ()>,
);

/// What came of a byte stream: the requests the handler saw, and whether
/// the server refused something (an error status, or a reset).
#[derive(Debug, PartialEq)]
struct Outcome {
    seen: Vec<Seen>,
    refused: bool,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    Same,
    /// weir refuses what hyper accepts.
    WeirRejects,
}

use Expect::{Same, WeirRejects};

const CASES: &[(&str, Expect)] = &[
    ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", Same),
    ("GET /1 HTTP/1.1\r\nhost: a\r\n\r\nGET /2?x=1 HTTP/1.1\r\nhost: a\r\nX-A: 1\r\nx-a: 2\r\n\r\n", Same),
    ("POST /p HTTP/1.1\r\nhost: a\r\ncontent-length: 5\r\n\r\nhelloGET /after HTTP/1.1\r\n\r\n", Same),
    ("POST /p HTTP/1.1\r\ncontent-length: 5\r\ncontent-length: 5\r\n\r\nhello", Same),
    ("PUT /c HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n1 \r\n!\r\n0\r\nx-t: 1\r\n\r\nGET /n HTTP/1.1\r\n\r\n", Same),
    ("PUT /c HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\nA\r\n0123456789\r\n000\r\n\r\n", Same),
    ("GET /a HTTP/1.0\r\n\r\nGET /not-served HTTP/1.0\r\n\r\n", Same),
    ("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n", Same),
    ("GET /a HTTP/1.1\r\nConnection: close\r\n\r\nGET /not-served HTTP/1.1\r\n\r\n", Same),
    ("GET http://example.com/a?b HTTP/1.1\r\nhost: example.com\r\n\r\n", Same),
    ("OPTIONS * HTTP/1.1\r\n\r\n", Same),
    ("PURGE /x HTTP/1.1\r\n\r\n", Same),
    ("\r\nGET /lead HTTP/1.1\r\n\r\n", Same),
    ("GET /lf HTTP/1.1\nhost: a\n\n", Same),
    ("GET / HTTP/1.1\r\nx-bin: caf\u{e9}\t1\r\nx-empty:\r\nx-sp:   padded   \r\n\r\n", Same),
    ("GET /a\"b HTTP/1.1\r\n\r\n", Same),
    ("GET /%zz HTTP/1.1\r\n\r\n", Same),
    ("POST / HTTP/1.1\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\nok", Same),
    // Malformed: refused by both.
    ("GARBAGE\r\n\r\n", Same),
    ("GET / HTTP/1.1\r\nBad Header\r\n\r\n", Same),
    ("GET / HTTP/1.1\r\nhost : a\r\n\r\n", Same),
    ("GET / HTTP/1.1\r\nx-a: 1\r\n folded\r\n\r\n", Same),
    ("GET / HTTP/2.0\r\n\r\n", Same),
    ("GET / HTTP/1.1\r\nx: a\x01b\r\n\r\n", Same),
    ("POST / HTTP/1.1\r\ncontent-length: -1\r\n\r\n", Same),
    ("POST / HTTP/1.1\r\ncontent-length: +5\r\n\r\nhello", Same),
    ("POST / HTTP/1.1\r\ncontent-length: 5, 5\r\n\r\nhello", Same),
    ("POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab", Same),
    ("POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\nabc", Same),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked, gzip\r\n\r\n", Same),
    ("POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", Same),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", Same),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", Same),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n10000000000000000\r\n", Same),
    // Request smuggling: hyper frames these by their last chunked; weir refuses.
    ("POST / HTTP/1.1\r\ncontent-length: 44\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n", WeirRejects),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n0\r\n\r\n", WeirRejects),
    ("POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n0\r\n\r\n", WeirRejects),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked, chunked\r\n\r\n0\r\n\r\n", WeirRejects),
    ("POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", WeirRejects),
    ("POST / HTTP/1.1\r\ntransfer-encoding: , chunked\r\n\r\n0\r\n\r\n", WeirRejects),
    // An expectation nobody can meet: weir answers 417; hyper passes it on.
    ("POST / HTTP/1.1\r\nexpect: 200-ok\r\ncontent-length: 2\r\n\r\nok", WeirRejects),
    // HTTP/1.0 expectations are ignored by both.
    ("POST / HTTP/1.0\r\nexpect: 200-ok\r\ncontent-length: 2\r\n\r\nok", Same),
];

/// Reads a request whole (as weir's forward does) and notes what it saw.
async fn note<B>(req: Request<B>, seen: &Mutex<Vec<Seen>>) -> Response<Full<Bytes>>
where
    B: http_body::Body<Data = Bytes>,
{
    let (p, body) = req.into_parts();
    // weir's parser leaves out a `Connection` line that says only close or keep-alive
    // (`fold_connection`); hyper keeps it. Neither goes upstream.
    let fields = p
        .headers
        .iter()
        .filter(|(n, v)| *n != http::header::CONNECTION || !only_persistence(v.as_bytes()))
        .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
        .collect();
    let body = match body.collect().await {
        Ok(b) => Ok(b.to_bytes().to_vec()),
        Err(_) => Err(()),
    };
    let s = (
        p.method.to_string(),
        p.uri.to_string(),
        format!("{:?}", p.version),
        fields,
        body,
    );
    seen.lock().unwrap().push(s);
    Response::new(Full::new(Bytes::from_static(b"ok")))
}

struct Noter(Arc<Mutex<Vec<Seen>>>);

impl Serve for Noter {
    type ReqBody = ReqBody;
    type Body = Full<Bytes>;
    async fn call(&self, req: Request<ReqBody>) -> Response<Full<Bytes>> {
        note(req, &self.0).await
    }
}

/// A one-connection server, weir's or hyper's, noting what it sees.
async fn server(weir: bool) -> (std::net::SocketAddr, Arc<Mutex<Vec<Seen>>>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        if weir {
            let s = ClientStream::plain(s.into_std().unwrap());
            run(s, &Noter(s2), &DrainFlags::default(), 64 * 1024).await;
        } else {
            let svc = service_fn(move |req| {
                let seen = s2.clone();
                async move { Ok::<_, std::convert::Infallible>(note(req, &seen).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(s), svc)
                .await;
        }
    });
    (addr, seen)
}

async fn outcome(weir: bool, input: &'static [u8], bytewise: bool) -> Outcome {
    let (addr, seen) = server(weir).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    if bytewise {
        for b in input {
            if s.write_all(&[*b]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    } else {
        let _ = s.write_all(input).await;
    }
    let mut out = Vec::new();
    let mut b = [0u8; 4096];
    let mut reset = false;
    loop {
        match tokio::time::timeout(Duration::from_millis(400), s.read(&mut b)).await {
            Ok(Ok(0)) | Err(_) => break,
            Ok(Ok(n)) => out.extend_from_slice(&b[..n]),
            Ok(Err(_)) => {
                reset = true;
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&out);
    let error_status = ["400", "414", "417", "431", "501"]
        .iter()
        .any(|c| text.contains(&format!("HTTP/1.1 {c} ")));
    let seen = seen.lock().unwrap().clone();
    Outcome {
        seen,
        refused: error_status || reset,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agrees_with_hyper() {
    let mut runs = Vec::new();
    for &(input, expect) in CASES {
        for bytewise in [false, true] {
            runs.push(tokio::spawn(async move {
                let ours = outcome(true, input.as_bytes(), bytewise).await;
                let theirs = outcome(false, input.as_bytes(), bytewise).await;
                (input, expect, bytewise, ours, theirs)
            }));
        }
    }
    for r in runs {
        let (input, expect, bytewise, ours, theirs) = r.await.unwrap();
        let what = format!("{input:?} bytewise={bytewise}");
        match expect {
            Same => assert_eq!(ours, theirs, "{what}"),
            WeirRejects => {
                assert!(ours.refused && ours.seen.is_empty(), "{what}: {ours:?}");
                assert!(!theirs.seen.is_empty(), "{what}: hyper {theirs:?}");
                assert!(
                    theirs.seen.iter().all(|s| s.1 != "/smuggled"),
                    "{what}: hyper {theirs:?}"
                );
            }
        }
    }
}
