//! The server's pieces on their own (heads split at every byte, response
//! framing) and whole connections over loopback with a small handler.

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Version};
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::respond::{self, Asked, Framing, Length};
use super::{run, ReqBody};
use crate::server::{DrainFlags, Serve};
use weir_transport::ClientStream;

fn encode(
    parts: http::response::Parts,
    length: Length,
    asked: Asked,
    keep: bool,
) -> (String, Framing, bool) {
    let mut keep_alive = keep;
    let mut v = Vec::new();
    let f = respond::head(&mut v, &parts, length, asked, &mut keep_alive);
    let s = String::from_utf8(v).unwrap();
    let date = s.find("date: ").unwrap();
    let s = format!(
        "{}{}",
        &s[..date],
        &s[date + 6 + crate::h1::date::LEN + 2..]
    );
    (s, f, keep_alive)
}

fn resp(status: u16, headers: &[(&str, &str)]) -> http::response::Parts {
    let mut b = Response::builder().status(status);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

const GET11: Asked = Asked {
    head: false,
    connect: false,
    http10: false,
};

#[test]
fn response_heads() {
    assert_eq!(
        encode(resp(200, &[("x-a", "1")]), Length::Known(5), GET11, true),
        (
            "HTTP/1.1 200 OK\r\nx-a: 1\r\ncontent-length: 5\r\n\r\n".into(),
            Framing::Length(5),
            true
        )
    );
    // The handler's own length line is kept.
    assert_eq!(
        encode(
            resp(404, &[("content-length", "2")]),
            Length::Known(2),
            GET11,
            true
        )
        .0,
        "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n"
    );
    assert_eq!(
        encode(resp(200, &[]), Length::Unknown, GET11, false),
        (
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".into(),
            Framing::Chunked,
            false
        )
    );
    // HTTP/1.0: no chunking, close-delimited instead; keep-alive said when kept.
    let ten = Asked {
        http10: true,
        ..GET11
    };
    assert_eq!(
        encode(resp(200, &[]), Length::Unknown, ten, true),
        ("HTTP/1.0 200 OK\r\n\r\n".into(), Framing::Close, false)
    );
    assert_eq!(
        encode(resp(200, &[]), Length::Known(1), ten, true),
        (
            "HTTP/1.0 200 OK\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\n".into(),
            Framing::Length(1),
            true
        )
    );
    // A backend's HTTP/1.0 answer (its connection closing) does not close the client's.
    let mut old = resp(200, &[]);
    old.version = Version::HTTP_10;
    assert_eq!(
        encode(old, Length::Known(1), ten, true),
        (
            "HTTP/1.0 200 OK\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\n".into(),
            Framing::Length(1),
            true
        )
    );
    // No body after HEAD, 204, 304; HEAD keeps the length it was given.
    let head = Asked {
        head: true,
        ..GET11
    };
    assert_eq!(
        encode(
            resp(200, &[("content-length", "10")]),
            Length::None,
            head,
            true
        ),
        (
            "HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n".into(),
            Framing::Nothing,
            true
        )
    );
    assert_eq!(
        encode(resp(200, &[]), Length::Known(9), head, true).1,
        Framing::Nothing
    );
    assert_eq!(
        encode(resp(204, &[]), Length::None, GET11, true).0,
        "HTTP/1.1 204 No Content\r\n\r\n"
    );
    assert_eq!(
        encode(
            resp(304, &[("content-length", "4")]),
            Length::None,
            GET11,
            true
        )
        .0,
        "HTTP/1.1 304 Not Modified\r\n\r\n"
    );
    assert_eq!(
        encode(resp(200, &[]), Length::None, GET11, true).0,
        "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
    );
    // A backend's reason phrase and Date pass; Transfer-Encoding does not.
    let mut p = resp(404, &[("date", "x"), ("transfer-encoding", "gzip")]);
    p.extensions
        .insert(hyper::ext::ReasonPhrase::from_static(b"Nope"));
    let mut v = Vec::new();
    respond::head(&mut v, &p, Length::Known(0), GET11, &mut true);
    assert_eq!(
        String::from_utf8(v).unwrap(),
        "HTTP/1.1 404 Nope\r\ndate: x\r\ncontent-length: 0\r\n\r\n"
    );
}

/// Answers every request with what it saw: method, target, version,
/// headers and body (read whole), or an error text if the body failed.
struct Echo;

impl Serve for Echo {
    type ReqBody = ReqBody;
    type Body = Full<Bytes>;

    async fn call(&self, req: Request<ReqBody>) -> Response<Full<Bytes>> {
        let (parts, body) = req.into_parts();
        if parts.uri.path() == "/ignore" {
            return Response::new(Full::new(Bytes::from_static(b"ignored")));
        }
        let body = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(e) => Bytes::from(format!("body error: {e}")),
        };
        let mut text = format!("{} {} {:?}\n", parts.method, parts.uri, parts.version);
        for (k, v) in &parts.headers {
            text.push_str(&format!("{k}: {}\n", String::from_utf8_lossy(v.as_bytes())));
        }
        let mut out = text.into_bytes();
        out.extend_from_slice(&body);
        Response::new(Full::new(Bytes::from(out)))
    }
}

async fn serve_once<H: Serve<ReqBody = ReqBody> + Send + 'static>(
    handler: H,
) -> (std::net::SocketAddr, Arc<DrainFlags>)
where
    <H::Body as http_body::Body>::Error: std::fmt::Display,
{
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let ctl = Arc::new(DrainFlags::default());
    let c = ctl.clone();
    tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        run(
            ClientStream::plain(s.into_std().unwrap()),
            &handler,
            &c,
            64 * 1024,
        )
        .await;
    });
    (addr, ctl)
}

/// Sends `input`, then reads until the server closes or `settle` passes
/// without news.
async fn exchange(addr: std::net::SocketAddr, input: &[u8], settle: Duration) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(input).await.unwrap();
    let mut out = Vec::new();
    let mut b = [0u8; 65536];
    while let Ok(Ok(n)) = tokio::time::timeout(settle, s.read(&mut b)).await {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&b[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (addr, _) = serve_once(Echo).await;
    let input = b"GET /1 HTTP/1.1\r\nhost: a\r\n\r\nPOST /2 HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nPUT /3 HTTP/1.1\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
    let out = exchange(addr, input, Duration::from_secs(2)).await;
    let i1 = out.find("GET /1").unwrap();
    let i2 = out.find("POST /2").unwrap();
    let i3 = out.find("PUT /3").unwrap();
    assert!(i1 < i2 && i2 < i3, "{out}");
    assert!(out[i2..i3].contains("abc"), "{out}");
    assert!(out.ends_with("ok"), "{out}");
    assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 3);
    assert_eq!(out.matches("connection: close\r\n").count(), 1);
    assert!(out.contains("date: "));
}

#[tokio::test]
async fn expect_continue_is_answered_when_the_body_is_read() {
    let (addr, _) = serve_once(Echo).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"PUT /up HTTP/1.1\r\ncontent-length: 5\r\nexpect: 100-continue\r\n\r\n")
        .await
        .unwrap();
    let mut b = [0u8; 1024];
    let n = s.read(&mut b).await.unwrap();
    assert_eq!(&b[..n], b"HTTP/1.1 100 Continue\r\n\r\n");
    s.write_all(b"hello").await.unwrap();
    let n = s.read(&mut b).await.unwrap();
    let text = String::from_utf8_lossy(&b[..n]);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    assert!(text.ends_with("hello"), "{text}");
}

#[tokio::test]
async fn an_unread_body_is_drained_or_the_connection_closes() {
    // All here: drained, and the next request is served.
    let (addr, _) = serve_once(Echo).await;
    let out = exchange(
        addr,
        b"POST /ignore HTTP/1.1\r\ncontent-length: 3\r\n\r\nabcGET /next HTTP/1.1\r\n\r\n",
        Duration::from_millis(300),
    )
    .await;
    assert!(out.contains("GET /next"), "{out}");
    // Not here yet: the connection closes after the answer.
    let (addr, _) = serve_once(Echo).await;
    let out = exchange(
        addr,
        b"POST /ignore HTTP/1.1\r\ncontent-length: 300000\r\n\r\nabc",
        Duration::from_secs(2),
    )
    .await;
    assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
    assert!(out.ends_with("ignored"), "{out}");
}

#[tokio::test]
async fn http10_closes_unless_kept_alive() {
    let (addr, _) = serve_once(Echo).await;
    let out = exchange(
        addr,
        b"GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
        Duration::from_secs(2),
    )
    .await;
    assert!(out.starts_with("HTTP/1.0 200 OK"), "{out}");
    assert!(!out.contains("GET /b"), "{out}");
    let (addr, _) = serve_once(Echo).await;
    let out = exchange(
        addr,
        b"GET /a HTTP/1.0\r\nconnection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n\r\n",
        Duration::from_secs(2),
    )
    .await;
    assert!(out.contains("connection: keep-alive"), "{out}");
    assert!(out.contains("GET /b"), "{out}");
}

#[tokio::test]
async fn bad_input_is_refused_and_closed() {
    for (input, status) in [
        (&b"GET / HTTP/1.1\r\nx : y\r\n\r\n"[..], "400"),
        (
            b"POST / HTTP/1.1\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n",
            "400",
        ),
        (
            b"POST / HTTP/1.1\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
            "501",
        ),
    ] {
        let (addr, _) = serve_once(Echo).await;
        let out = exchange(addr, input, Duration::from_secs(2)).await;
        assert!(out.starts_with(&format!("HTTP/1.1 {status} ")), "{out}");
        assert!(out.contains("connection: close"), "{out}");
        assert!(out.contains("x-weir-reason: bad_request"), "{out}");
        let len: usize = out
            .split("content-length: ")
            .nth(1)
            .unwrap()
            .split('\r')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(out.split("\r\n\r\n").nth(1).unwrap().len(), len, "{out}");
    }
    // An invalid chunk size: the handler's body read fails.
    let (addr, _) = serve_once(Echo).await;
    let out = exchange(
        addr,
        b"POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
        Duration::from_secs(2),
    )
    .await;
    assert!(out.contains("body error: invalid chunk size"), "{out}");
    assert!(out.contains("connection: close"), "{out}");
}

/// Answers only once told to; says whether its request was dropped.
struct Slow(Arc<tokio::sync::Notify>, Arc<std::sync::atomic::AtomicBool>);

struct DropFlag(Arc<std::sync::atomic::AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

impl Serve for Slow {
    type ReqBody = ReqBody;
    type Body = Full<Bytes>;
    async fn call(&self, _req: Request<ReqBody>) -> Response<Full<Bytes>> {
        let _flag = DropFlag(self.1.clone());
        self.0.notified().await;
        Response::new(Full::new(Bytes::from_static(b"late")))
    }
}

#[tokio::test]
async fn a_client_that_leaves_drops_its_request() {
    let go = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (addr, _) = serve_once(Slow(go.clone(), dropped.clone())).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!dropped.load(Relaxed));
    drop(s);
    for _ in 0..100 {
        if dropped.load(Relaxed) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the request outlived its client");
}

#[tokio::test]
async fn a_drain_lets_the_request_finish_with_connection_close() {
    let go = Arc::new(tokio::sync::Notify::new());
    let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (addr, ctl) = serve_once(Slow(go.clone(), dropped)).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(ctl.busy.load(Relaxed));
    ctl.draining.store(true, Relaxed);
    go.notify_one();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("connection: close"), "{text}");
    assert!(text.ends_with("late"), "{text}");
}

/// A body of unknown length, in frames of given sizes.
struct Frames(Vec<usize>);

impl http_body::Body for Frames {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        if self.0.is_empty() {
            return std::task::Poll::Ready(None);
        }
        let n = self.0.remove(0);
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(Bytes::from(vec![b'x'; n])))))
    }
}

struct Chunky;
impl Serve for Chunky {
    type ReqBody = ReqBody;
    type Body = Frames;
    async fn call(&self, _req: Request<ReqBody>) -> Response<Frames> {
        Response::new(Frames(vec![3, 40_000, 5, 200_000]))
    }
}

#[tokio::test]
async fn unknown_lengths_go_chunked_and_large_pieces_intact() {
    let (addr, _) = serve_once(Chunky).await;
    let out = exchange(addr, b"GET / HTTP/1.1\r\n\r\n", Duration::from_millis(500)).await;
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    let expect = format!(
        "3\r\nxxx\r\n9c40\r\n{}\r\n5\r\nxxxxx\r\n30d40\r\n{}\r\n0\r\n\r\n",
        "x".repeat(40_000),
        "x".repeat(200_000)
    );
    assert_eq!(body.len(), expect.len());
    assert!(body == expect);
}
