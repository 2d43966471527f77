//! Resources written into the prefix by someone else that do not validate (a route to a pool
//! that does not exist, an endpoint of a missing pool), through the real binary and real
//! etcd 3.4: every replica holds them back and runs the rest; the API shows each with its
//! error, `/metrics`, `/healthz` and the stats count and name them; writes that do not
//! make things worse go through, one that does is refused; a held resource can be fixed or
//! deleted through the API, or becomes valid once what it lacked is added; and a replica
//! restarted meanwhile starts from its cache and says so.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use weir_testkit::etcd::Etcd;
use weir_testkit::{client, HttpUpstream};

use crate::api_client::{add, call, get, json, version};
use crate::common::Weir;
use crate::etcd::{bound, put_pool, setup, start_with, until, until_served, PREFIX};

/// A replica with its cache at `cache`, once its admin listener is up.
fn replica(etcd: &Etcd, cache: &Path) -> Weir {
    let mut w = start_with(etcd, cache, &[]);
    let admin = w.admin;
    w.wait_listening(admin);
    w
}

/// The value of metric `name` (no labels) on `admin`.
async fn metric(admin: SocketAddr, name: &str) -> f64 {
    let m = client::get(admin, "/metrics").await.unwrap().text();
    m.lines()
        .find(|l| {
            l.split_whitespace()
                .next()
                .map(|n| n.trim_end_matches("{}"))
                == Some(name)
        })
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{m}"))
}

/// `config_source.invalid` of the stats, as `path → errors` text.
async fn stats_invalid(admin: SocketAddr) -> Vec<(String, String)> {
    let s = json(&get(admin, "stats").await);
    s["config_source"]["invalid"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    (
                        i["path"].as_str().unwrap().to_string(),
                        i["errors"].to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_stored_resources_are_held_back_shown_and_fixable() {
    let etcd = Etcd::start(1);
    let up = HttpUpstream::spawn("app").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache_a = dir.path().join("a.json");
    let mut a = replica(&etcd, &cache_a);
    let b = replica(&etcd, &dir.path().join("b.json"));
    setup(a.admin, &up).await;
    let on_b = bound(&b, 0);
    until_served(on_b, 200).await;
    until(a.admin, "listeners/web", |s, _| s == 200).await;

    // By hand: a route to a pool that does not exist, and an endpoint of another.
    let ghost = json!({"listener": "web", "path_prefix": "/ghost", "pool": "missing"});
    let (orphan_addr, orphan) = ("127.0.0.1:9", "pools/later/endpoints/127.0.0.1:9");
    tokio::task::block_in_place(|| {
        etcd.put(&format!("{PREFIX}/route/ghost"), &ghost.to_string());
        etcd.put(
            &format!("{PREFIX}/endpoint/later/{orphan_addr}"),
            r#"{"weight": 1}"#,
        )
    });

    for admin in [a.admin, b.admin] {
        // Shown, with its stored spec and version, and why it does not run.
        until(admin, "routes/ghost", |s, _| s == 200).await;
        let r = get(admin, "routes/ghost").await;
        assert_eq!(json(&r), ghost);
        let why = r
            .header("x-weir-invalid")
            .expect("x-weir-invalid")
            .to_string();
        assert!(
            why.contains("routes/ghost/pool") && why.contains("missing"),
            "{why}"
        );
        let list = json(&get(admin, "routes").await);
        let item = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "ghost")
            .unwrap_or_else(|| panic!("{list}"))
            .clone();
        assert_eq!(item["invalid"][0]["field"], "routes/ghost/pool", "{item}");
        let r = get(admin, orphan).await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.header("x-weir-invalid").is_some());
        // Counted and named: the metric, /healthz (still 200), the stats, /config.
        until(admin, "config", |_, t| {
            serde_json::from_str::<Value>(t)
                .is_ok_and(|c| c["invalid"].as_array().is_some_and(|a| a.len() == 2))
        })
        .await;
        assert_eq!(metric(admin, "weir_config_store_invalid").await, 2.0);
        let h = client::get(admin, "/healthz").await.unwrap();
        assert_eq!(h.status, 200);
        let text = h.text();
        assert!(
            text.contains("2 stored resources do not validate")
                && text.contains("routes/ghost")
                && text.contains(orphan),
            "{text}"
        );
        let paths: Vec<String> = stats_invalid(admin)
            .await
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(paths, [orphan.to_string(), "routes/ghost".to_string()]);
    }
    // The rest runs: traffic as before, and /ghost is not routed (the listener's pool
    // answers it).
    until_served(on_b, 200).await;
    assert_eq!(client::get(on_b, "/ghost").await.unwrap().status, 200);

    // Writes that do not make things worse go through, on every replica.
    let r = put_pool(b.admin, "more").await;
    assert_eq!(r.status, 201, "{}", r.text());
    until(a.admin, "pools/more", |s, _| s == 200).await;
    // One that does is refused, naming what it breaks.
    let bad = json!({"listener": "web", "path_prefix": "/bad", "pool": "nowhere"});
    let r = call(
        a.admin,
        "PUT",
        "routes/bad",
        &[("if-none-match", "*")],
        Some(bad),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(json(&r)["field"], "routes/bad/pool", "{}", r.text());

    // A replica restarted now starts from its cache (written off the request: wait for
    // it), and says why.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&cache_a).is_ok_and(|t| t.contains("\"more\"")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the cache has no pool `more`"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(a);
    a = replica(&etcd, &cache_a);
    let line = a.wait_log(0, "does not validate", Duration::from_secs(20));
    assert!(line.contains("a.json"), "{line}");
    until_served(bound(&a, 0), 200).await;
    until(a.admin, "config", |_, t| {
        serde_json::from_str::<Value>(t)
            .is_ok_and(|c| c["invalid"].as_array().is_some_and(|a| a.len() == 2))
    })
    .await;
    until(a.admin, "pools/more", |s, _| s == 200).await;

    // Fixed through the API: the route now names a pool that exists (without endpoints),
    // and is routed.
    let v = version(&get(a.admin, "routes/ghost").await);
    let fixed = json!({"listener": "web", "path_prefix": "/ghost", "pool": "more"});
    let tag = format!("\"{v}\"");
    let r = call(
        a.admin,
        "PUT",
        "routes/ghost",
        &[("if-match", &tag)],
        Some(fixed),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // What the held endpoint lacked, added: it is taken.
    add(b.admin, "pools/later", json!({})).await;
    for admin in [a.admin, b.admin] {
        until(admin, "config", |_, t| {
            serde_json::from_str::<Value>(t)
                .is_ok_and(|c| c["invalid"].as_array().is_some_and(|a| a.is_empty()))
        })
        .await;
        assert_eq!(
            get(admin, "routes/ghost").await.header("x-weir-invalid"),
            None
        );
        assert_eq!(get(admin, orphan).await.header("x-weir-invalid"), None);
        assert_eq!(metric(admin, "weir_config_store_invalid").await, 0.0);
        assert_eq!(client::get(admin, "/healthz").await.unwrap().text(), "ok\n");
        assert!(stats_invalid(admin).await.is_empty());
    }
    assert_eq!(client::get(on_b, "/ghost").await.unwrap().status, 503);

    // Held again by hand, then deleted through the API.
    tokio::task::block_in_place(|| etcd.put(&format!("{PREFIX}/route/ghost"), &ghost.to_string()));
    until(b.admin, "routes/ghost", |s, t| {
        s == 200 && t.contains("missing")
    })
    .await;
    until(b.admin, "config", |_, t| {
        serde_json::from_str::<Value>(t)
            .is_ok_and(|c| c["invalid"].as_array().is_some_and(|a| a.len() == 1))
    })
    .await;
    let v = version(&get(b.admin, "routes/ghost").await);
    let tag = format!("\"{v}\"");
    let r = call(
        b.admin,
        "DELETE",
        "routes/ghost",
        &[("if-match", &tag)],
        None,
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.text());
    for admin in [a.admin, b.admin] {
        until(admin, "routes/ghost", |s, _| s == 404).await;
        until(admin, "config", |_, t| {
            serde_json::from_str::<Value>(t)
                .is_ok_and(|c| c["invalid"].as_array().is_some_and(|a| a.is_empty()))
        })
        .await;
    }
    until_served(on_b, 200).await;
}

/// A listener written into the prefix by hand on a port that is taken on this host: valid,
/// but it cannot run here. It is held back like an invalid one, and writes go on; once the
/// port is free, the next change takes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_listener_that_cannot_bind_here_is_held_back() {
    let etcd = Etcd::start(1);
    let dir = tempfile::tempdir().unwrap();
    let a = replica(&etcd, &dir.path().join("a.json"));
    add(a.admin, "pools/app", json!({})).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap();
    let spec = json!({"bind": port.to_string(), "pool": "app"});
    tokio::task::block_in_place(|| etcd.put(&format!("{PREFIX}/listener/busy"), &spec.to_string()));
    until(a.admin, "listeners/busy", |s, _| s == 200).await;
    let r = get(a.admin, "listeners/busy").await;
    let why = r
        .header("x-weir-invalid")
        .expect("x-weir-invalid")
        .to_string();
    assert!(why.contains("listeners/busy/bind"), "{why}");
    assert_eq!(metric(a.admin, "weir_config_store_invalid").await, 1.0);

    let r = put_pool(a.admin, "more").await;
    assert_eq!(r.status, 201, "{}", r.text());

    drop(taken);
    add(a.admin, "pools/third", json!({})).await;
    until(a.admin, "config", |_, t| {
        serde_json::from_str::<Value>(t)
            .is_ok_and(|c| c["invalid"].as_array().is_some_and(|a| a.is_empty()))
    })
    .await;
    until_served(port, 503).await;
}

/// A cache that is there but cannot be used (cut short: a disk that filled, an edit by
/// hand) is named as such rather than taken for no cache: when the stored config does not
/// validate (the replica then does not start) and while etcd is away (it then waits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_cache_is_named_not_taken_for_none() {
    let mut etcd = Etcd::start(1);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("a.json");
    std::fs::write(&cache, r#"{"prefix": "/weir", "revision""#).unwrap();
    // A route to a listener and a pool that do not exist: the stored config does not
    // validate, so the replica looks for its cache.
    let ghost = json!({"listener": "web", "path_prefix": "/ghost", "pool": "missing"});
    tokio::task::block_in_place(|| etcd.put(&format!("{PREFIX}/route/ghost"), &ghost.to_string()));
    let mut a = start_with(&etcd, &cache, &[]);
    let line = a.wait_log(0, "cannot be used", Duration::from_secs(20));
    assert!(line.contains("a.json"), "{line}");
    assert!(!a.wait_exit(Duration::from_secs(20)).success());

    // etcd away: the replica waits, saying its cache cannot be used (not that it has none).
    tokio::task::block_in_place(|| etcd.kill(0));
    let b = start_with(&etcd, &cache, &[]);
    let line = b.wait_log(0, "waiting for it, not ready", Duration::from_secs(30));
    assert!(
        line.contains("cannot be used") && line.contains("a.json"),
        "{line}"
    );
}
