//! Client-side timeouts: the time to send a request head and the keep-alive
//! idle time are separate, as configured.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_testkit::client::HttpConn;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, Weir};

fn cfg(listen: std::net::SocketAddr, up: std::net::SocketAddr, header: &str, idle: &str) -> String {
    format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
header_timeout = "{header}"
idle_timeout = "{idle}"

[pools.app]
{}
"#,
        endpoints(&[(up, 1)])
    )
}

/// How long until the server closes this connection (EOF), up to `max`.
async fn time_to_close(s: &mut tokio::net::TcpStream, max: Duration) -> Duration {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(max.saturating_sub(start.elapsed()), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => continue,
            Err(_) => return max,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_request_head_is_cut_at_header_timeout() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(&cfg(listen, up.addr(), "300ms", "60s"), &[listen]);
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let t = time_to_close(&mut s, Duration::from_secs(5)).await;
    assert!(
        t >= Duration::from_millis(250) && t < Duration::from_secs(2),
        "{t:?}"
    );
    assert_eq!(up.requests(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_keep_alive_closes_at_idle_timeout() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(&cfg(listen, up.addr(), "10s", "400ms"), &[listen]);
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let t = time_to_close(&mut s, Duration::from_secs(5)).await;
    assert!(
        t >= Duration::from_millis(350) && t < Duration::from_secs(2),
        "{t:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_time_is_not_capped_by_the_header_timeout() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(&cfg(listen, up.addr(), "300ms", "5s"), &[listen]);
    let mut conn = HttpConn::connect(listen).await.unwrap();
    assert_eq!(conn.get("/").await.unwrap().status, 200);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(
        !conn.is_closed(),
        "idle connection closed at the header timeout"
    );
    assert_eq!(conn.get("/").await.unwrap().status, 200);
}

/// The gauge of open client connections, from `/metrics`.
async fn client_connections(w: &crate::common::Weir) -> String {
    let r = weir_testkit::client::get(w.admin, "/metrics")
        .await
        .unwrap();
    r.text()
        .lines()
        .find(|l| l.starts_with("weir_connections{side=\"client\",state=\"open\"}"))
        .map(|l| l.rsplit(' ').next().unwrap().to_owned())
        .unwrap_or_default()
}

/// HTTP listeners defer the accept until the client's first bytes arrive
/// (TCP_DEFER_ACCEPT): a silent connection takes no connection slot at
/// first, one that speaks is served at once, and a silent one is still
/// accepted after about a second and closed at the header timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silent_connections_are_accepted_late_and_still_time_out() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(&cfg(listen, up.addr(), "300ms", "60s"), &[listen]);
    // wait_listening's probe connection is silent too: let it go first.
    let settle = Instant::now() + Duration::from_secs(5);
    while client_connections(&w).await != "0" && Instant::now() < settle {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut silent = tokio::net::TcpStream::connect(listen).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        client_connections(&w).await,
        "0",
        "accepted before any byte"
    );

    let mut speaking = HttpConn::connect(listen).await.unwrap();
    let started = Instant::now();
    assert_eq!(speaking.get("/").await.unwrap().status, 200);
    assert!(started.elapsed() < Duration::from_millis(500));

    let t = time_to_close(&mut silent, Duration::from_secs(8)).await;
    assert!(
        t > Duration::from_millis(300) && t < Duration::from_secs(5),
        "silent connection closed after {t:?}"
    );
}
