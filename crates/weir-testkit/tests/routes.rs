mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use tokio::net::TcpStream;
use weir_testkit::{client, client::HttpConn, pattern, HttpUpstream};

#[tokio::test]
async fn default_route_and_log() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let mut c = HttpConn::connect(up.addr()).await.unwrap();
    let r = c.get("/anything?x=1").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text().as_str()), (200, "a\n"));
    assert_eq!(r.header("x-upstream"), Some("a"));
    assert_eq!(r.header("content-length"), Some("2"));
    let post = Request::post("/p")
        .body(Full::new(Bytes::from("hello")))
        .unwrap();
    c.send(post).await.unwrap();
    client::get(up.addr(), "/other").await.unwrap();

    let log = up.log();
    assert_eq!(log.len(), 2 + 1);
    assert_eq!(
        (log[0].path.as_str(), log[0].uri.query()),
        ("/anything", Some("x=1"))
    );
    assert_eq!((log[1].method.as_str(), log[1].body_len), ("POST", 5));
    assert_eq!(log[0].conn_id, log[1].conn_id, "keep-alive reused");
    assert_ne!(log[1].conn_id, log[2].conn_id);
    assert!(log[0].at <= log[1].at);
    assert_eq!(up.connections(), 2);
}

#[tokio::test]
async fn healthz_follows_set_healthy_and_is_not_counted() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let r = client::get(up.addr(), "/healthz").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text().as_str()), (200, "ok"));
    up.set_healthy(false);
    assert_eq!(
        client::get(up.addr(), "/healthz").await.unwrap().status,
        503
    );
    assert_eq!((up.requests(), up.health_checks()), (0, 2));
}

#[tokio::test]
async fn echo_is_byte_exact_for_10_mib() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let body: Bytes = (0..10 << 20).map(|i: u32| (i * 7 % 251) as u8).collect();
    let req = Request::post("/echo")
        .body(Full::new(body.clone()))
        .unwrap();
    let r = client::send(up.addr(), req).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-upstream"), Some("a"));
    assert_eq!(r.body.len(), body.len());
    assert!(r.body == body, "echo differs");
    assert_eq!(up.log()[0].body_len, 10 << 20);
}

#[tokio::test]
async fn headers_reports_what_arrived() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let req = Request::put("/headers?q=1")
        .header("x-test", "yes")
        .body(Full::new(Bytes::from("12345")))
        .unwrap();
    let r = client::send(up.addr(), req).await.unwrap();
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["upstream"], "a");
    assert_eq!(v["method"], "PUT");
    assert_eq!(v["uri"], "/headers?q=1");
    assert_eq!(v["version"], "HTTP/1.1");
    assert_eq!(v["body_len"], 5);
    let headers = v["headers"].as_array().unwrap();
    assert!(
        headers.contains(&serde_json::json!(["x-test", "yes"])),
        "{headers:?}"
    );
}

#[tokio::test]
async fn status_bytes_and_chunked() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let mut c = HttpConn::connect(up.addr()).await.unwrap();
    let r = c.get("/status/503").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text().as_str()), (503, "a\n"));
    let r = c.get("/status/204").await.unwrap();
    assert_eq!((r.status.as_u16(), r.body.len()), (204, 0));
    assert_eq!(c.get("/status/304").await.unwrap().status, 304);
    assert_eq!(c.get("/status/abc").await.unwrap().status, 400);

    let r = c.get("/bytes/100000").await.unwrap();
    assert_eq!(r.header("content-length"), Some("100000"));
    assert_eq!(r.body, pattern(100_000));

    let start = Instant::now();
    let r = c.get("/chunked/3?delay_ms=30").await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(60));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.text(), "chunk 0\nchunk 1\nchunk 2\n");
    assert_eq!(up.connections(), 1, "all on one keep-alive connection");
}

#[tokio::test]
async fn close_sends_close_delimited_body() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let mut s = TcpStream::connect(up.addr()).await.unwrap();
    common::send_get(&mut s, "/").await;
    common::read_response(&mut s).await; // /close works after keep-alive requests too
    common::send_get(&mut s, "/close").await;
    let raw = common::read_until_closed(&mut s, Duration::from_secs(1)).await;
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let head = head.to_ascii_lowercase();
    assert!(!head.contains("content-length") && !head.contains("transfer-encoding"));
    assert!(head.contains("connection: close"));
    assert_eq!(body, "a\n");
    assert_eq!(up.in_flight(), 0);
}

#[tokio::test]
async fn keep_alive_header_body_size_and_hang() {
    let up = HttpUpstream::builder("a")
        .keep_alive_timeout_header(5)
        .body_size(1000)
        .spawn()
        .await
        .unwrap();
    let r = client::get(up.addr(), "/").await.unwrap();
    assert_eq!(r.header("keep-alive"), Some("timeout=5"));
    assert_eq!(r.body, pattern(1000));

    let hang = client::get(up.addr(), "/?hang=1");
    assert!(tokio::time::timeout(Duration::from_millis(200), hang)
        .await
        .is_err());
}

#[tokio::test]
async fn a_request_id_seen_twice_counts_as_a_duplicate() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    for id in ["r-1", "r-2", "r-1", "r-1"] {
        let req = Request::post("/echo")
            .header("x-request-id", id)
            .body(Full::new(Bytes::from("x")))
            .unwrap();
        assert_eq!(client::send(up.addr(), req).await.unwrap().status, 200);
    }
    // Requests without an id are not counted either way.
    client::get(up.addr(), "/").await.unwrap();
    assert_eq!(up.duplicates(), 2);
    let ids = client::get(up.addr(), "/__ids").await.unwrap();
    assert_eq!(ids.text(), "{\"ids\":2,\"duplicates\":2}\n");
    assert_eq!(up.requests(), 5, "/__ids is not a request");
}
