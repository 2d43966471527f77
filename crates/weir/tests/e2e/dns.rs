//! Backends given by DNS name, against a real DNS server (dnsmasq on loopback, its hosts file
//! rewritten by the test): records added, changed and removed under load lose no request; the
//! TTL paces the queries; a server that dies leaves the last answer serving; a name with 64
//! addresses; a tcp pool by name; SRV weights; a name that does not resolve yet.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_testkit::client;
use weir_testkit::dnsmasq::{Dnsmasq, Srv};
use weir_testkit::{HttpUpstream, Latency, TcpUpstream};

use crate::common::{free_addr, Weir};
use crate::resilience::{assert_clean, load_while};

const WAIT: Duration = Duration::from_secs(30);

/// `api.weir.test` with two addresses (the first two of [`backends`]).
const TWO_ADDRESSES: [(&str, &str); 2] = [
    ("127.0.0.2", "api.weir.test"),
    ("127.0.0.3", "api.weir.test"),
];

/// `n` backends on 127.0.0.2.., all on one port, answering with their name.
async fn backends(names: &[&str]) -> Vec<Arc<HttpUpstream>> {
    let mut port = 0;
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let ip: IpAddr = format!("127.0.0.{}", i + 2).parse().unwrap();
        let up = HttpUpstream::builder(n)
            .addr(SocketAddr::new(ip, port))
            .latency(Latency::Fixed(Duration::from_millis(1)))
            .spawn()
            .await
            .unwrap();
        port = up.addr().port();
        out.push(Arc::new(up));
    }
    out
}

fn config(listen: SocketAddr, dns: SocketAddr, eps: &str, global_extra: &str) -> String {
    format!(
        r#"
[global]
resolvers = ["{dns}"]
{global_extra}

[listeners.web]
bind = "{listen}"
pool = "app"

[pools.app]
endpoints = [{eps}]
"#
    )
}

/// Blocking work (dnsmasq) from an async test.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

/// Waits until `up` has answered more requests than it had when called.
async fn serves(up: &HttpUpstream, what: &str) -> Duration {
    let start = Instant::now();
    let before = up.requests();
    while up.requests() == before {
        assert!(
            start.elapsed() < WAIT,
            "{what}: {} got no request",
            up.name()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    start.elapsed()
}

/// Waits until each of `ups` has answered `n` more requests than when called.
async fn served_each(ups: &[Arc<HttpUpstream>], n: u64, what: &str) {
    let start = Instant::now();
    let before: Vec<_> = ups.iter().map(|u| u.requests()).collect();
    while ups.iter().zip(&before).any(|(u, b)| u.requests() < b + n) {
        assert!(
            start.elapsed() < WAIT,
            "{what}: not {n} requests on each backend"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `up` gets no more requests (its address left the pool and drained).
async fn left(up: &HttpUpstream, what: &str) {
    let start = Instant::now();
    loop {
        let before = up.requests();
        tokio::time::sleep(Duration::from_millis(500)).await;
        if up.requests() == before && up.in_flight() == 0 {
            return;
        }
        assert!(start.elapsed() < WAIT, "{what}: {} still serves", up.name());
    }
}

/// The text of `/metrics`.
async fn metrics(w: &Weir) -> String {
    client::get(w.admin, "/metrics").await.unwrap().text()
}

/// Waits until a GET through `listen` is answered 200 by a backend.
async fn first_answer(listen: SocketAddr) {
    let start = Instant::now();
    loop {
        if let Ok(r) = client::get(listen, "/").await {
            if r.status == 200 {
                return;
            }
        }
        assert!(start.elapsed() < WAIT, "the pool never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn records_added_changed_and_removed_under_load_lose_no_request() {
    let ups = backends(&["a", "b", "c"]).await;
    let (a, b, c) = (ups[0].clone(), ups[1].clone(), ups[2].clone());
    let port = a.addr().port();
    let dns = blocking(|| Dnsmasq::start(&[("127.0.0.2", "api.weir.test")], 1)).await;
    let dns = Arc::new(std::sync::Mutex::new(dns));
    let listen = free_addr();
    let addr = dns.lock().unwrap().addr();
    let eps = format!("{{ addr = \"api.weir.test:{port}\" }}");
    let w = Weir::start(&config(listen, addr, &eps, ""), &[listen]);
    first_answer(listen).await;

    let go = Arc::new(AtomicBool::new(true));
    let running = go.clone();
    let load = tokio::spawn(load_while(listen, 4, Method::GET, (1, 5), move || {
        running.load(Relaxed)
    }));
    serves(&a, "before any change").await;

    let set = |hosts: Vec<(&'static str, &'static str)>| {
        let dns = dns.clone();
        blocking(move || dns.lock().unwrap().set_hosts(&hosts))
    };
    // Added: b serves within the TTL (1 s) and a second, give or take a loaded machine.
    set(vec![
        ("127.0.0.2", "api.weir.test"),
        ("127.0.0.3", "api.weir.test"),
    ])
    .await;
    let took = serves(&b, "added").await;
    // TTL + 1 s is the promise; 3 s more for a loaded test machine.
    assert!(
        took < Duration::from_secs(5),
        "a new address served after {took:?}"
    );
    // Changed: a's address is replaced by c's; a drains.
    set(vec![
        ("127.0.0.3", "api.weir.test"),
        ("127.0.0.4", "api.weir.test"),
    ])
    .await;
    serves(&c, "changed").await;
    left(&a, "changed").await;
    // Removed: only c is left.
    set(vec![("127.0.0.4", "api.weir.test")]).await;
    left(&b, "removed").await;
    serves(&c, "removed").await;

    go.store(false, Relaxed);
    let tally = load.await.unwrap();
    assert_clean("dns records changing", &tally);
    let m = metrics(&w).await;
    assert!(
        m.contains("weir_dns_resolutions_total{pool=\"app\",result=\"ok\"}"),
        "{m}"
    );
    // Each change went through the endpoint-update path, not a config rebuild.
    assert!(w.log_text().contains("endpoints of pool app from dns"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reload_that_reweighs_a_name_keeps_its_addresses_serving() {
    let ups = backends(&["a", "b"]).await;
    let port = ups[0].addr().port();
    let dns = blocking(|| Dnsmasq::start(&TWO_ADDRESSES, 60)).await;
    let listen = free_addr();
    let eps = |w: u32| format!("{{ addr = \"api.weir.test:{port}\", weight = {w} }}");
    let w = Weir::start(&config(listen, dns.addr(), &eps(1), ""), &[listen]);
    first_answer(listen).await;
    let go = Arc::new(AtomicBool::new(true));
    let running = go.clone();
    let load = tokio::spawn(load_while(listen, 4, Method::GET, (1, 5), move || {
        running.load(Relaxed)
    }));
    // Load on both addresses before the reload and after it.
    served_each(&ups, 60, "before the reload").await;
    let outcome = w.reload(&config(listen, dns.addr(), &eps(7), ""));
    assert!(outcome.contains("config reloaded"), "{outcome}");
    let start = Instant::now();
    loop {
        let stats: serde_json::Value =
            serde_json::from_str(&client::get(w.admin, "/api/v1/stats").await.unwrap().text())
                .unwrap();
        let weights: Vec<_> = pool_stats(&stats, "app")["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["weight"].clone())
            .collect();
        if weights == [7, 7] {
            break;
        }
        assert!(start.elapsed() < WAIT, "weights {weights:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    served_each(&ups, 60, "after the reload").await;
    go.store(false, Relaxed);
    assert_clean("a name reweighed", &load.await.unwrap());
    // The TTL is 60 s: the reweighing needed no new answer, nor did the pool lose one.
    assert!(!w.log_text().contains("endpoints of pool app from dns: 0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_ttl_paces_queries_and_a_dead_server_keeps_the_last_answer() {
    let ups = backends(&["a", "b"]).await;
    let (a, b) = (ups[0].clone(), ups[1].clone());
    let port = a.addr().port();
    let mut dns = blocking(|| Dnsmasq::start(&[("127.0.0.2", "api.weir.test")], 2)).await;
    let listen = free_addr();
    let eps = format!("{{ addr = \"api.weir.test:{port}\" }}");
    let w = Weir::start(&config(listen, dns.addr(), &eps, ""), &[listen]);
    first_answer(listen).await;

    // With a TTL of 2 s, 6 s see about 3 queries for A: never a storm.
    let before = dns.queries("A", "api.weir.test");
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let asked = dns.queries("A", "api.weir.test") - before;
    let secs = start.elapsed().as_secs_f64();
    assert!(
        asked >= 1 && (asked as f64) <= secs / 2.0 + 2.0,
        "{asked} queries for A in {secs:.1} s with a TTL of 2 s:\n{}",
        dns.log()
    );

    // The server dies: the last answer keeps serving, and the failure is said once.
    let go = Arc::new(AtomicBool::new(true));
    let running = go.clone();
    let load = tokio::spawn(load_while(listen, 4, Method::GET, (1, 5), move || {
        running.load(Relaxed)
    }));
    let mut dns = blocking(move || {
        dns.kill();
        dns
    })
    .await;
    let from = w.log_lines();
    w.wait_log(from, "does not resolve now", WAIT);
    let start = Instant::now();
    loop {
        let m = metrics(&w).await;
        let failed = m.lines().any(|l| {
            l.starts_with("weir_dns_resolutions_total{pool=\"app\",result=\"")
                && !l.contains("result=\"ok\"")
        });
        if failed {
            break;
        }
        assert!(start.elapsed() < WAIT, "no failed resolution counted:\n{m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The API and the dashboard show it, with the address kept.
    let stats: serde_json::Value =
        serde_json::from_str(&client::get(w.admin, "/api/v1/stats").await.unwrap().text()).unwrap();
    let name = &pool_stats(&stats, "app")["names"][0];
    assert_eq!(name["name"], format!("api.weir.test:{port}"), "{stats}");
    assert_ne!(name["result"], "ok", "{stats}");
    assert_eq!(name["addresses"], serde_json::json!([a.addr().to_string()]));
    // A few more tries fail while traffic goes on.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let warned = w.log_text().matches("does not resolve now").count();
    assert!(warned <= 2, "the failure was logged {warned} times");
    serves(&a, "server dead").await;

    // Back, with another address: it is picked up.
    let _dns = blocking(move || {
        dns.restart(None);
        dns.set_hosts(&[
            ("127.0.0.2", "api.weir.test"),
            ("127.0.0.3", "api.weir.test"),
        ]);
        dns
    })
    .await;
    serves(&b, "server back").await;
    w.wait_log(from, "resolves to 2 addresses", WAIT);
    go.store(false, Relaxed);
    let tally = load.await.unwrap();
    assert_clean("dns server killed and back", &tally);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_name_with_64_addresses_is_64_endpoints() {
    // One backend on every loopback address at one port.
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let up = HttpUpstream::builder("all")
        .addr(any)
        .spawn()
        .await
        .unwrap();
    let port = up.addr().port();
    let ips: Vec<String> = (1..=64).map(|i| format!("127.0.1.{i}")).collect();
    let hosts: Vec<(String, &str)> = ips
        .iter()
        .map(|ip| (ip.clone(), "many.weir.test"))
        .collect();
    let dns = blocking(move || {
        let refs: Vec<(&str, &str)> = hosts.iter().map(|(ip, n)| (ip.as_str(), *n)).collect();
        Dnsmasq::start(&refs, 5)
    })
    .await;
    let listen = free_addr();
    let eps = format!("{{ addr = \"many.weir.test:{port}\" }}");
    let w = Weir::start(&config(listen, dns.addr(), &eps, ""), &[listen]);
    first_answer(listen).await;
    let start = Instant::now();
    loop {
        let stats: serde_json::Value =
            serde_json::from_str(&client::get(w.admin, "/api/v1/stats").await.unwrap().text())
                .unwrap();
        let n = pool_stats(&stats, "app")["endpoints"]
            .as_array()
            .map_or(0, Vec::len);
        if n == 64 {
            break;
        }
        assert!(start.elapsed() < WAIT, "{n} endpoints");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..128 {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn health_checks_judge_each_address_of_a_name() {
    let ups = backends(&["up"]).await;
    let port = ups[0].addr().port();
    // 127.0.0.3 has nothing listening at the port: that address alone is down.
    let dns = blocking(|| Dnsmasq::start(&TWO_ADDRESSES, 60)).await;
    let listen = free_addr();
    let eps = format!("{{ addr = \"api.weir.test:{port}\" }}");
    let toml = config(listen, dns.addr(), &eps, "")
        + "\n[pools.app.health]\ncheck = \"tcp\"\ninterval = \"200ms\"\ntimeout = \"100ms\"\n";
    let w = Weir::start(&toml, &[listen]);
    let down = format!("127.0.0.3:{port}");
    let start = Instant::now();
    loop {
        let stats: serde_json::Value =
            serde_json::from_str(&client::get(w.admin, "/api/v1/stats").await.unwrap().text())
                .unwrap();
        let states: Vec<(String, bool)> = pool_stats(&stats, "app")["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| (e["addr"].as_str().unwrap().to_owned(), e["healthy"] == true))
            .collect();
        if states.len() == 2 && states.iter().all(|(a, healthy)| *healthy == (*a != down)) {
            break;
        }
        assert!(start.elapsed() < WAIT, "{states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..40 {
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tcp_pool_by_name() {
    let up = TcpUpstream::echo_on("127.0.0.2:0".parse().unwrap(), "db", true)
        .await
        .unwrap();
    let port = up.addr().port();
    let dns = blocking(|| Dnsmasq::start(&[("127.0.0.2", "db.weir.test")], 5)).await;
    let listen = free_addr();
    let toml = format!(
        r#"
[global]
resolvers = ["{}"]

[listeners.db]
bind = "{listen}"
protocol = "tcp"
pool = "db"

[pools.db]
endpoints = [{{ addr = "db.weir.test:{port}" }}]
"#,
        dns.addr()
    );
    let _w = Weir::start(&toml, &[listen]);
    let start = Instant::now();
    loop {
        let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
        let mut hello = [0u8; 3];
        let got = tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut hello)).await;
        if matches!(got, Ok(Ok(_))) && &hello == b"db\n" {
            s.write_all(b"ping").await.unwrap();
            let mut back = [0u8; 4];
            s.read_exact(&mut back).await.unwrap();
            assert_eq!(&back, b"ping");
            return;
        }
        assert!(start.elapsed() < WAIT, "the tcp pool never reached db");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn srv_records_give_ports_and_weights() {
    let light = HttpUpstream::builder("light")
        .addr("127.0.0.2:0".parse().unwrap())
        .spawn()
        .await
        .unwrap();
    let heavy = HttpUpstream::builder("heavy")
        .addr("127.0.0.3:0".parse().unwrap())
        .spawn()
        .await
        .unwrap();
    let srv = vec![
        Srv {
            name: "_http._tcp.api.weir.test".into(),
            target: "light.weir.test".into(),
            port: light.addr().port(),
            priority: 0,
            weight: 1,
        },
        Srv {
            name: "_http._tcp.api.weir.test".into(),
            target: "heavy.weir.test".into(),
            port: heavy.addr().port(),
            priority: 0,
            weight: 3,
        },
        // A backup, not used while the others answer (RFC 2782: lowest priority first).
        Srv {
            name: "_http._tcp.api.weir.test".into(),
            target: "light.weir.test".into(),
            port: 1,
            priority: 10,
            weight: 100,
        },
    ];
    let dns = blocking(move || {
        Dnsmasq::start_with_srv(
            &[
                ("127.0.0.2", "light.weir.test"),
                ("127.0.0.3", "heavy.weir.test"),
            ],
            5,
            srv,
        )
    })
    .await;
    let listen = free_addr();
    let eps = "{ srv = \"_http._tcp.api.weir.test\" }";
    let w = Weir::start(&config(listen, dns.addr(), eps, ""), &[listen]);
    w.wait_log(0, "resolves to 2 addresses", WAIT);
    first_answer(listen).await;
    light.reset_stats();
    heavy.reset_stats();
    for _ in 0..400 {
        assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
    }
    let (l, h) = (light.requests(), heavy.requests());
    assert_eq!(l + h, 400);
    let ratio = h as f64 / l as f64;
    assert!((2.0..=4.5).contains(&ratio), "light {l}, heavy {h}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_name_that_does_not_resolve_yet_starts_empty_and_fills_in() {
    let ups = backends(&["late"]).await;
    let port = ups[0].addr().port();
    let dns = blocking(|| Dnsmasq::start(&[], 1)).await;
    let listen = free_addr();
    let eps = format!("{{ addr = \"late.weir.test:{port}\" }}");
    let toml = config(listen, dns.addr(), &eps, "");
    // weir check warns at the name's line and column, and passes.
    let file = w_file(&toml);
    let out = std::process::Command::new(crate::common::WEIR)
        .args(["check", file.path().to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("warning"), "{err}");
    assert!(err.contains(":11:"), "{err}");
    assert!(
        err.contains("`late.weir.test:") && err.contains("does not resolve now"),
        "{err}"
    );
    let w = Weir::start(&toml, &[listen]);
    let r = client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));
    let _dns = blocking(move || {
        dns.set_hosts(&[("127.0.0.2", "late.weir.test")]);
        dns
    })
    .await;
    first_answer(listen).await;
    assert!(w.log_text().contains("resolves to 1 addresses"));
}

/// One pool's part of `/api/v1/stats`.
fn pool_stats<'a>(stats: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    stats["pools"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == name))
        .unwrap_or(&serde_json::Value::Null)
}

fn w_file(toml: &str) -> tempfile::NamedTempFile {
    let f = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    std::fs::write(f.path(), toml).unwrap();
    f
}
