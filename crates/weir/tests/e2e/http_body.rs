//! Bodies stream through byte-exact in both directions, in every framing.

use std::time::{Duration, Instant};

use http::Request;
use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, raw_exchange, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_mib_post_round_trips_byte_exact() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let body = weir_testkit::pattern(10 * 1024 * 1024);
    let req = Request::post("/echo")
        .body(Full::new(body.clone()))
        .unwrap();
    let resp = client::send(listen, req).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.body.len(), body.len());
    assert!(resp.body == body, "echoed body differs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chunked_upload_round_trips() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut expect = Vec::new();
    for i in 0..50 {
        let chunk = format!("piece {i};");
        expect.extend_from_slice(chunk.as_bytes());
        s.write_all(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
    }
    s.write_all(b"0\r\n\r\n").await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let joined = decode_chunked(text.split_once("\r\n\r\n").unwrap().1);
    assert_eq!(joined.as_bytes(), &expect[..], "{text}");
}

/// Reassembles a chunked body (or returns it as is when not chunked).
fn decode_chunked(body: &str) -> String {
    if !body.contains("\r\n") {
        return body.to_string();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_string();
        };
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chunked_response_streams_as_it_is_produced() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    let start = Instant::now();
    s.write_all(b"GET /chunked/5?delay_ms=200 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 4096];
    let mut got = Vec::new();
    let mut first_chunk_at = None;
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if first_chunk_at.is_none() && String::from_utf8_lossy(&got).contains("chunk 0") {
            first_chunk_at = Some(start.elapsed());
        }
    }
    let total = start.elapsed();
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("chunk 4"), "{text}");
    let first = first_chunk_at.unwrap();
    assert!(
        first < Duration::from_millis(500),
        "first chunk after {first:?}: buffered"
    );
    assert!(total >= Duration::from_millis(800), "{total:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn close_delimited_response_arrives_whole() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let resp = client::get(listen, "/close").await.unwrap();
    assert_eq!(resp.status, 200);
    assert!(!resp.body.is_empty());
    // And the pool recovers: the next request uses a new upstream connection.
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "a\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expect_100_continue() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(3), s.read(&mut buf))
        .await
        .expect("no 100 Continue")
        .unwrap();
    let interim = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(interim.starts_with("HTTP/1.1 100 Continue"), "{interim}");
    s.write_all(b"hello").await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    // The echo backend may answer its head before the body arrives.
    let text = format!("{interim}{}", String::from_utf8_lossy(&out));
    assert!(text.contains("200 OK"), "{text}");
    assert!(text.ends_with("hello"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_1_0_client_gets_a_close_delimited_or_sized_answer() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let text = raw_exchange(listen, b"GET / HTTP/1.0\r\n\r\n", Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.0 200"), "{text}");
    assert!(text.ends_with("a\n"), "{text}");
}

/// A keep-alive HTTP/1.0 client keeps its connection when the backend answers in HTTP/1.0
/// and closes its own: the backend's connection is another hop (RFC 9110 §7.6.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_1_0_backend_closing_its_connection_does_not_close_the_clients() {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut b = [0u8; 1024];
                while !got.ends_with(b"\r\n\r\n") {
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&b[..n]),
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await;
            });
        }
    });
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(backend, 1)]), ""),
        &[listen],
    );
    let mut c = tokio::net::TcpStream::connect(listen).await.unwrap();
    let mut got = Vec::new();
    let mut b = [0u8; 1024];
    for n in 1..=2 {
        c.write_all(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .await
            .unwrap();
        while got.windows(2).filter(|w| w == b"ok").count() < n {
            let read = tokio::time::timeout(Duration::from_secs(10), c.read(&mut b))
                .await
                .expect("an answer")
                .unwrap();
            let text = String::from_utf8_lossy(&got);
            assert!(
                read > 0,
                "weir closed the client after answer {}: {text}",
                n - 1
            );
            got.extend_from_slice(&b[..read]);
        }
    }
    let text = String::from_utf8_lossy(&got);
    assert_eq!(text.matches("connection: keep-alive").count(), 2, "{text}");
}

/// An expectation other than `100-continue` is one nobody can meet: curl sending one gets
/// 417 before its body goes anywhere, and the endpoint sees nothing; an HTTP/1.0 request's
/// expectation is ignored and the request served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expectation_other_than_100_continue_gets_417() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "Expect: 200-ok",
        ])
        .args(["--data-binary", "payload"])
        .arg(format!("http://{listen}/echo"))
        .output()
        .expect("curl runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "417", "{out:?}");
    assert_eq!(up.requests(), 0, "nothing reached the endpoint");
    let old = raw_exchange(
        listen,
        b"POST /echo HTTP/1.0\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\nok",
        Duration::from_secs(10),
    )
    .await;
    assert!(old.starts_with("HTTP/1.0 200"), "{old}");
}
