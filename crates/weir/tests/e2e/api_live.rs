//! Changes through the admin API reach the data plane live and durably: kill -9 loses no
//! answered change, in-flight requests survive, leases expire into draining, file mode
//! refuses config writes but takes registrations, and the admin token is enforced.

use std::time::{Duration, Instant};

use serde_json::json;
use weir_testkit::client;
use weir_testkit::{HttpUpstream, Latency};

use crate::api_client::{add, call, get, http_setup, json, version};
use crate::common::{endpoints, free_addr, one_pool, Weir, WEIR};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_answered_201_survives_kill_9_and_is_served_after_restart() {
    let up = HttpUpstream::spawn("stored").await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let mut w = Weir::store(data.path());
    http_setup(w.admin, listen, &[up.addr()]).await;
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "stored\n");
    // The last 201, then SIGKILL at once.
    let v = add(
        w.admin,
        "routes/r",
        json!({"listener": "web", "path_prefix": "/x", "pool": "app"}),
    )
    .await;
    w.child.kill().unwrap();
    w.child.wait().unwrap();

    let w = Weir::store(data.path());
    let r = get(w.admin, "routes/r").await;
    assert_eq!((r.status.as_u16(), version(&r)), (200, v));
    w_wait_listening(listen).await;
    assert_eq!(client::get(listen, "/x").await.unwrap().text(), "stored\n");
    assert_eq!(json(&get(w.admin, "config").await)["mode"], "store");
}

async fn w_wait_listening(addr: std::net::SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {addr}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_change_during_twenty_slow_requests_loses_none() {
    let slow = HttpUpstream::builder("old")
        .latency(Latency::Fixed(Duration::from_secs(2)))
        .spawn()
        .await
        .unwrap();
    let fresh = HttpUpstream::spawn("new").await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let w = Weir::store(data.path());
    let a = w.admin;
    http_setup(a, listen, &[slow.addr()]).await;

    let inflight: Vec<_> = (0..20)
        .map(|_| tokio::spawn(async move { client::get(listen, "/").await }))
        .collect();
    for _ in 0..100 {
        if slow.in_flight() == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(slow.in_flight(), 20);

    // Swap the endpoints in one transaction and change the pool's settings.
    let old = format!("pools/app/endpoints/{}", slow.addr());
    let ov = version(&get(a, &old).await);
    let pv = version(&get(a, "pools/app").await);
    let t0 = Instant::now();
    let r = call(a, "POST", "transaction", &[], Some(json!({"changes": [
        {"op": "put", "path": format!("pools/app/endpoints/{}", fresh.addr()), "if_none_match": "*", "spec": {}},
        {"op": "delete", "path": old, "if_match": ov},
        {"op": "put", "path": "pools/app", "if_match": pv, "spec": {"balance": "least_conn"}},
    ]}))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // Applied when answered: the next request already goes to the new endpoint.
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "new\n");
    assert!(t0.elapsed() < Duration::from_secs(1));
    for h in inflight {
        let r = h.await.unwrap().unwrap();
        assert_eq!((r.status.as_u16(), r.text()), (200, "old\n".to_string()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_added_and_deleted_through_the_api_start_and_stop() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let w = Weir::store(data.path());
    let a = w.admin;
    http_setup(a, listen, &[up.addr()]).await;
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
    let v = version(&get(a, "listeners/web").await);
    let tag = format!("\"{v}\"");
    assert_eq!(
        call(a, "DELETE", "listeners/web", &[("if-match", &tag)], None)
            .await
            .status,
        204
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    while tokio::net::TcpStream::connect(listen).await.is_ok() {
        assert!(Instant::now() < deadline, "still accepting after delete");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_expired_lease_drains_its_endpoint_and_heartbeats_keep_one() {
    let slow = HttpUpstream::builder("leased")
        .latency(Latency::Fixed(Duration::from_millis(1500)))
        .spawn()
        .await
        .unwrap();
    let kept = HttpUpstream::spawn("kept").await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let listen = free_addr();
    let w = Weir::store(data.path());
    let a = w.admin;
    add(a, "pools/app", json!({"balance": "least_conn"})).await;
    add(
        a,
        "listeners/web",
        json!({"bind": listen.to_string(), "pool": "app"}),
    )
    .await;
    let leased = format!("pools/app/endpoints/{}", slow.addr());
    let beating = format!("pools/app/endpoints/{}", kept.addr());
    // Registrations: no precondition, a ttl. The leased endpoint is alone at first, so the
    // first request is in flight on it when its lease runs out.
    let r = call(
        a,
        "PUT",
        &leased,
        &[],
        Some(json!({"weight": 1, "ttl": "1s"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let inflight = tokio::spawn(async move { client::get(listen, "/").await });
    for _ in 0..100 {
        if slow.in_flight() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(slow.in_flight(), 1);
    let r = call(
        a,
        "PUT",
        &beating,
        &[],
        Some(json!({"weight": 1, "ttl": "1s"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Registering again with the same spec renews without a new version.
    let again = call(
        a,
        "PUT",
        &beating,
        &[],
        Some(json!({"weight": 1, "ttl": "1s"})),
    )
    .await;
    assert_eq!((again.status.as_u16(), version(&again)), (200, version(&r)));

    // Only `kept` heartbeats, for 2.5 s.
    let hb = format!("{beating}/heartbeat");
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(2500) {
        let r = call(a, "POST", &hb, &[], None).await;
        assert_eq!(r.status, 200, "{}", r.text());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        get(a, &leased).await.status,
        404,
        "expired lease still present"
    );
    assert_eq!(get(a, &beating).await.status, 200, "renewed lease expired");
    assert_eq!(
        call(a, "POST", &format!("{leased}/heartbeat"), &[], None)
            .await
            .status,
        404
    );
    // The drained endpoint finished what it had; new requests go to the other.
    let r = inflight.await.unwrap().unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (200, "leased\n".to_string()));
    let before = slow.requests();
    for _ in 0..5 {
        assert_eq!(client::get(listen, "/").await.unwrap().text(), "kept\n");
    }
    assert_eq!(slow.requests(), before);
    // A permanent endpoint has no lease to renew.
    add(a, "pools/app/endpoints/127.0.0.1:9", json!({})).await;
    let r = call(
        a,
        "POST",
        "pools/app/endpoints/127.0.0.1:9/heartbeat",
        &[],
        None,
    )
    .await;
    assert_eq!(r.status, 409);
    // ...and a registration may not silently take it over.
    let r = call(
        a,
        "PUT",
        "pools/app/endpoints/127.0.0.1:9",
        &[],
        Some(json!({"ttl": "5s"})),
    )
    .await;
    assert_eq!(r.status, 428);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_mode_refuses_config_writes_and_accepts_registrations() {
    let a_up = HttpUpstream::spawn("file").await.unwrap();
    let b_up = HttpUpstream::spawn("registered").await.unwrap();
    let listen = free_addr();
    let cfg = one_pool(listen, &endpoints(&[(a_up.addr(), 1)]), "");
    let w = Weir::start(&cfg, &[listen]);
    let a = w.admin;
    // Reads show the file's resources.
    let r = get(a, "pools/app/endpoints").await;
    assert_eq!(json(&r)["items"][0]["name"], a_up.addr().to_string());
    assert_eq!(json(&get(a, "config").await)["mode"], "file");
    // Config writes: 409 with an explanation.
    let r = call(
        a,
        "PUT",
        "pools/other",
        &[("if-none-match", "*")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 409);
    assert!(json(&r)["detail"].as_str().unwrap().contains("config file"));
    let r = call(
        a,
        "PUT",
        &format!("pools/app/endpoints/{}", a_up.addr()),
        &[],
        Some(json!({"ttl": "10s"})),
    )
    .await;
    assert_eq!(r.status, 409, "the file defines this endpoint");
    // A registration joins the file's pool.
    let reg = format!("pools/app/endpoints/{}", b_up.addr());
    let r = call(
        a,
        "PUT",
        &reg,
        &[],
        Some(json!({"weight": 1, "ttl": "30s"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let mut seen = std::collections::HashSet::new();
    for _ in 0..4 {
        seen.insert(client::get(listen, "/").await.unwrap().text());
    }
    assert!(
        seen.contains("registered\n") && seen.contains("file\n"),
        "{seen:?}"
    );
    // A file reload keeps it.
    let out = w.reload(&cfg.replace("[pools.app]", "[pools.app]\nbalance = \"least_conn\""));
    assert!(out.contains("config reloaded"), "{out}");
    assert_eq!(get(a, &reg).await.status, 200);
    assert_eq!(json(&get(a, "pools/app").await)["balance"], "least_conn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_token_guards_writes_and_a_public_bind_needs_one() {
    // A non-loopback admin listener without a token: weir refuses to start.
    let data = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(WEIR)
        .args(["run", "--data"])
        .arg(data.path())
        .args(["--admin", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let token = data.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let tf = token.display().to_string();
    // Loopback with a token: reads are open, writes need it.
    let w = Weir::store_on(&data.path().join("a"), free_addr(), &["--token-file", &tf]);
    let a = w.admin;
    assert_eq!(get(a, "pools").await.status, 200);
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-none-match", "*")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 401);
    assert!(r.header("www-authenticate").is_some());
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-none-match", "*"), ("authorization", "Bearer wrong")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 401);
    let r = call(
        a,
        "PUT",
        "pools/app",
        // The scheme name is case-insensitive.
        &[("if-none-match", "*"), ("authorization", "bearer s3cret")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 201);

    // Public with a token: reads need it too, probes do not.
    let public: std::net::SocketAddr = format!("0.0.0.0:{}", free_addr().port()).parse().unwrap();
    let w = Weir::store_on(&data.path().join("b"), public, &["--token-file", &tf]);
    let a = w.admin;
    assert_eq!(get(a, "pools").await.status, 401);
    assert_eq!(client::get(a, "/metrics").await.unwrap().status, 401);
    assert_eq!(client::get(a, "/healthz").await.unwrap().status, 200);
    assert_eq!(
        call(
            a,
            "GET",
            "pools",
            &[("authorization", "Bearer s3cret")],
            None
        )
        .await
        .status,
        200
    );
}
