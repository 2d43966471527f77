//! Draining: an endpoint that leaves the config gets no new requests, its
//! in-flight ones finish, its idle upstream connections close, and its TCP
//! sessions live until they end or the drain grace is over.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::client::{self, HttpConn};
use weir_testkit::{HttpUpstream, TcpUpstream};

use crate::common::{endpoints, free_addr, one_pool, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_removed_endpoint_finishes_in_flight_and_closes_idle_connections() {
    let old = HttpUpstream::spawn("old").await.unwrap();
    let new = HttpUpstream::spawn("new").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(old.addr(), 1)]), ""),
        &[listen],
    );

    // A pooled idle connection to "old", and one request in flight on it.
    let mut conn = HttpConn::connect(listen).await.unwrap();
    conn.get("/").await.unwrap();
    let pending = tokio::spawn(async move { client::get(listen, "/?latency_ms=800").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(old.in_flight(), 1);

    let reload = w.reload(&one_pool(listen, &endpoints(&[(new.addr(), 1)]), ""));
    assert!(reload.contains("config reloaded"), "{reload}");
    let before = old.requests();
    for _ in 0..5 {
        assert_eq!(conn.get("/").await.unwrap().text(), "new\n");
    }
    assert_eq!(
        old.requests(),
        before,
        "a drained endpoint got new requests"
    );
    let r = pending.await.unwrap().unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (200, "old\n".to_string()));
    // Its idle connections are closed: the backend sees none left open.
    let deadline = Instant::now() + Duration::from_secs(3);
    while old.open_connections() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(old.open_connections(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_sessions_on_a_removed_endpoint_end_at_the_drain_grace() {
    let old = TcpUpstream::echo("old", false).await.unwrap();
    let new = TcpUpstream::echo("new", false).await.unwrap();
    let listen = free_addr();
    let cfg = |up: std::net::SocketAddr| {
        format!(
            "[global]\ndrain_grace = \"600ms\"\n[listeners.db]\nbind = \"{listen}\"\nprotocol = \"tcp\"\npool = \"db\"\n[pools.db]\n{}\n",
            endpoints(&[(up, 1)])
        )
    };
    let w = Weir::start(&cfg(old.addr()), &[listen]);
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).await.unwrap();

    assert!(w.reload(&cfg(new.addr())).contains("config reloaded"));
    let removed_at = Instant::now();
    // Still alive within the grace...
    s.write_all(b"pong").await.unwrap();
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"pong");
    // ...and closed when it is over.
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
        .await
        .expect("session outlived the drain grace")
        .ok();
    let t = removed_at.elapsed();
    assert!(
        t >= Duration::from_millis(400) && t < Duration::from_secs(3),
        "{t:?}"
    );
}
