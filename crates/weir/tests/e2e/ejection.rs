//! Passive ejection through the real binary: consecutive failures on real
//! traffic take an endpoint out for eject_time (growing with repeated
//! ejections), `eject_status` answers count as failures, and
//! `max_ejection_percent` is never exceeded.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, Weir};

/// An endpoint that accepts every connection and closes it at once, without
/// a byte: each try on it fails (reset or closed), and each one is counted.
pub(crate) struct Closer {
    pub(crate) addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Closer {
    pub(crate) async fn spawn() -> Closer {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let accepted = Arc::new(AtomicU64::new(0));
        let count = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                count.fetch_add(1, Relaxed);
                drop(s);
            }
        });
        Closer {
            addr,
            accepted,
            task,
        }
    }

    pub(crate) fn accepted(&self) -> u64 {
        self.accepted.load(Relaxed)
    }
}

impl Drop for Closer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lines_with(w: &Weir, needles: &[&str]) -> Vec<String> {
    w.log_text()
        .lines()
        .filter(|l| needles.iter().all(|n| l.contains(n)))
        .map(str::to_string)
        .collect()
}

/// Waits until weir logged `n` lines containing every needle.
fn wait_lines(w: &Weir, needles: &[&str], n: usize, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while lines_with(w, needles).len() < n {
        if Instant::now() > deadline {
            panic!(
                "fewer than {n} log lines with {needles:?}; log:\n{}",
                w.log_text()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_endpoint_is_ejected_and_retries_hide_it() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let dead = free_addr();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1), (dead, 1)]);
    let w = Weir::start(
        &one_pool(listen, &eps, "[pools.app.health]\neject_after = 2"),
        &[listen],
    );

    for i in 0..30 {
        let r = client::get(listen, &format!("/?n={i}")).await.unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
    }
    // Round robin sends every third request to the dead endpoint first: its
    // second refused connection ejects it.
    let line = w.wait_log(0, "endpoint ejected", Duration::from_secs(2));
    assert!(line.contains(&dead.to_string()), "{line}");
    assert!(line.contains("after 2 consecutive failures"), "{line}");
    assert!(line.contains("connect_failed"), "{line}");
    // Ejected for the default 10 s: once is all.
    assert_eq!(lines_with(&w, &["endpoint ejected"]).len(), 1);
    assert_eq!(a.requests() + b.requests(), 30);
    assert_eq!(lines_with(&w, &["request failed"]).len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_ejected_endpoint_gets_no_tries_then_returns_and_is_ejected_longer() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let bad = Closer::spawn().await;
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1), (bad.addr, 1)]);
    let w = Weir::start(
        &one_pool(
            listen,
            &eps,
            "[pools.app.health]\neject_after = 2\neject_time = \"1s\"",
        ),
        &[listen],
    );
    let needle = ["endpoint ejected", &bad.addr.to_string()];

    // Until the second failure, which ejects it (the try failed, and was
    // counted, before its request was retried and answered).
    let mut sent = 0;
    let ejected_at = loop {
        let before = Instant::now();
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        if bad.accepted() >= 2 {
            break before;
        }
        sent += 1;
        assert!(sent < 30, "no second try on the failing endpoint");
    };
    w.wait_log(0, "endpoint ejected", Duration::from_secs(2));
    let first = lines_with(&w, &needle).remove(0);
    assert!(first.contains("for 1000 ms"), "{first}");
    assert!(first.contains("after 2 consecutive failures"), "{first}");
    assert_eq!(bad.accepted(), 2);

    // While ejected, not one try reaches it.
    for _ in 0..20 {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
    }
    assert!(
        ejected_at.elapsed() < Duration::from_millis(900),
        "too slow to tell: {:?}",
        ejected_at.elapsed()
    );
    assert_eq!(bad.accepted(), 2, "an ejected endpoint got a try");

    // After eject_time it takes traffic again; still failing, it is ejected
    // again, for 2 × eject_time.
    tokio::time::sleep(Duration::from_millis(1100).saturating_sub(ejected_at.elapsed())).await;
    let deadline = Instant::now() + Duration::from_secs(3);
    while lines_with(&w, &needle).len() < 2 {
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(Instant::now() < deadline, "never ejected again");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let second = lines_with(&w, &needle).remove(1);
    assert!(second.contains("for 2000 ms"), "{second}");
    assert_eq!(bad.accepted(), 4);
    assert_eq!(lines_with(&w, &["request failed"]).len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eject_status_answers_count_as_failures() {
    // Both backends answer 503 on /status/503: with eject_status = [503] the
    // first to fail twice in a row is ejected (the second cannot be: 50% of 2
    // is 1), and the other takes all the traffic.
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let w = Weir::start(
        &one_pool(
            listen,
            &eps,
            "[pools.app.health]\neject_after = 2\neject_status = [503]",
        ),
        &[listen],
    );

    // Statuses not listed are not failures.
    for _ in 0..10 {
        let r = client::get(listen, "/status/500").await.unwrap();
        assert_eq!(r.status, 500);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(lines_with(&w, &["endpoint ejected"]).len(), 0);

    for _ in 0..6 {
        let r = client::get(listen, "/status/503").await.unwrap();
        // The backend's own answer, not weir's.
        assert_eq!(r.status, 503);
        assert!(r.header("x-weir-reason").is_none());
    }
    let line = w.wait_log(0, "endpoint ejected", Duration::from_secs(2));
    assert!(line.contains("ejecting status"), "{line}");
    let (out, kept) = if line.contains(&a.addr().to_string()) {
        (&a, &b)
    } else {
        assert!(line.contains(&b.addr().to_string()), "{line}");
        (&b, &a)
    };
    assert_eq!(lines_with(&w, &["endpoint ejected"]).len(), 1);

    out.reset_stats();
    kept.reset_stats();
    for _ in 0..10 {
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.header("x-upstream"), Some(kept.name()));
    }
    assert_eq!((out.requests(), kept.requests()), (0, 10));
}

/// A pool of both `dead` addresses (or the one), 20 GETs; returns how many
/// "endpoint ejected" lines weir logged, once a line logged after all of them is in (a
/// refused path's; the failed requests' own lines are one per cause and period).
async fn ejections_with_all_dead(dead: &[SocketAddr], health: &str) -> usize {
    let listen = free_addr();
    let list: Vec<(SocketAddr, u32)> = dead.iter().map(|d| (*d, 1)).collect();
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&list),
            &format!("[pools.app.health]\n{health}"),
        ),
        &[listen],
    );
    for _ in 0..20 {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 502);
    }
    let barrier = b"GET /../after HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    let r = crate::common::raw_exchange(listen, barrier, Duration::from_secs(20)).await;
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    wait_lines(&w, &["no normal form"], 1, Duration::from_secs(20));
    let ejected = lines_with(&w, &["endpoint ejected"]);
    for l in &ejected {
        assert!(dead.iter().any(|d| l.contains(&d.to_string())), "{l}");
    }
    ejected.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_ejection_percent_50_ejects_one_of_two_dead_endpoints() {
    let dead = [free_addr(), free_addr()];
    let n = ejections_with_all_dead(&dead, "eject_after = 2\nmax_ejection_percent = 50").await;
    assert_eq!(n, 1, "a pool of 2 at 50% ejects exactly one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_ejection_percent_0_never_ejects() {
    let dead = [free_addr(), free_addr()];
    let n = ejections_with_all_dead(&dead, "eject_after = 2\nmax_ejection_percent = 0").await;
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_of_one_at_50_percent_never_ejects() {
    let n = ejections_with_all_dead(&[free_addr()], "eject_after = 2").await;
    assert_eq!(n, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_ejection_survives_a_reload() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let bad = Closer::spawn().await;
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1), (bad.addr, 1)]);
    let cfg = one_pool(listen, &eps, "[pools.app.health]\neject_after = 2");
    let w = Weir::start(&cfg, &[listen]);
    let needle = ["endpoint ejected", &bad.addr.to_string()];
    let mut sent = 0;
    while lines_with(&w, &needle).is_empty() {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
        sent += 1;
        assert!(sent < 30, "not ejected; log:\n{}", w.log_text());
    }
    let tries = bad.accepted();

    // An unrelated change: another pool.
    let other = HttpUpstream::spawn("other").await.unwrap();
    let changed = format!(
        "{cfg}\n[routes.other]\nlistener = \"web\"\npath_prefix = \"/other\"\npool = \"other\"\n\
         [pools.other]\n{}\n",
        endpoints(&[(other.addr(), 1)])
    );
    let outcome = w.reload(&changed);
    assert!(outcome.contains("config reloaded"), "{outcome}");
    for _ in 0..20 {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
    }
    assert_eq!(bad.accepted(), tries, "the reload cleared the ejection");
    assert_eq!(
        client::get(listen, "/other")
            .await
            .unwrap()
            .header("x-upstream"),
        Some("other")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_consecutive_failures_eject() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(a.addr(), 1)]),
            "[pools.app.health]\neject_after = 3\neject_status = [503]\nmax_ejection_percent = 100",
        ),
        &[listen],
    );
    // Two failures, then a success resets the count: never three in a row.
    for _ in 0..4 {
        for path in ["/status/503", "/status/503", "/"] {
            client::get(listen, path).await.unwrap();
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(lines_with(&w, &["endpoint ejected"]).len(), 0);
    for _ in 0..3 {
        client::get(listen, "/status/503").await.unwrap();
    }
    let line = w.wait_log(0, "endpoint ejected", Duration::from_secs(2));
    assert!(line.contains("after 3 consecutive failures"), "{line}");
}

/// A pool of one that may be ejected whole (max_ejection_percent = 100), and
/// is, for 1 s, by one 503. Returns a time before the ejection.
async fn sole_endpoint_ejected(policy: &str) -> (HttpUpstream, SocketAddr, Weir, Instant) {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(
            listen,
            &endpoints(&[(a.addr(), 1)]),
            &format!(
                "[pools.app.health]\neject_after = 1\neject_status = [503]\n\
                 max_ejection_percent = 100\neject_time = \"1s\"\nno_healthy = \"{policy}\""
            ),
        ),
        &[listen],
    );
    let before = Instant::now();
    let r = client::get(listen, "/status/503").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (503, "a\n".to_string()));
    w.wait_log(0, "endpoint ejected", Duration::from_secs(2));
    (a, listen, w, before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fail_closed_refuses_while_every_endpoint_is_ejected() {
    let (a, listen, _w, before) = sole_endpoint_ejected("fail_closed").await;
    let r = client::get(listen, "/").await.unwrap();
    assert!(
        before.elapsed() < Duration::from_millis(900),
        "too slow to tell: {:?}",
        before.elapsed()
    );
    assert_eq!(r.status, 503);
    assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));
    assert_eq!(a.requests(), 1);
    // Served again once eject_time is over.
    loop {
        let r = client::get(listen, "/").await.unwrap();
        if r.status == 200 {
            assert_eq!(r.text(), "a\n");
            break;
        }
        assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));
        assert!(before.elapsed() < Duration::from_secs(3), "never back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // About eject_time: ejection deadlines live on the coarse millisecond
    // clock (`clock.rs`), which may lag real time by a tick or more, so the
    // endpoint can be back a few milliseconds before a full second.
    assert!(
        before.elapsed() >= Duration::from_millis(900),
        "{:?}",
        before.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fail_open_serves_while_every_endpoint_is_ejected() {
    let (a, listen, _w, _) = sole_endpoint_ejected("fail_open").await;
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (200, "a\n".to_string()));
    assert_eq!(a.requests(), 2);
}

/// Which upstream answered each of `n` GETs, by name.
async fn answered_by(listen: SocketAddr, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0..n {
        let r = client::get(listen, &format!("/?after={i}")).await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
        out.push(r.header("x-upstream").unwrap_or("?").to_string());
    }
    out
}

const CHECKED_EJECTING: &str = "[pools.app.health]\ncheck = \"tcp\"\ninterval = \"100ms\"\n\
    timeout = \"80ms\"\nrise = 1\nfall = 1\neject_after = 1\neject_time = \"60s\"";

/// A backend that crashed with requests in flight and came back is flapping: the active
/// checks seeing it up again do not cut its ejection short (they used to, and a backend
/// crashing every 2 s lost the requests in flight at most of its crashes).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_endpoint_that_dropped_requests_stays_ejected_when_its_checks_recover() {
    let steady = HttpUpstream::spawn("steady").await.unwrap();
    let flappy = HttpUpstream::builder("flappy")
        .latency(weir_testkit::Latency::Fixed(Duration::from_millis(500)))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(steady.addr(), 1), (flappy.addr(), 1)]);
    let w = Weir::start(&one_pool(listen, &eps, CHECKED_EJECTING), &[listen]);

    // Requests in flight on flappy when it crashes.
    let posts: Vec<_> = (0..4)
        .map(|i| {
            tokio::spawn(async move {
                let req = http::Request::post(format!("http://{listen}/echo?n={i}"))
                    .body(http_body_util::Full::new(bytes::Bytes::from_static(b"x")))
                    .unwrap();
                client::send(listen, req).await.unwrap().status.as_u16()
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while flappy.in_flight() == 0 {
        assert!(Instant::now() < deadline, "no request reached flappy");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    flappy.stop().await;
    let statuses: Vec<u16> = futures_join(posts).await;
    assert!(statuses.contains(&502), "{statuses:?}");
    let needle = ["endpoint ejected", &flappy.addr().to_string()];
    wait_lines(&w, &needle, 1, Duration::from_secs(5));
    wait_lines(&w, &["endpoint is unhealthy"], 1, Duration::from_secs(5));
    flappy.start().await;
    wait_lines(
        &w,
        &["endpoint is healthy again"],
        1,
        Duration::from_secs(5),
    );

    let by = answered_by(listen, 20).await;
    assert!(by.iter().all(|u| u == "steady"), "{by:?}");
}

/// One that only refused connections (a restart, nothing lost) is back as soon as the checks
/// see it up: its ejection said nothing more than they do.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_endpoint_that_only_refused_connections_returns_when_its_checks_recover() {
    let steady = HttpUpstream::spawn("steady").await.unwrap();
    let restarted = HttpUpstream::spawn("restarted").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(steady.addr(), 1), (restarted.addr(), 1)]);
    // Checks every 1 s and 3 failures to mark it down, so traffic surely finds it down
    // (and ejects it) before they do.
    let health = CHECKED_EJECTING
        .replace("interval = \"100ms\"", "interval = \"1s\"")
        .replace("fall = 1", "fall = 3");
    let w = Weir::start(&one_pool(listen, &eps, &health), &[listen]);

    restarted.stop().await;
    let needle = ["endpoint ejected", &restarted.addr().to_string()];
    let deadline = Instant::now() + Duration::from_secs(10);
    while lines_with(&w, &needle).is_empty() {
        assert!(
            Instant::now() < deadline,
            "never ejected:\n{}",
            w.log_text()
        );
        // Refused connects are retried on steady: every answer is a 200.
        answered_by(listen, 2).await;
    }
    assert!(lines_with(&w, &needle)[0].contains("connect_failed"));
    wait_lines(&w, &["endpoint is unhealthy"], 1, Duration::from_secs(15));
    restarted.start().await;
    wait_lines(
        &w,
        &["endpoint is healthy again"],
        1,
        Duration::from_secs(5),
    );

    let by = answered_by(listen, 20).await;
    assert!(by.iter().any(|u| u == "restarted"), "{by:?}");
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<u16>>) -> Vec<u16> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// A request body the client breaks (here a chunk size that is not hex) fails the try on the
/// client's side: it must not count against the endpoint, or a few bad clients could eject
/// every backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bodies_that_clients_break_do_not_eject_the_endpoint() {
    let up = HttpUpstream::spawn("up").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(up.addr(), 1)]);
    // No replay buffer, so the body streams to the endpoint as it arrives and breaks there.
    let health = "[pools.app.health]\neject_after = 2\nmax_ejection_percent = 100\n\
                  [pools.app.retry]\nbuffer = 0";
    let w = Weir::start(&one_pool(listen, &eps, health), &[listen]);
    let bad = b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\
                5\r\nhello\r\nzz\r\n";
    for _ in 0..4 {
        let answer = crate::common::raw_exchange(listen, bad, Duration::from_secs(5)).await;
        // The client's mistake, said as such: as when the body is read before sending.
        assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
        assert!(answer.contains("x-weir-reason: bad_request"), "{answer:?}");
    }
    // Each one was answered and logged before the next was sent.
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(lines_with(&w, &["endpoint ejected"]), Vec::<String>::new());
}
