//! Replicas sharing one config through real etcd (`weir run --store etcd://...`):
//! a change through any replica is served by all, two changes valid alone but not together
//! never both commit, bad data written by someone else is ignored or held back, and losing
//! etcd stops writes (503) but never traffic.
//!
//! The replicas run on one machine, so their shared listeners bind port 0: each replica gets
//! its own free port and logs it.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use weir_testkit::etcd::Etcd;
use weir_testkit::{client, HttpUpstream};

use crate::api_client::{add, call, get, json, version};
use crate::common::Weir;

pub(crate) const PREFIX: &str = "/weir";

/// A replica whose cache of the last applied config is `cache`.
fn replica_with(etcd: &Etcd, cache: &Path) -> Weir {
    let mut w = start(etcd, cache);
    let admin = w.admin;
    w.wait_listening(admin);
    w
}

/// Starts a replica without waiting for its admin listener.
fn start(etcd: &Etcd, cache: &Path) -> Weir {
    start_with(etcd, cache, &[])
}

/// `weir run --store ... --store-cache CACHE EXTRA...`, waiting for nothing.
pub(crate) fn start_with(etcd: &Etcd, cache: &Path, extra: &[String]) -> Weir {
    let (url, cache) = (etcd.url(PREFIX), cache.display().to_string());
    let mut args = vec![
        "run",
        "--store",
        &url,
        "--store-cache",
        &cache,
        "--threads",
        "2",
    ];
    args.extend(extra.iter().map(String::as_str));
    Weir::command(&args, &[])
}

/// Replicas with their caches in one temporary directory.
struct Replicas(tempfile::TempDir, usize);

impl Replicas {
    fn new() -> Replicas {
        Replicas(tempfile::tempdir().unwrap(), 0)
    }

    fn start(&mut self, etcd: &Etcd) -> Weir {
        self.1 += 1;
        replica_with(etcd, &self.0.path().join(format!("cache-{}.json", self.1)))
    }
}

/// The address a replica's listener on port 0 got, from its log (the `n`th such line).
pub(crate) fn bound(w: &Weir, n: usize) -> SocketAddr {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found: Vec<SocketAddr> = w
            .log_text()
            .lines()
            .filter(|l| l.contains("listening") && l.contains("local="))
            .filter_map(|l| {
                l.split("local=")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        if let Some(a) = found.get(n) {
            return *a;
        }
        assert!(
            Instant::now() < deadline,
            "no listener bound:\n{}",
            w.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `GET path` on `admin` until `done` holds for its status and body.
pub(crate) async fn until(admin: SocketAddr, path: &str, done: impl Fn(u16, &str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = get(admin, path).await;
        if done(r.status.as_u16(), &r.text()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "GET {path} on {admin}: still {} {}",
            r.status,
            r.text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls `GET /` through `listen` until it answers `want`.
pub(crate) async fn until_served(listen: SocketAddr, want: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = client::get(listen, "/")
            .await
            .map(|r| r.status.as_u16())
            .ok();
        if got == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{listen}: still {got:?}, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `PUT pools/NAME` with `If-None-Match: *` and `{}`: the answer.
pub(crate) async fn put_pool(admin: SocketAddr, name: &str) -> weir_testkit::client::Resp {
    let path = format!("pools/{name}");
    call(
        admin,
        "PUT",
        &path,
        &[("if-none-match", "*")],
        Some(json!({})),
    )
    .await
}

/// Adds pool NAME through `admin`, trying again while etcd comes back (503).
async fn add_pool_once_back(admin: SocketAddr, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = put_pool(admin, name).await;
        if r.status == 201 {
            return;
        }
        assert!(Instant::now() < deadline, "still {} {}", r.status, r.text());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether /metrics says the store is up (1) or not (0).
fn store_up(metrics: &str, v: u8) -> bool {
    metrics
        .lines()
        .any(|l| l.starts_with("weir_config_store_up") && l.ends_with(&format!(" {v}")))
}

/// Pool `app` with `up`, and listener `web` on port 0 in front of it, through `admin`.
pub(crate) async fn setup(admin: SocketAddr, up: &HttpUpstream) {
    add(admin, "pools/app", json!({})).await;
    add(
        admin,
        &format!("pools/app/endpoints/{}", up.addr()),
        json!({}),
    )
    .await;
    add(
        admin,
        "listeners/web",
        json!({"bind": "127.0.0.1:0", "pool": "app"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_through_any_replica_is_served_by_all() {
    let etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let mut replicas = Replicas::new();
    let (a, b) = (replicas.start(&etcd), replicas.start(&etcd));
    setup(a.admin, &up).await;
    let (on_a, on_b) = (bound(&a, 0), bound(&b, 0));
    until_served(on_a, 200).await;
    until_served(on_b, 200).await;
    // One version everywhere: etcd's mod_revision.
    let v = version(&get(a.admin, "pools/app").await);
    until(b.admin, "pools/app", |s, _| s == 200).await;
    assert_eq!(version(&get(b.admin, "pools/app").await), v);

    // Back the other way: the endpoint removed through B leaves A nothing to send to.
    let path = format!("pools/app/endpoints/{}", up.addr());
    let tag = format!("\"{}\"", version(&get(b.admin, &path).await));
    let r = call(b.admin, "DELETE", &path, &[("if-match", &tag)], None).await;
    assert_eq!(r.status, 204, "{}", r.text());
    until_served(on_a, 503).await;

    // History compacted away under the watches: they carry on.
    tokio::task::block_in_place(|| etcd.compact());
    // A replica started now reads the whole config first.
    add(a.admin, &path, json!({})).await;
    until_served(on_b, 200).await;
    let c = replicas.start(&etcd);
    until_served(bound(&c, 0), 200).await;
    let r = json(&get(c.admin, "config").await);
    assert_eq!(r["mode"], "etcd", "{r}");
}

/// The race two replicas can run: a route added on A to a pool deleted on B at the same moment.
/// Each is valid alone; together they are not; exactly one may commit, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_valid_alone_but_not_together_never_both_commit() {
    let etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let mut replicas = Replicas::new();
    let (a, b) = (replicas.start(&etcd), replicas.start(&etcd));
    setup(a.admin, &up).await;
    for i in 0..12 {
        let pool = format!("pools/p{i}");
        let v = add(a.admin, &pool, json!({})).await;
        until(b.admin, &pool, |s, _| s == 200).await;
        let route =
            json!({"listener": "web", "path_prefix": format!("/p{i}"), "pool": format!("p{i}")});
        let tag = format!("\"{v}\"");
        let route_path = format!("routes/r{i}");
        let (absent, matching) = ([("if-none-match", "*")], [("if-match", tag.as_str())]);
        let (added, deleted) = tokio::join!(
            call(a.admin, "PUT", &route_path, &absent, Some(route)),
            call(b.admin, "DELETE", &pool, &matching, None),
        );
        let ok = |s: http::StatusCode| s.is_success();
        assert!(
            ok(added.status) != ok(deleted.status),
            "round {i}: route {} {}, pool delete {} {}",
            added.status,
            added.text(),
            deleted.status,
            deleted.text()
        );
        // The loser was refused for the config the winner left, naming what it broke.
        let loser = if ok(added.status) { &deleted } else { &added };
        assert_eq!(loser.status, 422, "round {i}: {}", loser.text());
        // Both replicas end with the winner's config.
        let (want_route, want_pool) = match ok(added.status) {
            true => (200, 200),
            false => (404, 404),
        };
        for admin in [a.admin, b.admin] {
            until(admin, &route_path, |s, _| s == want_route).await;
            until(admin, &pool, |s, _| s == want_pool).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_data_written_by_someone_else_is_ignored() {
    let etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let mut replicas = Replicas::new();
    let (a, b) = (replicas.start(&etcd), replicas.start(&etcd));
    setup(a.admin, &up).await;
    let on_b = bound(&b, 0);
    until_served(on_b, 200).await;
    let v = version(&get(a.admin, "pools/app").await);
    until(b.admin, "pools/app", |s, _| s == 200).await;

    // Not JSON: ignored with the key named; the last good pool stays.
    let from = b.log_lines();
    let key = format!("{PREFIX}/pool/app");
    tokio::task::block_in_place(|| etcd.put(&key, "{not json"));
    b.wait_log(
        from,
        "ignored /weir/pool/app: not JSON",
        Duration::from_secs(20),
    );
    assert_eq!(version(&get(b.admin, "pools/app").await), v);
    until_served(on_b, 200).await;
    let m = client::get(b.admin, "/metrics").await.unwrap().text();
    assert!(
        m.lines()
            .any(|l| l.starts_with("weir_config_store_ignored_total") && l.ends_with(" 1")),
        "{m}"
    );

    // JSON, but not a valid spec: held back, the rest runs; shown with why
    // (etcd_invalid.rs has the rest of it).
    let from = b.log_lines();
    let key = format!("{PREFIX}/pool/other");
    tokio::task::block_in_place(|| etcd.put(&key, r#"{"balance": "nope"}"#));
    let line = b.wait_log(from, "does not validate", Duration::from_secs(20));
    assert!(
        line.contains("pools/other") && line.contains("held back"),
        "{line}"
    );
    let r = get(b.admin, "pools/other").await;
    assert_eq!(r.status, 200);
    assert!(r
        .header("x-weir-invalid")
        .is_some_and(|w| w.contains("pools/other/balance")));
    until_served(on_b, 200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_etcd_writes_fail_clearly_and_traffic_flows() {
    let mut etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let mut replicas = Replicas::new();
    let (a, b) = (replicas.start(&etcd), replicas.start(&etcd));
    setup(a.admin, &up).await;
    let on_a = bound(&a, 0);
    until_served(on_a, 200).await;
    until(b.admin, "listeners/web", |s, _| s == 200).await;

    tokio::task::block_in_place(|| etcd.kill(0));
    // Traffic, reads and readiness go on from the replica's copy.
    until_served(on_a, 200).await;
    assert_eq!(client::get(a.admin, "/readyz").await.unwrap().status, 200);
    // Once the replica noticed (its watch broke), it says so: /healthz (still 200: a
    // restart would not help), the metric, and a header on reads from its copy.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let h = client::get(a.admin, "/healthz").await.unwrap();
        assert_eq!(h.status, 200);
        if h.text().contains("config store unreachable") {
            break;
        }
        assert!(Instant::now() < deadline, "{}", h.text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = get(a.admin, "pools/app").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("x-weir-stale"), Some("store-unreachable"));
    let m = client::get(a.admin, "/metrics").await.unwrap().text();
    assert!(store_up(&m, 0), "{m}");
    // A write is refused, naming the store, and changes nothing.
    let r = put_pool(a.admin, "more").await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/problem+json"),
        "{}",
        r.text()
    );
    let p = json(&r);
    assert!(
        p["type"].as_str().unwrap().ends_with("store-unreachable"),
        "{p}"
    );
    assert!(p["detail"].as_str().unwrap().contains("etcd://"), "{p}");
    assert_eq!(get(a.admin, "pools/more").await.status, 404);

    // etcd back: a change through B reaches A without a restart.
    tokio::task::block_in_place(|| etcd.restart(0));
    add_pool_once_back(b.admin, "more").await;
    until(a.admin, "pools/more", |s, _| s == 200).await;
    until_served(on_a, 200).await;
    let r = get(a.admin, "pools/more").await;
    assert_eq!(r.header("x-weir-stale"), None);
    let m = client::get(a.admin, "/metrics").await.unwrap().text();
    assert!(store_up(&m, 1), "{m}");
}

/// A replica that starts while etcd is away serves the config it last applied (its cache)
/// and says so; one without a cache waits, not ready, until etcd answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_started_while_etcd_is_away_serves_its_cache_or_waits() {
    let mut etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("a.json");
    let a = replica_with(&etcd, &cache);
    setup(a.admin, &up).await;
    until_served(bound(&a, 0), 200).await;
    // The cache follows every applied change (written off the request, so wait for it).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&cache).is_ok_and(|t| t.contains("listener")) {
        assert!(Instant::now() < deadline, "no cache written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(a);
    tokio::task::block_in_place(|| etcd.kill(0));

    let a = replica_with(&etcd, &cache);
    let line = a.wait_log(
        0,
        "starting from the config this replica last applied",
        Duration::from_secs(20),
    );
    assert!(line.contains("a.json"), "{line}");
    until_served(bound(&a, 0), 200).await;
    assert_eq!(client::get(a.admin, "/readyz").await.unwrap().status, 200);
    let r = put_pool(a.admin, "more").await;
    assert_eq!(r.status, 503, "{}", r.text());

    // No cache: it waits, and its admin listener (so /readyz) is not up.
    let b = start(&etcd, &tmp.path().join("b.json"));
    b.wait_log(0, "waiting for it, not ready", Duration::from_secs(20));
    assert!(std::net::TcpStream::connect(b.admin).is_err());

    // etcd back: B starts with the shared config; A takes changes again.
    tokio::task::block_in_place(|| etcd.restart(0));
    let mut b = b;
    let admin = b.admin;
    b.wait_listening(admin);
    until_served(bound(&b, 0), 200).await;
    add_pool_once_back(a.admin, "more").await;
    until(b.admin, "pools/more", |s, _| s == 200).await;
}

/// A registration (an endpoint PUT with a ttl) is an etcd lease: kept alive by heartbeats
/// through any replica, there after the registering replica restarts, and gone from every
/// replica once nobody renews it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_lives_as_long_as_its_etcd_lease() {
    let etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let mut replicas = Replicas::new();
    let (a, b) = (replicas.start(&etcd), replicas.start(&etcd));
    add(a.admin, "pools/app", json!({})).await;
    add(
        a.admin,
        "listeners/web",
        json!({"bind": "127.0.0.1:0", "pool": "app"}),
    )
    .await;
    let on_b = bound(&b, 0);
    let path = format!("pools/app/endpoints/{}", up.addr());
    let r = call(a.admin, "PUT", &path, &[], Some(json!({"ttl": "5s"}))).await;
    assert_eq!(r.status, 201, "{}", r.text());
    until_served(on_b, 200).await;

    // Renewed through B for longer than the ttl, with the registering replica restarted
    // meanwhile: still there.
    let beat = format!("{path}/heartbeat");
    let renewed_until = Instant::now() + Duration::from_secs(8);
    drop(a);
    let a = replicas.start(&etcd);
    while Instant::now() < renewed_until {
        let r = call(b.admin, "POST", &beat, &[], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(get(a.admin, &path).await.status, 200);
    until_served(bound(&a, 0), 200).await;

    // Nobody renews it: etcd ends the lease, and every replica drops the endpoint.
    for admin in [a.admin, b.admin] {
        until(admin, &path, |s, _| s == 404).await;
    }
    until_served(on_b, 503).await;
}

/// Three etcd members, the leader killed while changes are written through both replicas
/// and requests flow through both: every acknowledged change is there afterwards, on etcd
/// and on both replicas, and no request fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_etcd_leader_loses_no_acknowledged_write_and_no_request() {
    let mut etcd = Etcd::start(3);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let mut replicas = Replicas::new();
    let (a, b) = (replicas.start(&etcd), replicas.start(&etcd));
    setup(a.admin, &up).await;
    let listeners = [bound(&a, 0), bound(&b, 0)];
    for l in listeners {
        until_served(l, 200).await;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let traffic: Vec<_> = listeners
        .into_iter()
        .map(|l| {
            let stop = stop.clone();
            tokio::spawn(async move {
                let (mut sent, mut failed) = (0u32, Vec::new());
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    match client::get(l, "/").await {
                        Ok(r) if r.status == 200 => {}
                        other => failed.push(format!("{other:?}")),
                    }
                    sent += 1;
                }
                (sent, failed)
            })
        })
        .collect();

    let (admins, mut acked) = ([a.admin, b.admin], Vec::new());
    let write = |i: usize| async move {
        let path = format!("pools/w{i}");
        let r = call(
            admins[i % 2],
            "PUT",
            &path,
            &[("if-none-match", "*")],
            Some(json!({})),
        )
        .await;
        (path, r.status.as_u16())
    };
    for i in 0..20 {
        let (path, status) = write(i).await;
        assert_eq!(status, 201, "{path} before the kill");
        acked.push(path);
    }
    let leader = tokio::task::block_in_place(|| etcd.leader());
    tokio::task::block_in_place(|| etcd.kill(leader));
    // While the others elect a leader, writes may be refused (503), never half done. Until
    // 20 more were acknowledged, however long the election takes on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 20;
    while acked.len() < 40 {
        assert!(
            Instant::now() < deadline,
            "{} acknowledged after the kill",
            acked.len() - 20
        );
        let (path, status) = write(i).await;
        match status {
            201 => acked.push(path),
            503 => tokio::time::sleep(Duration::from_millis(20)).await,
            s => panic!("{path}: {s}"),
        }
        i += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in traffic {
        let (sent, failed) = t.await.unwrap();
        assert!(sent > 0);
        assert!(
            failed.is_empty(),
            "{} of {sent} failed: {failed:?}",
            failed.len()
        );
    }
    for path in &acked {
        let key = format!("{PREFIX}/pool/{}", path.trim_start_matches("pools/"));
        assert!(
            tokio::task::block_in_place(|| etcd.get(&key)).is_some(),
            "{key} acknowledged but not in etcd"
        );
        for admin in admins {
            until(admin, path, |s, _| s == 200).await;
        }
    }
}
