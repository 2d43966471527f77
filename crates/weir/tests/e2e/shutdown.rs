//! SIGTERM: stop accepting, let in-flight requests finish, close idle
//! keep-alives, exit 0; the drain grace bounds it all.

use std::time::{Duration, Instant};

use weir_testkit::client::{self, HttpConn};
use weir_testkit::{HttpUpstream, Latency};

use crate::common::{endpoints, free_addr, one_pool, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_lets_in_flight_requests_finish() {
    let up = HttpUpstream::builder("a")
        .latency(Latency::Fixed(Duration::from_millis(3000)))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let mut w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    // An idle keep-alive client that has been served once.
    let mut idle = HttpConn::connect(listen).await.unwrap();
    assert_eq!(idle.get("/?latency_ms=0").await.unwrap().status, 200);
    let inflight: Vec<_> = (0..10)
        .map(|_| tokio::spawn(async move { client::get(listen, "/").await }))
        .collect();
    // Waited for, not slept on: a loaded machine may take a while to send all ten.
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.in_flight() < 10 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(up.in_flight(), 10);

    w.signal(libc::SIGTERM);
    // The listener's watch closes the idle connection as soon as the drain reaches it;
    // the in-flight requests take the upstream's latency, far longer.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !idle.is_closed() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        idle.is_closed(),
        "idle keep-alive connection not closed on shutdown"
    );
    assert!(
        tokio::net::TcpStream::connect(listen).await.is_err(),
        "still accepting after SIGTERM"
    );
    for h in inflight {
        let r = h.await.unwrap().unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.header("connection"), Some("close"));
    }
    let status = w.wait_exit(Duration::from_secs(5));
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn drain_grace_bounds_shutdown() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[global]\ndrain_grace = \"500ms\"\n{}",
        one_pool(listen, &endpoints(&[(up.addr(), 1)]), "")
    );
    let mut w = Weir::start(&cfg, &[listen]);
    let hung = tokio::spawn(async move { client::get(listen, "/?hang=1").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = Instant::now();
    w.signal(libc::SIGTERM);
    let status = w.wait_exit(Duration::from_secs(5));
    let took = start.elapsed();
    assert_eq!(status.code(), Some(0));
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(
        hung.await.unwrap().is_err(),
        "hung request should have been cut"
    );
}
