//! Active health checks through the real binary: a failing endpoint leaves
//! rotation within about fall × interval and returns within about
//! rise × interval (http and tcp checks), `expect_body`, the `initial` state of
//! a new endpoint, health state kept across reloads, and the no-healthy policy.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, free_addr, one_pool, Weir};

/// interval = 200ms, timeout = 100ms, rise = 2, fall = 2.
const INTERVAL: Duration = Duration::from_millis(200);
const RISE: u32 = 2;
const FALL: u32 = 2;
const FAST: &str = "interval = \"200ms\"\ntimeout = \"100ms\"\nrise = 2\nfall = 2";
/// On top of fall (or rise) × interval: the ±10% jitter, the phase of the
/// checker when the backend changed, and a loaded machine.
const SLACK: Duration = Duration::from_millis(600);
/// Two checks of a rise/fall of 2 are at least 0.9 × interval apart, so no
/// flip can be seen sooner than this after the backend changed.
const EARLIEST: Duration = Duration::from_millis(150);

/// A one-pool config with a `[pools.app.health]` table.
fn checked(listen: SocketAddr, eps: &str, health: &str) -> String {
    one_pool(listen, eps, &format!("[pools.app.health]\n{health}"))
}

/// Who answered a GET: the upstream's name, or `"STATUS REASON"` when weir
/// generated the answer (or anything else went wrong).
async fn who(listen: SocketAddr) -> String {
    let r = client::get(listen, "/").await.unwrap();
    match r.header("x-upstream") {
        Some(name) if r.status == 200 => name.to_string(),
        _ => format!(
            "{} {}",
            r.status.as_u16(),
            r.header("x-weir-reason").unwrap_or("-")
        ),
    }
}

/// Sends pairs of GETs (with round robin over two endpoints, two consecutive
/// picks cover both while both are in rotation) until `done(pair)`; returns
/// the time since `since`. Panics after `limit`.
async fn until_pair(
    listen: SocketAddr,
    since: Instant,
    limit: Duration,
    done: impl Fn(&[String; 2]) -> bool,
) -> Duration {
    let mut seen = Vec::new();
    loop {
        let pair = [who(listen).await, who(listen).await];
        if done(&pair) {
            return since.elapsed();
        }
        seen.push(pair);
        if since.elapsed() > limit {
            panic!("not within {limit:?}; answers: {seen:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `n` GETs, by who answered.
async fn answers(listen: SocketAddr, n: usize) -> Vec<String> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(who(listen).await);
    }
    v
}

/// Waits for a log line (after line `from`) containing every needle.
fn wait_log_all(w: &Weir, from: usize, needles: &[&str], timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let text = w.log_text();
        if let Some(l) = text
            .lines()
            .skip(from)
            .find(|l| needles.iter().all(|n| l.contains(n)))
        {
            return l.to_string();
        }
        if Instant::now() > deadline {
            panic!("no log line with all of {needles:?}; log:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn count_log(w: &Weir, needles: &[&str]) -> usize {
    w.log_text()
        .lines()
        .filter(|l| needles.iter().all(|n| l.contains(n)))
        .count()
}

async fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_check_failing_leaves_within_fall_and_returns_within_rise() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let cfg = checked(listen, &eps, &format!("check = \"http\"\n{FAST}"));
    let w = Weir::start(&cfg, &[listen]);

    // Both in rotation, and checked.
    let mut pair = answers(listen, 2).await;
    pair.sort();
    assert_eq!(pair, ["a", "b"]);
    wait_for("checks on b", Duration::from_secs(3), || {
        b.health_checks() >= 2
    })
    .await;

    let from = w.log_lines();
    let t0 = Instant::now();
    b.set_healthy(false);
    let left = until_pair(listen, t0, Duration::from_secs(3), |p| {
        p.iter().all(|x| x == "a")
    })
    .await;
    let fall_time = INTERVAL * FALL;
    assert!(
        left >= EARLIEST && left <= fall_time + SLACK,
        "b left rotation after {left:?} (fall × interval = {fall_time:?})"
    );
    let line = wait_log_all(
        &w,
        from,
        &["endpoint is unhealthy", &b.addr().to_string()],
        Duration::from_secs(2),
    );
    assert!(line.contains("503"), "{line}");
    // Out of rotation: b gets nothing, yet it still answers requests.
    b.reset_stats();
    assert!(answers(listen, 10).await.iter().all(|x| x == "a"));
    assert_eq!(b.requests(), 0);

    let from = w.log_lines();
    let t1 = Instant::now();
    b.set_healthy(true);
    let back = until_pair(listen, t1, Duration::from_secs(3), |p| {
        p.iter().any(|x| x == "b")
    })
    .await;
    let rise_time = INTERVAL * RISE;
    assert!(
        back >= EARLIEST && back <= rise_time + SLACK,
        "b returned after {back:?} (rise × interval = {rise_time:?})"
    );
    wait_log_all(
        &w,
        from,
        &["endpoint is healthy again", &b.addr().to_string()],
        Duration::from_secs(2),
    );
    let mut pair = answers(listen, 2).await;
    pair.sort();
    assert_eq!(pair, ["a", "b"]);
    // a never flipped.
    assert_eq!(count_log(&w, &["unhealthy", &a.addr().to_string()]), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_check_takes_a_stopped_upstream_out_and_back() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    // No retries and no passive ejection: a request sent to the stopped b
    // fails visibly, and only the active check can take b out.
    let cfg = one_pool(
        listen,
        &eps,
        &format!(
            "[pools.app.health]\ncheck = \"tcp\"\n{FAST}\neject_after = 0\n\
             [pools.app.retry]\nattempts = 0"
        ),
    );
    let w = Weir::start(&cfg, &[listen]);
    let mut pair = answers(listen, 2).await;
    pair.sort();
    assert_eq!(pair, ["a", "b"]);

    let from = w.log_lines();
    let t0 = Instant::now();
    b.stop().await;
    let left = until_pair(listen, t0, Duration::from_secs(3), |p| {
        p.iter().all(|x| x == "a")
    })
    .await;
    assert!(
        left >= EARLIEST && left <= INTERVAL * FALL + SLACK,
        "stopped b left rotation after {left:?}"
    );
    wait_log_all(
        &w,
        from,
        &["endpoint is unhealthy", &b.addr().to_string()],
        Duration::from_secs(2),
    );
    // Until it left, b's turns failed (nothing retries them here); now every
    // request succeeds.
    assert!(answers(listen, 10).await.iter().all(|x| x == "a"));

    let from = w.log_lines();
    let t1 = Instant::now();
    b.start().await;
    let back = until_pair(listen, t1, Duration::from_secs(3), |p| {
        p.iter().any(|x| x == "b")
    })
    .await;
    assert!(
        back >= EARLIEST && back <= INTERVAL * RISE + SLACK,
        "restarted b returned after {back:?}"
    );
    wait_log_all(
        &w,
        from,
        &["endpoint is healthy again", &b.addr().to_string()],
        Duration::from_secs(2),
    );
    let mut pair = answers(listen, 2).await;
    pair.sort();
    assert_eq!(pair, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expect_body_mismatch_marks_unhealthy() {
    // One backend in two pools: its /healthz says "ok". Pool `good` expects
    // "ok", pool `bad` expects "nope"; both fail closed, so an unhealthy pool
    // answers 503 no_healthy_endpoint.
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(up.addr(), 1)]);
    let pool = |name: &str, body: &str| {
        format!(
            "[pools.{name}]\n{eps}\n[pools.{name}.health]\ncheck = \"http\"\n{FAST}\n\
             expect_body = \"{body}\"\nno_healthy = \"fail_closed\"\n"
        )
    };
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "good"

[routes.bad]
listener = "web"
path_prefix = "/bad"
pool = "bad"

{}
{}
"#,
        pool("good", "ok"),
        pool("bad", "nope")
    );
    let w = Weir::start(&cfg, &[listen]);

    let deadline = Instant::now() + Duration::from_secs(3);
    let down = loop {
        let r = client::get(listen, "/bad/x").await.unwrap();
        if r.status == 503 {
            break r;
        }
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(Instant::now() < deadline, "pool `bad` never went down");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(down.header("x-weir-reason"), Some("no_healthy_endpoint"));
    assert!(down.header("x-upstream").is_none());
    let line = wait_log_all(
        &w,
        0,
        &["endpoint is unhealthy", "body lacks", "nope"],
        Duration::from_secs(2),
    );
    assert!(line.contains("bad"), "{line}");

    // Several more checks later, the pool expecting "ok" is still healthy.
    let checks = up.health_checks();
    wait_for("more checks", Duration::from_secs(3), || {
        up.health_checks() >= checks + 4
    })
    .await;
    let r = client::get(listen, "/good").await.unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (200, "a\n".to_string()));
    assert_eq!(
        client::get(listen, "/bad/x").await.unwrap().status,
        503,
        "the mismatching pool came back"
    );
    assert_eq!(
        count_log(&w, &["endpoint is unhealthy"]),
        1,
        "{}",
        w.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn initial_unhealthy_keeps_a_new_endpoint_out_until_its_checks_pass() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let health = format!("check = \"http\"\n{FAST}\ninitial = \"unhealthy\"");
    let w = Weir::start(
        &checked(listen, &endpoints(&[(a.addr(), 1)]), &health),
        &[listen],
    );
    // The endpoints weir starts with are new too: a passes its checks first.
    wait_log_all(
        &w,
        0,
        &["endpoint is healthy again", &a.addr().to_string()],
        Duration::from_secs(3),
    );

    // b joins while its checks fail: it gets nothing, however long we wait.
    b.set_healthy(false);
    let both = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let outcome = w.reload(&checked(listen, &both, &health));
    assert!(outcome.contains("config reloaded"), "{outcome}");
    assert!(answers(listen, 10).await.iter().all(|x| x == "a"));
    wait_for("b's checks", Duration::from_secs(3), || {
        b.health_checks() >= 3
    })
    .await;
    assert!(answers(listen, 10).await.iter().all(|x| x == "a"));
    assert_eq!(b.requests(), 0, "an unhealthy new endpoint got traffic");

    // Once its checks pass, b joins within rise × interval.
    let t0 = Instant::now();
    b.set_healthy(true);
    let back = until_pair(listen, t0, Duration::from_secs(3), |p| {
        p.iter().any(|x| x == "b")
    })
    .await;
    assert!(
        back >= EARLIEST && back <= INTERVAL * RISE + SLACK,
        "b joined after {back:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_endpoint_that_starts_unhealthy_waits_for_rise_checks() {
    // b is healthy all along, but new to weir with initial = "unhealthy": it
    // takes traffic only after `rise` passing checks, which are at least
    // ~0.9 × 100ms (first check) + 0.9 × interval apart after the reload.
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let health = format!("check = \"http\"\n{FAST}\ninitial = \"unhealthy\"");
    let w = Weir::start(
        &checked(listen, &endpoints(&[(a.addr(), 1)]), &health),
        &[listen],
    );
    wait_log_all(
        &w,
        0,
        &["endpoint is healthy again", &a.addr().to_string()],
        Duration::from_secs(3),
    );
    let both = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let t0 = Instant::now();
    let outcome = w.reload(&checked(listen, &both, &health));
    assert!(outcome.contains("config reloaded"), "{outcome}");
    let joined = until_pair(listen, t0, Duration::from_secs(3), |p| {
        p.iter().any(|x| x == "b")
    })
    .await;
    assert!(
        joined >= Duration::from_millis(250),
        "b took traffic {joined:?} after the reload, before two checks could pass"
    );
    assert!(
        joined <= INTERVAL * RISE + SLACK,
        "b joined after {joined:?}"
    );
    assert!(b.health_checks() >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn health_state_survives_a_reload_that_keeps_the_endpoint() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let other = HttpUpstream::spawn("other").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    // Default initial = "healthy": were b's state lost, it would be back in
    // rotation right after the reload.
    let cfg = checked(listen, &eps, &format!("check = \"http\"\n{FAST}"));
    let w = Weir::start(&cfg, &[listen]);

    b.set_healthy(false);
    until_pair(listen, Instant::now(), Duration::from_secs(3), |p| {
        p.iter().all(|x| x == "a")
    })
    .await;
    b.reset_stats();

    // An unrelated change: a new pool, reached by a new route.
    let changed = format!(
        "{cfg}\n[routes.other]\nlistener = \"web\"\npath_prefix = \"/other\"\npool = \"other\"\n\
         [pools.other]\n{}\n",
        endpoints(&[(other.addr(), 1)])
    );
    let outcome = w.reload(&changed);
    assert!(outcome.contains("config reloaded"), "{outcome}");
    let right_after = answers(listen, 10).await;
    assert!(
        right_after.iter().all(|x| x == "a"),
        "unhealthy b back in rotation after the reload: {right_after:?}"
    );
    // The change did apply.
    let r = client::get(listen, "/other").await.unwrap();
    assert_eq!(r.header("x-upstream"), Some("other"));
    // And b stays out while it keeps failing: its checker still runs.
    let checks = b.health_checks();
    wait_for("b's checks", Duration::from_secs(3), || {
        b.health_checks() >= checks + 3
    })
    .await;
    assert!(answers(listen, 10).await.iter().all(|x| x == "a"));
    assert_eq!(b.requests(), 0);

    // Changed check settings restart b's checker, but not its state.
    let retuned = changed.replace("timeout = \"100ms\"", "timeout = \"150ms\"");
    assert_ne!(retuned, changed);
    let outcome = w.reload(&retuned);
    assert!(outcome.contains("config reloaded"), "{outcome}");
    let right_after = answers(listen, 10).await;
    assert!(
        right_after.iter().all(|x| x == "a"),
        "unhealthy b back in rotation after its checks changed: {right_after:?}"
    );
    assert_eq!(b.requests(), 0);

    // The checker still brings b back.
    b.set_healthy(true);
    until_pair(listen, Instant::now(), Duration::from_secs(3), |p| {
        p.iter().any(|x| x == "b")
    })
    .await;
}

/// A pool of two whose checks both fail, with `no_healthy = POLICY`; returns
/// once weir logged both as unhealthy.
async fn all_unhealthy(policy: &str) -> (HttpUpstream, HttpUpstream, SocketAddr, Weir) {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    a.set_healthy(false);
    b.set_healthy(false);
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (b.addr(), 1)]);
    let cfg = checked(
        listen,
        &eps,
        &format!("check = \"http\"\n{FAST}\nno_healthy = \"{policy}\""),
    );
    let w = Weir::start(&cfg, &[listen]);
    for up in [&a, &b] {
        wait_log_all(
            &w,
            0,
            &["endpoint is unhealthy", &up.addr().to_string()],
            Duration::from_secs(3),
        );
    }
    (a, b, listen, w)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fail_closed_answers_503_no_healthy_endpoint() {
    let (a, b, listen, _w) = all_unhealthy("fail_closed").await;
    let before = a.requests() + b.requests();
    for _ in 0..5 {
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 503);
        assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));
        assert!(r.text().contains("no_healthy_endpoint"), "{}", r.text());
    }
    assert_eq!(a.requests() + b.requests(), before);

    // One endpoint recovering is enough to serve again.
    a.set_healthy(true);
    let deadline = Instant::now() + Duration::from_secs(3);
    while who(listen).await != "a" {
        assert!(Instant::now() < deadline, "a never came back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(answers(listen, 6).await.iter().all(|x| x == "a"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fail_open_serves_from_unhealthy_endpoints() {
    let (a, b, listen, _w) = all_unhealthy("fail_open").await;
    a.reset_stats();
    b.reset_stats();
    let got = answers(listen, 10).await;
    assert!(got.iter().all(|x| x == "a" || x == "b"), "{got:?}");
    // All endpoints are used as if healthy: round robin over both.
    assert_eq!((a.requests(), b.requests()), (5, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_http_check_without_an_answer_within_timeout_fails() {
    // `silent` accepts connections (a tcp check would pass) but never answers.
    let a = HttpUpstream::spawn("a").await.unwrap();
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = l.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1), (silent, 1)]);
    let w = Weir::start(
        &checked(listen, &eps, &format!("check = \"http\"\n{FAST}")),
        &[listen],
    );
    let line = wait_log_all(
        &w,
        0,
        &["endpoint is unhealthy", &silent.to_string()],
        Duration::from_secs(3),
    );
    assert!(line.contains("no answer within 100ms"), "{line}");
    // Out of rotation: nothing hangs on it.
    let start = Instant::now();
    assert!(answers(listen, 6).await.iter().all(|x| x == "a"));
    assert!(start.elapsed() < Duration::from_secs(2));
    holder.abort();
}
