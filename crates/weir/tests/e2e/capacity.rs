//! Capacity control: max_conn is never exceeded, the pool queue is FIFO, and
//! overflow answers with the configured status and Retry-After.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::client;
use weir_testkit::{HttpUpstream, Latency, TcpUpstream};

use crate::common::{endpoints, free_addr, one_pool, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_conn_holds_under_200_concurrent_clients() {
    let mut ups = Vec::new();
    for name in ["a", "b", "c"] {
        let up = HttpUpstream::builder(name)
            .latency(Latency::Uniform(
                Duration::from_millis(5),
                Duration::from_millis(15),
            ))
            .spawn()
            .await
            .unwrap();
        ups.push(up);
    }
    let listen = free_addr();
    let eps = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1), (ups[2].addr(), 1)]);
    let extra = "max_conn = 2\nmax_queue = 1000\nqueue_timeout = \"30s\"";
    let _w = Weir::start(&one_pool(listen, &eps, extra), &[listen]);

    let clients: Vec<_> = (0..200)
        .map(|_| {
            tokio::spawn(async move {
                let mut codes = Vec::new();
                for _ in 0..3 {
                    codes.push(client::get(listen, "/").await.map(|r| r.status.as_u16()));
                }
                codes
            })
        })
        .collect();
    for c in clients {
        for code in c.await.unwrap() {
            assert_eq!(code.unwrap(), 200);
        }
    }
    let total: u64 = ups.iter().map(|u| u.requests()).sum();
    assert_eq!(total, 600);
    for u in &ups {
        assert!(
            u.max_in_flight() <= 2,
            "{} saw {} in flight",
            u.name(),
            u.max_in_flight()
        );
        assert_eq!(u.max_in_flight(), 2, "{} never reached its cap", u.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_queue_is_first_in_first_out() {
    let up = HttpUpstream::builder("a")
        .latency(Latency::Fixed(Duration::from_millis(100)))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let extra = "max_conn = 1\nmax_queue = 10";
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), extra),
        &[listen],
    );

    let mut tasks = Vec::new();
    for n in 0..6 {
        tasks.push(tokio::spawn(async move {
            client::get(listen, &format!("/?n={n}")).await
        }));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().status, 200);
    }
    let order: Vec<String> = up.log().iter().map(|r| r.uri.to_string()).collect();
    let want: Vec<String> = (0..6).map(|n| format!("/?n={n}")).collect();
    assert_eq!(order, want);
    assert_eq!(up.max_in_flight(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_answers_the_overflow_status_with_retry_after() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let extra = "max_conn = 1\nmax_queue = 1\noverflow_status = 429\nqueue_timeout = \"3s\"";
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), extra),
        &[listen],
    );

    let _busy = tokio::spawn(async move { client::get(listen, "/?latency_ms=1500").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let queued = tokio::spawn(async move { client::get(listen, "/").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(r.header("x-weir-reason"), Some("queue_full"));
    assert_eq!(r.header("retry-after"), Some("3"));
    // The queued one is served once the slot frees.
    assert_eq!(queued.await.unwrap().unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn waiting_too_long_answers_queue_timeout() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let extra = "max_conn = 1\nmax_queue = 5\nqueue_timeout = \"300ms\"";
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), extra),
        &[listen],
    );

    let _busy = tokio::spawn(async move { client::get(listen, "/?latency_ms=2000").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    let r = client::get(listen, "/").await.unwrap();
    let waited = start.elapsed();
    assert_eq!(r.status, 503);
    assert_eq!(r.header("x-weir-reason"), Some("queue_timeout"));
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(
        waited >= Duration::from_millis(280) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_leaves_the_queue_frees_its_place() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let extra = "max_conn = 1\nmax_queue = 1\nqueue_timeout = \"5s\"";
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), extra),
        &[listen],
    );

    let busy = tokio::spawn(async move { client::get(listen, "/?latency_ms=800").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Queue, then hang up.
    let mut leaver = TcpStream::connect(listen).await.unwrap();
    leaver
        .write_all(b"GET /leaver HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(leaver);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Its place is free: this one queues instead of getting queue_full.
    let r = client::get(listen, "/stayer").await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(busy.await.unwrap().unwrap().status, 200);
    assert!(
        up.log().iter().all(|r| r.path != "/leaver"),
        "the leaver was served"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_sessions_respect_max_conn_and_queue() {
    let up = TcpUpstream::echo("a", true).await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.db]\nbind = \"{listen}\"\nprotocol = \"tcp\"\npool = \"db\"\n[pools.db]\n{}\nmax_conn = 1\nmax_queue = 1\nqueue_timeout = \"5s\"\n",
        endpoints(&[(up.addr(), 1)])
    );
    let _w = Weir::start(&cfg, &[listen]);
    // The readiness probe's session is over once its slot shows free.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let mut first = TcpStream::connect(listen).await.unwrap();
    let mut buf = [0u8; 2];
    first.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"a\n");

    let mut second = TcpStream::connect(listen).await.unwrap();
    let early = tokio::time::timeout(Duration::from_millis(300), second.read_exact(&mut buf)).await;
    assert!(early.is_err(), "second session connected past max_conn = 1");
    assert_eq!(up.active(), 1);

    drop(first);
    tokio::time::timeout(Duration::from_secs(3), second.read_exact(&mut buf))
        .await
        .expect("queued session never connected")
        .unwrap();
    assert_eq!(&buf, b"a\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_conn_total_caps_the_whole_pool() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    // Each endpoint could take 5, but the pool only 3 at once.
    let extra = "max_conn = 5\nmax_conn_total = 3\nmax_queue = 100\nqueue_timeout = \"10s\"";
    let _w = Weir::start(&one_pool(listen, &eps, extra), &[listen]);
    let tasks: Vec<_> = (0..12)
        .map(|_| tokio::spawn(async move { client::get(listen, "/?latency_ms=200").await }))
        .collect();
    let mut peak = 0;
    for _ in 0..30 {
        peak = peak.max(a.in_flight() + b.in_flight());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().status, 200);
    }
    assert!(peak <= 3, "{peak} in flight across the pool");
    assert_eq!(peak, 3, "the pool never reached its cap");
}
