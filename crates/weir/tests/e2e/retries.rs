//! Safe retries through the real binary: what the backend may have processed
//! is retried only when that is safe (idempotent method or Idempotency-Key),
//! what never reached it is retried for any method, large bodies are not
//! replayed, and the retry budget caps retries when every backend fails.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, Weir};
use crate::ejection::Closer;

async fn send(
    listen: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Resp {
    let mut b = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    client::send(listen, b.body(Full::new(body.into())).unwrap())
        .await
        .unwrap()
}

/// One upstream, `attempts = 2`, tries cut at 300 ms.
async fn slow_setup(retry_extra: &str) -> (HttpUpstream, SocketAddr, Weir) {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            &format!("[pools.app.retry]\nattempts = 2\nper_try_timeout = \"300ms\"\n{retry_extra}"),
        ),
        &[listen],
    );
    (up, listen, w)
}

/// A dead endpoint and a live one in round robin, without ejection: the dead one keeps its
/// turns, so about every other request is refused on its first try. The retry budget is out
/// of the way (it has its own tests); `retry_extra`: more `[pools.app.retry]` lines.
async fn dead_and_live(retry_extra: &str) -> (HttpUpstream, SocketAddr, Weir) {
    let live = HttpUpstream::spawn("live").await.unwrap();
    let (dead, listen) = (free_addr(), free_addr());
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(dead, 1), (live.addr(), 1)]),
            &format!(
                "[pools.app.health]\neject_after = 0\n\
                 [pools.app.retry]\nbudget_min_per_sec = 1000\n{retry_extra}"
            ),
        ),
        &[listen],
    );
    (live, listen, w)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_post_that_timed_out_on_the_backend_is_not_retried() {
    // Two endpoints, so a retry would have somewhere else to go.
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let _w = Weir::start(
        &one_pool(
            listen,
            &eps,
            "[pools.app.retry]\nattempts = 2\nper_try_timeout = \"300ms\"",
        ),
        &[listen],
    );
    let start = Instant::now();
    let r = send(listen, Method::POST, "/?latency_ms=1000", &[], "order=1").await;
    let took = start.elapsed();
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("upstream_timeout"));
    assert!(took < Duration::from_millis(900), "{took:?}");
    let log: Vec<_> = a.log().into_iter().chain(b.log()).collect();
    assert_eq!(log.len(), 1, "the POST was sent {} times", log.len());
    assert_eq!(log[0].method, Method::POST);
    assert_eq!(log[0].body_len, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_get_that_timed_out_is_retried_until_attempts_run_out() {
    let (up, listen, _w) = slow_setup("").await;
    let start = Instant::now();
    let r = send(listen, Method::GET, "/?latency_ms=1000", &[], "").await;
    let took = start.elapsed();
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("retries_exhausted"));
    assert_eq!(up.log().len(), 3, "attempts = 2: three tries");
    assert!(up.log().iter().all(|r| r.method == Method::GET));
    // Three tries of 300 ms each, not one of 1000 ms.
    assert!(
        took >= Duration::from_millis(850) && took < Duration::from_millis(2000),
        "{took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_idempotency_key_makes_a_timed_out_post_retryable() {
    let (up, listen, _w) = slow_setup("").await;
    let r = send(
        listen,
        Method::POST,
        "/?latency_ms=1000",
        &[("idempotency-key", "k-42")],
        "order=1",
    )
    .await;
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("retries_exhausted"));
    let log = up.log();
    assert_eq!(log.len(), 3);
    for rec in &log {
        assert_eq!(rec.method, Method::POST);
        assert_eq!(rec.headers.get("idempotency-key").unwrap(), "k-42");
        // The body is replayed whole.
        assert_eq!(rec.body_len, 7);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn posts_are_retried_when_the_connection_was_refused() {
    let (live, listen, w) = dead_and_live("").await;
    for i in 0..20 {
        let body = format!("payment {i} {}", "x".repeat(i * 37));
        let r = send(listen, Method::POST, "/echo", &[], body.clone()).await;
        assert_eq!(r.status, 200, "POST {i}: {}", r.text());
        assert_eq!(r.text(), body, "POST {i}");
    }
    // Each POST reached the application exactly once.
    let log = live.log();
    assert_eq!(log.len(), 20);
    assert!(log.iter().all(|r| r.method == Method::POST));
    assert!(w.log_text().lines().all(|l| !l.contains("request failed")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_status_retries_idempotent_requests_and_returns_the_last_real_answer() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            "[pools.app.retry]\nattempts = 2\non_status = [503]\nbudget_min_per_sec = 1000",
        ),
        &[listen],
    );

    let r = send(listen, Method::GET, "/status/503", &[], "").await;
    assert_eq!(r.status, 503);
    // The backend's answer, not one weir made up.
    assert_eq!(r.text(), "a\n");
    assert_eq!(r.header("x-upstream"), Some("a"));
    assert!(r.header("x-weir-reason").is_none());
    assert_eq!(up.log().len(), 3, "attempts = 2: three tries");

    up.reset_stats();
    let r = send(listen, Method::POST, "/status/503", &[], "once").await;
    assert_eq!((r.status.as_u16(), r.text()), (503, "a\n".to_string()));
    assert_eq!(up.log().len(), 1, "a POST answered 503 was retried");

    up.reset_stats();
    let r = send(
        listen,
        Method::POST,
        "/status/503",
        &[("idempotency-key", "k-7")],
        "twice",
    )
    .await;
    assert_eq!((r.status.as_u16(), r.text()), (503, "a\n".to_string()));
    assert_eq!(up.log().len(), 3);

    // Statuses not listed are not retried.
    up.reset_stats();
    let r = send(listen, Method::GET, "/status/502", &[], "").await;
    assert_eq!((r.status.as_u16(), r.text()), (502, "a\n".to_string()));
    assert_eq!(up.log().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bodies_larger_than_the_buffer_are_not_retried_after_a_timeout() {
    // PUT is idempotent, so only the body's size stands in the way.
    let (up, listen, _w) = slow_setup("buffer = 1024").await;
    let big = vec![b'x'; 4096];
    let r = send(listen, Method::PUT, "/?latency_ms=1000", &[], big).await;
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("upstream_timeout"));
    let log = up.log();
    assert_eq!(log.len(), 1, "a body past the buffer was replayed");
    assert_eq!(log[0].body_len, 4096);

    // At the buffer's size, it is kept and replayed.
    up.reset_stats();
    let fits = vec![b'y'; 1024];
    let r = send(listen, Method::PUT, "/?latency_ms=1000", &[], fits).await;
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("retries_exhausted"));
    let log = up.log();
    assert_eq!(log.len(), 3);
    assert!(log.iter().all(|r| r.body_len == 1024));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bodies_larger_than_the_buffer_are_retried_after_a_refused_connect() {
    // A body past `buffer` is not kept, but after a refused connect not a byte of it
    // went out: it goes, whole, to the next try (was: 502 for half of these).
    let (live, listen, _w) = dead_and_live("buffer = 1024").await;
    // Round robin alternates: two of four start on the dead endpoint.
    let big = "z".repeat(64 * 1024);
    for _ in 0..4 {
        let r = send(listen, Method::POST, "/echo", &[], big.clone()).await;
        assert_eq!(r.status, 200, "{:?}", r.header("x-weir-reason"));
        assert!(r.text() == big);
    }
    assert_eq!(live.log().len(), 4);
    assert!(live.log().iter().all(|r| r.body_len == big.len() as u64));

    // Small bodies too, from the replay copy.
    let small = "s".repeat(1000);
    for _ in 0..4 {
        let r = send(listen, Method::POST, "/echo", &[], small.clone()).await;
        assert_eq!((r.status.as_u16(), r.text()), (200, small.clone()));
    }
    assert_eq!(live.log().len(), 8);
}

/// A chunked POST written in `pieces`, a few milliseconds apart (so that weir most often
/// reads them one by one), on a connection of its own; the answer's status and body.
async fn chunked_post(listen: SocketAddr, pieces: &[&str]) -> (u16, String) {
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(
        b"POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .await
    .unwrap();
    for p in pieces {
        s.write_all(format!("{:x}\r\n{p}\r\n", p.len()).as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    s.write_all(b"0\r\n\r\n").await.unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    let text = String::from_utf8_lossy(&got).into_owned();
    let status = text[9..12].parse().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    // The echo answers with a length; weir passes it on as it is.
    assert!(
        head.to_ascii_lowercase().contains("content-length"),
        "{head}"
    );
    (status, body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chunked_body_is_replayed_whole_after_a_refused_connect() {
    // A body without a length is read into the replay copy as it comes: one piece is kept
    // as it came, several are joined. Either way the retry sends all of it, once.
    let (live, listen, _w) = dead_and_live("").await;
    let cases: [&[&str]; 3] = [
        &["one piece"],
        &["first, ", "second, ", "third"],
        &["a", "b", "c", "d", "e", "f", "g", "h"],
    ];
    // Round robin alternates: of four of each, two start on the dead endpoint.
    let mut sent = 0;
    for pieces in cases {
        for _ in 0..4 {
            let (status, body) = chunked_post(listen, pieces).await;
            assert_eq!((status, body), (200, pieces.concat()), "{pieces:?}");
            sent += 1;
        }
    }
    let log = live.log();
    assert_eq!(log.len(), sent, "each POST reached the backend once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_retry_budget_floor_stops_retries_when_every_backend_fails() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            "[pools.app.retry]\nattempts = 5\non_status = [503]\n\
             budget_percent = 0\nbudget_min_per_sec = 3",
        ),
        &[listen],
    );
    let start = Instant::now();
    let tasks: Vec<_> = (0..20)
        .map(|_| tokio::spawn(async move { client::get(listen, "/status/503").await }))
        .collect();
    for t in tasks {
        let r = t.await.unwrap().unwrap();
        // The last real answer, whether retried or not.
        assert_eq!((r.status.as_u16(), r.text()), (503, "a\n".to_string()));
        assert!(r.header("x-weir-reason").is_none());
    }
    let took = start.elapsed();
    let seen = up.requests();
    // Without a budget: 20 × 6 = 120. With it: 20 first tries plus 3 retries
    // in each wall-clock second touched (and a few more for a racy second
    // boundary).
    let seconds = took.as_secs() + 2;
    let max = 20 + 3 * seconds + 3;
    assert!(seen >= 23, "the floor allows 3 retries a second: {seen}");
    assert!(
        seen <= max,
        "{seen} requests reached the backend in {took:?} (at most {max})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_retry_budget_percent_allows_a_fifth_of_the_requests() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(up.addr(), 1)]),
            "[pools.app.retry]\nattempts = 5\non_status = [503]\n\
             budget_percent = 20\nbudget_min_per_sec = 0",
        ),
        &[listen],
    );
    for _ in 0..20 {
        let r = client::get(listen, "/status/503").await.unwrap();
        assert_eq!((r.status.as_u16(), r.text()), (503, "a\n".to_string()));
    }
    // Each request earns a fifth of a retry: 20 requests, 4 retries.
    assert_eq!(up.requests(), 24);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_retried_once_the_response_has_started() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let _w = Weir::start(&one_pool(listen, &eps, ""), &[listen]);

    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"GET /chunked/40?delay_ms=50 HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    // Read until the first chunk arrived: the response has started.
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(3);
    while !String::from_utf8_lossy(&got).contains("chunk 0") {
        let n = tokio::time::timeout_at(deadline.into(), s.read(&mut buf))
            .await
            .expect("no first chunk")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let (first, second) = if a.requests() == 1 {
        (&a, &b)
    } else {
        (&b, &a)
    };
    // The backend dies mid-body.
    first.stop().await;
    let _ = tokio::time::timeout(Duration::from_secs(3), s.read_to_end(&mut got)).await;
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    // The client sees the body cut (no last chunk), not a clean shorter end...
    assert!(!text.contains("\r\n0\r\n\r\n"), "truncation hidden: {text}");
    assert!(!text.contains("chunk 39"), "{text}");
    // ...and the request is not sent again anywhere.
    assert_eq!(first.requests(), 1);
    assert_eq!(second.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_retry_does_not_take_the_next_requests_round_robin_turn() {
    // Pool of 2, round robin, one endpoint failing every try (it accepts and
    // closes), no ejection. Round robin should give it every other request's
    // first try: 5 of 10. Since the retry's pick advances the shared
    // round-robin position too, each failed request moves it by two and the
    // failing endpoint is first in line for every request: 10 of 10, so every
    // request needs a retry (twice the load on the retry budget).
    let live = HttpUpstream::spawn("live").await.unwrap();
    let bad = Closer::spawn().await;
    let listen = free_addr();
    let eps = endpoints(&[(bad.addr, 1), (live.addr(), 1)]);
    let _w = Weir::start(
        &one_pool(
            listen,
            &eps,
            "[pools.app.health]\neject_after = 0\n[pools.app.retry]\nbudget_min_per_sec = 1000",
        ),
        &[listen],
    );
    for _ in 0..10 {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
    }
    assert_eq!(live.requests(), 10);
    assert!(
        bad.accepted() <= 6,
        "the failing endpoint got {} of 10 first tries",
        bad.accepted()
    );
}
