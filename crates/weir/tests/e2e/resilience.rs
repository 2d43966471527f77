//! The resilience scenarios (a backend that crashes, one that closes idle connections,
//! rolling restarts), small enough for CI: a backend's hiccup must never become a client
//! error. (`bench/` runs the same scenarios longer, side by side with HAProxy and nginx.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::Full;
use weir_testkit::client::HttpConn;
use weir_testkit::{HttpUpstream, Latency};

use crate::common::{endpoints, free_addr, one_pool, Weir};

#[derive(Default)]
pub(crate) struct Tally {
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    /// The first few failures, for the assertion message.
    samples: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn fail(&self, what: String) {
        self.failed.fetch_add(1, Relaxed);
        let mut s = self.samples.lock().unwrap();
        if s.len() < 5 {
            s.push(what);
        }
    }
}

/// `clients` keep-alive clients, each sending `method` requests (POSTs carry a
/// body that must come back byte-exact from /echo), pausing `pace` between
/// requests, until `until`. Every non-200 or broken exchange is a failure.
async fn load(
    listen: SocketAddr,
    clients: usize,
    method: Method,
    pace: (u64, u64),
    until: Instant,
) -> Arc<Tally> {
    load_while(listen, clients, method, pace, move || {
        Instant::now() < until
    })
    .await
}

/// [`load`] for as long as `go` says (a test that changes something under load and then
/// stops it).
pub(crate) async fn load_while(
    listen: SocketAddr,
    clients: usize,
    method: Method,
    pace: (u64, u64),
    go: impl Fn() -> bool + Clone + Send + 'static,
) -> Arc<Tally> {
    let tally = Arc::new(Tally::default());
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (tally, method, go) = (tally.clone(), method.clone(), go.clone());
            tokio::spawn(async move {
                let mut conn = HttpConn::connect(listen).await.unwrap();
                let mut n = 0u64;
                while go() {
                    n += 1;
                    let body = Bytes::from(format!("client {c} request {n}"));
                    let (path, sent) = if method == Method::POST {
                        ("/echo", body.clone())
                    } else {
                        ("/", Bytes::new())
                    };
                    let req = Request::builder()
                        .method(method.clone())
                        .uri(path)
                        .body(Full::new(sent))
                        .unwrap();
                    match conn.send(req).await {
                        Ok(r) if r.status == 200 && (method != Method::POST || r.body == body) => {
                            tally.ok.fetch_add(1, Relaxed);
                        }
                        Ok(r) => tally.fail(format!(
                            "{} {:?} {}",
                            r.status,
                            r.header("x-weir-reason"),
                            r.text()
                        )),
                        Err(e) => tally.fail(format!("client error: {e}")),
                    }
                    if conn.is_closed() {
                        // weir closed a client keep-alive: that is a failure too.
                        tally.fail("weir closed the client connection".into());
                        conn = HttpConn::connect(listen).await.unwrap();
                    }
                    let (lo, hi) = pace;
                    if hi > 0 {
                        let ms = lo + fastrand_ms(hi - lo);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    tally
}

fn fastrand_ms(span: u64) -> u64 {
    // Good enough jitter without another dependency.
    let nanos = Instant::now().elapsed().as_nanos() as u64 ^ std::process::id() as u64;
    if span == 0 {
        0
    } else {
        (nanos.wrapping_mul(6364136223846793005) >> 33) % (span + 1)
    }
}

async fn spawn_fast(names: &[&str]) -> Vec<Arc<HttpUpstream>> {
    let mut v = Vec::new();
    for n in names {
        let up = HttpUpstream::builder(n)
            .latency(Latency::Fixed(Duration::from_millis(1)))
            .spawn()
            .await
            .unwrap();
        v.push(Arc::new(up));
    }
    v
}

pub(crate) fn assert_clean(scenario: &str, t: &Tally) {
    // (see assert_only_delivered_posts_fail for the one allowed exception)
    let (ok, failed) = (t.ok.load(Relaxed), t.failed.load(Relaxed));
    assert!(ok > 100, "{scenario}: only {ok} requests went through");
    let samples = t.samples.lock().unwrap();
    assert_eq!(
        failed,
        0,
        "{scenario}: {failed} failed of {}: {samples:#?}",
        ok + failed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flapping_backend_fails_no_get_and_only_delivered_posts() {
    for method in [Method::GET, Method::POST] {
        let ups = spawn_fast(&["steady", "flappy"]).await;
        let listen = free_addr();
        let eps = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1)]);
        let health =
            "[pools.app.health]\ncheck = \"tcp\"\ninterval = \"200ms\"\ntimeout = \"100ms\"";
        let _w = Weir::start(&one_pool(listen, &eps, health), &[listen]);
        let until = Instant::now() + Duration::from_secs(3);
        let flappy = ups[1].clone();
        let flapper = tokio::spawn(async move {
            while Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(400)).await;
                flappy.stop().await;
                tokio::time::sleep(Duration::from_millis(400)).await;
                flappy.start().await;
            }
        });
        let t = load(listen, 20, method.clone(), (0, 0), until).await;
        flapper.await.unwrap();
        if method == Method::GET {
            assert_clean("flapping, GET", &t);
        } else {
            assert_only_delivered_posts_fail(&t);
        }
    }
}

/// The one failure docs/DESIGN.md §4 allows: a POST that went out on a fresh
/// connection (not a reused one), which the backend then dropped before
/// answering. The backend had it, so weir must not send it twice; it answers
/// 502 upstream_reset. Anything else (refused connects, stale keep-alives,
/// retries running out) must never reach the client.
fn assert_only_delivered_posts_fail(t: &Tally) {
    let (ok, failed) = (t.ok.load(Relaxed), t.failed.load(Relaxed));
    assert!(ok > 100, "only {ok} requests went through");
    let samples = t.samples.lock().unwrap();
    assert!(
        samples.iter().all(|s| s.contains("upstream_reset")),
        "{samples:#?}"
    );
    assert!(failed * 200 <= ok, "{failed} of {ok}: {samples:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn silent_idle_close_races_cause_no_client_error() {
    // The backend drops keep-alive connections idle for 40 ms; clients pace
    // their POSTs at 34–46 ms, right across that edge.
    let up = HttpUpstream::builder("a")
        .idle_close(Duration::from_millis(40))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let until = Instant::now() + Duration::from_secs(3);
    let t = load(listen, 16, Method::POST, (34, 46), until).await;
    assert_clean("idle close at 40 ms", &t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_causes_no_client_error() {
    for method in [Method::GET, Method::POST] {
        let ups = spawn_fast(&["a", "b", "c"]).await;
        let listen = free_addr();
        let all: Vec<(SocketAddr, u32)> = ups.iter().map(|u| (u.addr(), 1)).collect();
        let health =
            "[pools.app.health]\ncheck = \"tcp\"\ninterval = \"200ms\"\ntimeout = \"100ms\"";
        let _w = Weir::start(&one_pool(listen, &endpoints(&all), health), &[listen]);
        let until = Instant::now() + Duration::from_millis(3500);
        let restarter = {
            let ups = ups.clone();
            tokio::spawn(async move {
                for up in &ups {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    up.shutdown_gracefully().await;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    up.start().await;
                }
            })
        };
        let t = load(listen, 20, method.clone(), (0, 0), until).await;
        restarter.await.unwrap();
        assert_clean(&format!("rolling restart, {method}"), &t);
    }
}
