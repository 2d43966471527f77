//! The admin listener: health, readiness, Prometheus metrics that a real
//! parser accepts and that match the traffic sent, and JSON stats.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use weir_testkit::client::{self, HttpConn};
use weir_testkit::{HttpUpstream, Latency};

use crate::common::{endpoints, free_addr, one_pool, Weir};

/// Every sample of `/metrics`, parsed by prometheus_client's OpenMetrics parser.
/// The reference parser, installed from PyPI when missing, so that a plain
/// `cargo test` runs these tests too (test.sh installs it as well).
fn ensure_prometheus_client() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let have = |args: &[&str]| {
            Command::new("python3")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !have(&["-c", "import prometheus_client"]) {
            assert!(
                have(&["-m", "pip", "install", "-q", "prometheus_client"]),
                "python3 -m pip install prometheus_client failed"
            );
        }
    });
}

pub(crate) async fn samples(w: &Weir) -> Vec<Value> {
    ensure_prometheus_client();
    let r = client::get(w.admin, "/metrics").await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/e2e/parse_metrics.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(&r.body).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the exposition does not parse: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        r.text()
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sum(samples: &[Value], name: &str, want: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s["name"] == name)
        .filter(|s| want.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn health_and_readiness() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let mut w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    assert_eq!(client::get(w.admin, "/healthz").await.unwrap().status, 200);
    assert_eq!(client::get(w.admin, "/readyz").await.unwrap().status, 200);

    // While draining on SIGTERM, weir is alive but not ready.
    let slow = tokio::spawn(async move { client::get(listen, "/?latency_ms=1500").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    w.signal(libc::SIGTERM);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(client::get(w.admin, "/readyz").await.unwrap().status, 503);
    assert_eq!(client::get(w.admin, "/healthz").await.unwrap().status, 200);
    assert_eq!(slow.await.unwrap().unwrap().status, 200);
    assert_eq!(w.wait_exit(Duration::from_secs(5)).code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn metrics_match_the_traffic() {
    let up = HttpUpstream::builder("a")
        .latency(Latency::None)
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let extra = "max_conn = 1\nmax_queue = 10\nqueue_timeout = \"100ms\"";
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), extra),
        &[listen],
    );

    // 92 quick requests...
    let mut conn = HttpConn::connect(listen).await.unwrap();
    for _ in 0..92 {
        assert_eq!(conn.get("/").await.unwrap().status, 200);
    }
    // ...one that holds the only slot for a second, and 7 that time out
    // waiting for it: 100 requests, 7 of them queue_timeout.
    let holder = tokio::spawn(async move { client::get(listen, "/?latency_ms=1000").await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waiters: Vec<_> = (0..7)
        .map(|_| tokio::spawn(async move { client::get(listen, "/").await }))
        .collect();
    for t in waiters {
        assert_eq!(t.await.unwrap().unwrap().status, 503);
    }
    assert_eq!(holder.await.unwrap().unwrap().status, 200);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let s = samples(&w).await;
    let ep = up.addr().to_string();
    let base = [("listener", "web"), ("pool", "app")];
    assert_eq!(sum(&s, "weir_requests_total", &base), 100.0);
    let ok = [
        base[0],
        base[1],
        ("endpoint", ep.as_str()),
        ("code", "200"),
        ("reason", ""),
    ];
    assert_eq!(sum(&s, "weir_requests_total", &ok), 93.0, "{s:#?}");
    let timed_out = [
        base[0],
        base[1],
        ("endpoint", ""),
        ("code", "503"),
        ("reason", "queue_timeout"),
    ];
    assert_eq!(sum(&s, "weir_requests_total", &timed_out), 7.0);
    assert_eq!(sum(&s, "weir_request_duration_seconds_count", &base), 100.0);
    assert_eq!(
        sum(&s, "weir_queue_duration_seconds_count", &[("pool", "app")]),
        100.0
    );
    assert_eq!(
        sum(
            &s,
            "weir_upstream_duration_seconds_count",
            &[("pool", "app")]
        ),
        93.0
    );
    // The histogram's +Inf bucket holds everything, and buckets are cumulative.
    let inf = [("pool", "app"), ("le", "+Inf")];
    assert_eq!(sum(&s, "weir_queue_duration_seconds_bucket", &inf), 100.0);
    assert_eq!(sum(&s, "weir_endpoint_in_flight", &[("pool", "app")]), 0.0);
    assert_eq!(sum(&s, "weir_endpoint_healthy", &[("pool", "app")]), 1.0);
    assert_eq!(sum(&s, "weir_queue_depth", &[("pool", "app")]), 0.0);
    assert_eq!(sum(&s, "weir_config_version", &[]), 1.0);
    assert!(s.iter().any(|x| x["name"] == "weir_connections"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reloads_are_counted_and_removed_endpoints_stop_being_reported() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(a.addr(), 1)]), ""),
        &[listen],
    );
    client::get(listen, "/").await.unwrap();
    assert!(w.reload("not toml [").contains("reload rejected"));
    assert!(w
        .reload(&one_pool(listen, &endpoints(&[(b.addr(), 1)]), ""))
        .contains("config reloaded"));
    client::get(listen, "/").await.unwrap();
    let s = samples(&w).await;
    // The file watcher and SIGHUP may both see a change; each load counts.
    let ok = sum(&s, "weir_config_reloads_total", &[("result", "ok")]);
    assert!(ok >= 1.0, "{ok}");
    assert!(sum(&s, "weir_config_reloads_total", &[("result", "failed")]) >= 1.0);
    assert_eq!(sum(&s, "weir_config_version", &[]), 1.0 + ok);
    let gone = a.addr().to_string();
    assert!(
        !s.iter().any(|x| x["labels"]["endpoint"] == gone.as_str()),
        "a removed endpoint is still reported"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stats_describe_pools_and_endpoints() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let extra = "max_conn = 4\n[pools.app.health]\ncheck = \"tcp\"\ninterval = \"200ms\"\ntimeout = \"100ms\"";
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(a.addr(), 3)]), extra),
        &[listen],
    );
    for _ in 0..20 {
        client::get(listen, "/").await.unwrap();
    }
    let r = client::get(w.admin, "/api/v1/stats").await.unwrap();
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["listeners"][0]["name"], "web");
    assert_eq!(v["listeners"][0]["requests_total"], 20);
    let pool = &v["pools"][0];
    assert_eq!(pool["name"], "app");
    assert_eq!(pool["max_conn"], 4);
    let ep = &pool["endpoints"][0];
    assert_eq!(ep["addr"], a.addr().to_string());
    assert_eq!(ep["weight"], 3);
    assert_eq!(ep["state"], "active");
    assert_eq!(ep["requests_total"], 20);
    assert!(ep["latency_ms"]["p99"].as_f64().is_some());
    assert!(ep["bytes_out"].as_u64().unwrap() >= 40);
    // Rates are over the last second sampled (once a second): traffic until one shows it.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        client::get(listen, "/").await.unwrap();
        let v: Value =
            serde_json::from_slice(&client::get(w.admin, "/api/v1/stats").await.unwrap().body)
                .unwrap();
        let rate = |x: &Value| x["requests_per_sec"].as_f64().unwrap();
        if rate(&v["pools"][0]["endpoints"][0]) > 0.0 && rate(&v["pools"][0]) > 0.0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no rate sampled: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // An endpoint going down shows as such.
    a.stop().await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let v: Value =
        serde_json::from_slice(&client::get(w.admin, "/api/v1/stats").await.unwrap().body).unwrap();
    assert_eq!(v["pools"][0]["endpoints"][0]["state"], "down");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_sessions_show_in_stats() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let up = weir_testkit::TcpUpstream::echo("e", false).await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.db]\nbind = \"{listen}\"\nprotocol = \"tcp\"\npool = \"db\"\n[pools.db]\n{}\n",
        endpoints(&[(up.addr(), 1)])
    );
    let w = Weir::start(&cfg, &[listen]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..3 {
        let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
        s.write_all(b"hello").await.unwrap();
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let v: Value =
        serde_json::from_slice(&client::get(w.admin, "/api/v1/stats").await.unwrap().body).unwrap();
    let ep = &v["pools"][0]["endpoints"][0];
    // Three sessions plus the readiness probe's.
    assert!(ep["requests_total"].as_u64().unwrap() >= 3, "{ep}");
    assert!(ep["bytes_in"].as_u64().unwrap() >= 15, "{ep}");
    assert!(ep["bytes_out"].as_u64().unwrap() >= 15, "{ep}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stats_count_requests_and_errors_per_route() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (listen, dead) = (free_addr(), free_addr());
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\n[routes.ok]\nlistener = \"web\"\nhost = \"ok.test\"\npool = \"ok\"\n[routes.dead]\nlistener = \"web\"\nhost = \"dead.test\"\npool = \"dead\"\n[pools.ok]\n{}\n[pools.dead]\n{}\n[pools.dead.retry]\nattempts = 0\n",
        endpoints(&[(up.addr(), 1)]),
        endpoints(&[(dead, 1)])
    );
    let w = Weir::start(&cfg, &[listen]);
    for host in ["ok.test", "ok.test", "dead.test", "nowhere.test"] {
        let req = http::Request::get("/")
            .header("host", host)
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        client::send(listen, req).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let v: Value =
        serde_json::from_slice(&client::get(w.admin, "/api/v1/stats").await.unwrap().body).unwrap();
    let l = &v["listeners"][0];
    assert_eq!(l["requests_total"], 4, "{l}");
    assert_eq!(l["errors"]["connect_failed"], 1, "{l}");
    assert_eq!(l["errors"]["route_not_found"], 1, "{l}");
    let route = |name: &str| {
        v["routes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(route("ok")["requests_total"], 2);
    assert_eq!(route("dead")["requests_total"], 1);
    assert_eq!(route("dead")["errors"]["connect_failed"], 1);
}

/// Why an upstream connection was not reused is a debug line (`RUST_LOG=weir_codec=debug,weir_upstream=debug`):
/// an answer that closes its connection, and a pooled connection the backend closed while it
/// sat idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_lines_say_why_an_upstream_connection_was_not_reused() {
    let closing = crate::common::fixed_backend(
        "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
    )
    .await;
    // Answers as if it kept the connection, then closes it.
    let silent =
        crate::common::fixed_backend("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await;
    let (a, b) = (free_addr(), free_addr());
    let cfg = format!(
        "[listeners.a]\nbind = \"{a}\"\npool = \"a\"\n\n[listeners.b]\nbind = \"{b}\"\npool = \"b\"\n\n\
         [pools.a]\n{}\n[pools.b]\n{}\n",
        endpoints(&[(closing, 1)]),
        endpoints(&[(silent, 1)]),
    );
    let w = Weir::start_logging(
        &cfg,
        &[a, b],
        &["--threads", "2"],
        "info,weir_codec=debug,weir_upstream=debug",
    );

    assert_eq!(client::get(a, "/").await.unwrap().status, 200);
    let line = w.wait_log(
        0,
        "upstream connection not reused after its answer",
        Duration::from_secs(20),
    );
    assert!(line.contains("keep_alive=false"), "{line}");

    // The backend's FIN reaches weir's pool some time after the answer: ask until a request
    // finds it there (each is answered either way, on a new connection if need be).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let needle = "pooled upstream connection not reused";
    loop {
        assert_eq!(client::get(b, "/").await.unwrap().status, 200);
        let log = w.log_text();
        if let Some(l) = log.lines().find(|l| l.contains(needle)) {
            assert!(l.contains("closed=true"), "{l}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {needle:?}:\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
