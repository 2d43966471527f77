mod common;

use std::time::{Duration, Instant};

use common::{read_response, read_until_closed, send_get};
use tokio::net::TcpStream;
use weir_testkit::HttpUpstream;

async fn upstream() -> HttpUpstream {
    HttpUpstream::builder("a")
        .idle_close(Duration::from_millis(100))
        .spawn()
        .await
        .unwrap()
}

#[tokio::test]
async fn idle_keep_alive_connection_gets_fin_without_response() {
    let up = upstream().await;
    let mut s = TcpStream::connect(up.addr()).await.unwrap();
    send_get(&mut s, "/").await;
    let (head, body) = read_response(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body, b"a\n");

    let idle_from = Instant::now();
    let rest = read_until_closed(&mut s, Duration::from_secs(2)).await;
    let waited = idle_from.elapsed();
    assert!(rest.is_empty(), "closed without a response");
    assert!(waited >= Duration::from_millis(90), "{waited:?}");
    assert!(waited < Duration::from_millis(600), "{waited:?}");
}

#[tokio::test]
async fn busy_or_active_connections_stay_open() {
    let up = upstream().await;
    let mut s = TcpStream::connect(up.addr()).await.unwrap();
    // Traffic every 40 ms keeps the connection alive well past the idle limit...
    for _ in 0..8 {
        send_get(&mut s, "/").await;
        read_response(&mut s).await;
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    // ...and so does a request the backend is slow to answer.
    send_get(&mut s, "/?latency_ms=300").await;
    let (head, _) = read_response(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 200"));
    assert_eq!(up.connections(), 1);
    assert_eq!(up.requests(), 9);
}

#[tokio::test]
async fn fresh_connection_without_request_is_closed_too() {
    let up = upstream().await;
    let mut s = TcpStream::connect(up.addr()).await.unwrap();
    assert!(read_until_closed(&mut s, Duration::from_secs(2))
        .await
        .is_empty());
}
