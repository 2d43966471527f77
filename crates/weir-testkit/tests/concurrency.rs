use std::time::{Duration, Instant};

use weir_testkit::{client, HttpUpstream, Latency};

async fn burst(up: &HttpUpstream, n: usize) {
    let addr = up.addr();
    let tasks: Vec<_> = (0..n)
        .map(|_| tokio::spawn(async move { client::get(addr, "/").await.unwrap() }))
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cap_makes_extra_requests_wait() {
    let up = HttpUpstream::builder("a")
        .max_concurrency(3)
        .latency(Latency::Fixed(Duration::from_millis(50)))
        .spawn()
        .await
        .unwrap();
    let start = Instant::now();
    burst(&up, 20).await;
    // 20 requests through 3 workers of 50 ms each: at least 7 rounds.
    assert!(
        start.elapsed() >= Duration::from_millis(350),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(up.max_in_flight(), 3);
    assert_eq!(up.requests(), 20);
    assert_eq!(up.in_flight(), 0);
    assert_eq!(up.connections(), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn uncapped_counts_every_concurrent_request() {
    let up = HttpUpstream::builder("a")
        .latency(Latency::Fixed(Duration::from_millis(200)))
        .spawn()
        .await
        .unwrap();
    burst(&up, 20).await;
    assert_eq!(up.max_in_flight(), 20);
    assert_eq!(up.in_flight(), 0);

    up.reset_stats();
    assert_eq!(
        (up.requests(), up.max_in_flight(), up.connections()),
        (0, 0, 0)
    );
    assert!(up.log().is_empty());
}
