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
