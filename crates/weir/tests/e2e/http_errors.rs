//! Errors weir generates: the right status, and the reason in body and header.

use std::time::Duration;

use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, raw_exchange, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unreachable_upstream_is_502_connect_failed() {
    let dead = free_addr();
    let listen = free_addr();
    let no_retry = "[pools.app.retry]\nattempts = 0";
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(dead, 1)]), no_retry),
        &[listen],
    );
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 502);
    assert_eq!(r.header("x-weir-reason"), Some("connect_failed"));
    assert!(r.text().contains("connect_failed"), "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unreachable_after_retries_is_502_retries_exhausted() {
    let dead = free_addr();
    let listen = free_addr();
    let _w = Weir::start(&one_pool(listen, &endpoints(&[(dead, 1)]), ""), &[listen]);
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 502);
    assert_eq!(r.header("x-weir-reason"), Some("retries_exhausted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_upstream_is_504_upstream_timeout() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = one_pool(
        listen,
        &endpoints(&[(up.addr(), 1)]),
        "response_timeout = \"300ms\"\n[pools.app.retry]\nattempts = 0",
    );
    let w = Weir::start(&cfg, &[listen]);
    let r = client::get(listen, "/?hang=1").await.unwrap();
    assert_eq!(r.status, 504);
    assert_eq!(r.header("x-weir-reason"), Some("upstream_timeout"));
    let line = w.wait_log(0, "upstream_timeout", Duration::from_secs(2));
    assert!(
        line.contains("pool=\"app\"") || line.contains("pool=app"),
        "{line}"
    );
}

/// Each request on a pooled upstream connection gets the whole
/// `response_timeout` from its own start, whatever the requests before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_response_timeout_counts_from_each_request_on_a_reused_connection() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = one_pool(
        listen,
        &endpoints(&[(up.addr(), 1)]),
        "response_timeout = \"400ms\"\n[pools.app.retry]\nattempts = 0",
    );
    let _w = Weir::start(&cfg, &[listen]);
    let first = client::get(listen, "/").await.unwrap();
    assert_eq!(first.status, 200);
    // Answered 300 ms after it started, 550 ms after the first request:
    // past the first request's deadline, within its own.
    tokio::time::sleep(Duration::from_millis(250)).await;
    let second = client::get(listen, "/?latency_ms=300").await.unwrap();
    assert_eq!(second.status, 200, "{:?}", second.header("x-weir-reason"));
    assert_eq!(
        first.header("x-upstream-conn"),
        second.header("x-upstream-conn"),
        "the second request did not reuse the upstream connection"
    );
    // And one that never answers still times out, 400 ms after its start.
    let t = std::time::Instant::now();
    let third = client::get(listen, "/?hang=1").await.unwrap();
    let took = t.elapsed();
    assert_eq!(third.status, 504);
    assert!(
        took >= Duration::from_millis(390) && took < Duration::from_millis(1500),
        "{took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_route_is_404_route_not_found() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"

[routes.only]
listener = "web"
host = "a.example.com"
pool = "app"

[pools.app]
{}
"#,
        endpoints(&[(up.addr(), 1)])
    );
    let _w = Weir::start(&cfg, &[listen]);
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 404);
    assert_eq!(r.header("x-weir-reason"), Some("route_not_found"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_requests_get_400_and_weir_survives() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let cases: [&[u8]; 5] = [
        b"GARBAGE\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        // HTTP/1.1 requires Host.
        b"GET / HTTP/1.1\r\n\r\n",
    ];
    for c in cases {
        let text = raw_exchange(listen, c, Duration::from_secs(3)).await;
        assert!(
            text.starts_with("HTTP/1.1 400"),
            "{:?} -> {text:?}",
            String::from_utf8_lossy(c)
        );
    }
    assert_eq!(up.requests(), 0);
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversize_headers_get_431() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
max_header_bytes = 16384

[pools.app]
{}
"#,
        endpoints(&[(up.addr(), 1)])
    );
    let _w = Weir::start(&cfg, &[listen]);
    let big = "x".repeat(40_000);
    let req = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n");
    let text = raw_exchange(listen, req.as_bytes(), Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 431"), "{text:?}");
    assert_eq!(up.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn content_length_with_transfer_encoding_cannot_smuggle() {
    // The classic CL.TE smuggle: a front end that trusted Content-Length would
    // see one request, a back end that trusts chunked would see two.
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let attack = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    let text = raw_exchange(listen, attack, Duration::from_secs(3)).await;
    // RFC 9112 §6.3 allows either answer: reject with 400, or frame by
    // Transfer-Encoding alone and close the connection afterwards. hyper does
    // the latter; either way nothing after the chunked body is a request.
    let closed = text.to_ascii_lowercase().contains("connection: close");
    assert!(text.starts_with("HTTP/1.1 400") || closed, "{text:?}");
    assert_eq!(text.matches("HTTP/1.1").count(), 1, "{text:?}");
    assert!(
        up.log().iter().all(|r| !r.path.contains("smuggled")),
        "smuggled request reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn upstream_dying_mid_post_is_502_upstream_reset() {
    // A POST the backend received may have had effects: no retry, the client
    // learns the truth.
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let pending = tokio::spawn(async move {
        let req = http::Request::post("/?hang=1")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(b"x")))
            .unwrap();
        client::send(listen, req).await
    });
    while up.in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    up.stop().await;
    let r = pending.await.unwrap().unwrap();
    assert_eq!(r.status, 502);
    assert_eq!(r.header("x-weir-reason"), Some("upstream_reset"));
}

/// A failure that repeats for every request (a pool whose only endpoint is down; clients
/// sending malformed requests) is logged once per cause and period, not once per request: the
/// counts and the access log keep every one. A different cause still gets its own line.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn repeated_failures_are_logged_once_per_cause() {
    let dead = free_addr();
    let listen = free_addr();
    let cfg = format!(
        "{}\n[routes.other]\nlistener = \"web\"\npath_prefix = \"/other\"\npool = \"other\"\n\n[pools.other]\n{}\n[pools.other.retry]\nattempts = 0\n",
        one_pool(listen, &endpoints(&[(dead, 1)]), "[pools.app.retry]\nattempts = 0"),
        endpoints(&[(dead, 1)])
    );
    let w = Weir::start(&cfg, &[listen]);
    for _ in 0..200 {
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 502);
    }
    let r = client::get(listen, "/other").await.unwrap();
    assert_eq!(r.status, 502);
    for _ in 0..50 {
        let got = raw_exchange(
            listen,
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n",
            Duration::from_secs(20),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 400"), "{got}");
    }
    w.wait_log(0, "pool=\"other\"", Duration::from_secs(10));
    let text = w.log_text();
    let failed = text
        .lines()
        .filter(|l| l.contains("request failed") && l.contains("pool=\"app\""))
        .count();
    assert_eq!(failed, 1, "{text}");
    let refused = text
        .lines()
        .filter(|l| {
            l.contains("request refused")
                || (l.contains("request failed") && l.contains("bad_request"))
        })
        .count();
    assert!(refused <= 1, "{text}");
    // Every one counted all the same.
    let metrics = client::get(w.admin, "/metrics").await.unwrap().text();
    assert!(
        metrics.lines().any(|l| l.contains("pool=\"app\"")
            && l.contains("reason=\"connect_failed\"")
            && l.starts_with("weir_requests_total")
            && l.ends_with(" 200")),
        "{metrics}"
    );
}
