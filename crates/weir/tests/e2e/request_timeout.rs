//! Timeouts a user can reason about: `response_timeout`
//! counts from the request's last byte sent, so a slow upload is not cut
//! while it is still moving, and `request_timeout` bounds every try of a
//! request together (by default: the pool's `response_timeout`), so no
//! client waits for a hanging backend once per retry.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hanging_backend_costs_a_get_one_response_timeout_not_one_per_try() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    // Default retries (attempts = 2): before, three tries of 1 s each.
    let _w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            "response_timeout = \"1s\"\n[pools.app.retry]\nbudget_min_per_sec = 1000",
        ),
        &[listen],
    );
    let t = Instant::now();
    let r = client::get(listen, "/?hang=1").await.unwrap();
    let took = t.elapsed();
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("upstream_timeout"));
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_millis(2500),
        "{took:?}"
    );
    assert_eq!(
        up.log().len(),
        1,
        "the backend saw {} copies",
        up.log().len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn request_timeout_ends_the_tries_of_a_get_together() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    // Nine retries of 200 ms each would take 2 s; request_timeout allows 500 ms.
    let _w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            "request_timeout = \"500ms\"\n\
             [pools.app.retry]\nattempts = 9\nper_try_timeout = \"200ms\"\nbudget_min_per_sec = 1000",
        ),
        &[listen],
    );
    let t = Instant::now();
    let r = client::get(listen, "/?hang=1").await.unwrap();
    let took = t.elapsed();
    assert_eq!(r.status, 504);
    assert!(
        took >= Duration::from_millis(480) && took < Duration::from_millis(1400),
        "{took:?}"
    );
    let copies = up.log().len();
    assert!((2..=3).contains(&copies), "{copies} tries in 500 ms");
}

/// weir in front of one backend that answers `POST /` only after reading
/// the whole body; bodies above 1 KiB are streamed to it (not buffered).
async fn upload_setup() -> (HttpUpstream, SocketAddr, Weir) {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            "response_timeout = \"1s\"\n[pools.app.retry]\nbuffer = 1024",
        ),
        &[listen],
    );
    (up, listen, w)
}

/// Sends a POST of `chunks` KiB, one KiB every `pace`, then stops sending
/// after `send` of them; returns the response's status line.
async fn upload(listen: SocketAddr, chunks: usize, send: usize, pace: Duration) -> String {
    let mut s = TcpStream::connect(listen).await.unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        chunks * 1024
    );
    s.write_all(head.as_bytes()).await.unwrap();
    for _ in 0..send {
        s.write_all(&[b'u'; 1024]).await.unwrap();
        tokio::time::sleep(pace).await;
    }
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .expect("no answer within 10 s")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    text.lines().next().unwrap_or("").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_upload_is_not_cut_by_the_response_timeout_while_it_moves() {
    let (up, listen, _w) = upload_setup().await;
    // 8 KiB at 1 KiB per 300 ms: 2.4 s of sending, against a 1 s response_timeout.
    let status = upload(listen, 8, 8, Duration::from_millis(300)).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(up.log().len(), 1);
    assert_eq!(up.log()[0].body_len, 8192);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upload_that_stalls_times_out_a_response_timeout_after_its_last_byte() {
    let (_up, listen, _w) = upload_setup().await;
    let t = Instant::now();
    // 2 of 8 KiB, then silence.
    let status = upload(listen, 8, 2, Duration::from_millis(50)).await;
    let took = t.elapsed();
    assert!(status.starts_with("HTTP/1.1 504"), "{status}");
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_millis(3000),
        "{took:?}"
    );
}
