//! Each balancing algorithm's defining property, through the real binary.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client::{self, HttpConn, Resp};
use weir_testkit::{HttpUpstream, Latency};

use crate::common::{endpoints, free_addr, one_pool, Weir};

async fn get_with(listen: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut b = Request::get(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    client::send(listen, b.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap()
}

async fn upstreams(names: &[&str]) -> Vec<HttpUpstream> {
    let mut v = Vec::new();
    for n in names {
        v.push(HttpUpstream::spawn(n).await.unwrap());
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn least_conn_prefers_the_idle_endpoint() {
    let ups = upstreams(&["a", "b"]).await;
    let listen = free_addr();
    let eps = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1)]);
    let _w = Weir::start(
        &one_pool(listen, &eps, "balance = \"least_conn\""),
        &[listen],
    );

    let slow = tokio::spawn(async move { client::get(listen, "/?latency_ms=1000").await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let busy = if ups[0].in_flight() == 1 { 0 } else { 1 };
    assert_eq!(ups[busy].in_flight(), 1);
    let mut conn = HttpConn::connect(listen).await.unwrap();
    for _ in 0..10 {
        conn.get("/").await.unwrap();
    }
    assert_eq!(
        ups[1 - busy].requests(),
        10,
        "quick requests went to the busy endpoint"
    );
    slow.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn random_and_p2c_follow_weights() {
    for algo in ["random", "p2c"] {
        let ups = upstreams(&["a", "b"]).await;
        let listen = free_addr();
        let eps = endpoints(&[(ups[0].addr(), 3), (ups[1].addr(), 1)]);
        let _w = Weir::start(
            &one_pool(listen, &eps, &format!("balance = \"{algo}\"")),
            &[listen],
        );
        let mut conn = HttpConn::connect(listen).await.unwrap();
        for _ in 0..400 {
            conn.get("/").await.unwrap();
        }
        let a = ups[0].requests();
        // An idle pool is spread by weight: 3/4 of 400 is 300.
        assert!((250..=350).contains(&a), "{algo}: a got {a} of 400");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ewma_shifts_load_away_from_a_slow_endpoint() {
    let slow = HttpUpstream::builder("slow")
        .latency(Latency::Fixed(Duration::from_millis(40)))
        .spawn()
        .await
        .unwrap();
    let fast = HttpUpstream::spawn("fast").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(slow.addr(), 1), (fast.addr(), 1)]);
    let _w = Weir::start(&one_pool(listen, &eps, "balance = \"ewma\""), &[listen]);
    // Several clients at once, so load and latency both count.
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let mut conn = HttpConn::connect(listen).await.unwrap();
                for _ in 0..50 {
                    conn.get("/").await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (s, f) = (slow.requests(), fast.requests());
    assert_eq!(s + f, 200);
    assert!(f >= 170, "fast {f}, slow {s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hash_keeps_a_key_on_one_endpoint_and_moves_few_on_removal() {
    let ups = upstreams(&["a", "b", "c", "d"]).await;
    let listen = free_addr();
    let all: Vec<(SocketAddr, u32)> = ups.iter().map(|u| (u.addr(), 1)).collect();
    // The ring alone: with bounded load (the default factor) a key may rightly move while the
    // previous request's slot is still held, just after its last byte went out.
    // `hash_bounded_load_spills_a_hot_key` tests that.
    let extra = "balance = \"hash\"\nhash_key = \"header:x-user\"\nhash_balance_factor = 0";
    let w = Weir::start(&one_pool(listen, &endpoints(&all), extra), &[listen]);

    let mut owner: HashMap<String, String> = HashMap::new();
    for u in 0..100 {
        let user = format!("user-{u}");
        for _ in 0..3 {
            let r = get_with(listen, "/", &[("x-user", &user)]).await;
            let up = r.header("x-upstream").unwrap().to_string();
            let prev = owner.entry(user.clone()).or_insert(up.clone());
            assert_eq!(*prev, up, "{user} moved between requests");
        }
    }
    assert_eq!(owner.len(), 100);
    // Every endpoint got some keys.
    for u in &ups {
        assert!(
            owner.values().any(|o| o == u.name()),
            "{} got no keys",
            u.name()
        );
    }

    // Remove d: only d's keys may move.
    let reload = w.reload(&one_pool(listen, &endpoints(&all[..3]), extra));
    assert!(reload.contains("config reloaded"), "{reload}");
    let mut moved = 0;
    for (user, before) in &owner {
        let r = get_with(listen, "/", &[("x-user", user)]).await;
        let now = r.header("x-upstream").unwrap();
        if now != before {
            assert_eq!(before, "d", "{user} moved from {before} to {now}");
            moved += 1;
        }
    }
    let on_d = owner.values().filter(|o| *o == "d").count();
    assert_eq!(moved, on_d);
    // d's share is about a quarter, but ring positions come from the addresses, which are new
    // ports each run, and 100 keys are a small sample: a bound of 35 failed once. Well
    // under half is what "few" must mean whatever the ports.
    assert!(moved < 50, "{moved} of 100 keys moved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hash_bounded_load_spills_a_hot_key() {
    let ups = upstreams(&["a", "b"]).await;
    let listen = free_addr();
    let eps = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1)]);
    let extra = "balance = \"hash\"\nhash_key = \"path\"\nhash_balance_factor = 1.25";
    let _w = Weir::start(&one_pool(listen, &eps, extra), &[listen]);
    // One hot key, 10 concurrent slow requests: without the bound all ten
    // would land on one endpoint.
    let tasks: Vec<_> = (0..10)
        .map(|_| tokio::spawn(async move { client::get(listen, "/hot?latency_ms=300").await }))
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap().status, 200);
    }
    let (a, b) = (ups[0].requests(), ups[1].requests());
    assert!(a >= 3 && b >= 3, "a {a}, b {b}");
}

fn sticky_cookie(r: &Resp) -> Option<String> {
    let v = r.header("set-cookie")?;
    let kv = v.split(';').next()?;
    Some(kv.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sticky_cookie_sticks_and_resists_forgery() {
    let ups = upstreams(&["a", "b", "c"]).await;
    let listen = free_addr();
    let all: Vec<(SocketAddr, u32)> = ups.iter().map(|u| (u.addr(), 1)).collect();
    let extra = "balance = \"sticky\"\nsticky_secret = \"test-secret-0123456789\"";
    let w = Weir::start(&one_pool(listen, &endpoints(&all), extra), &[listen]);

    let first = get_with(listen, "/", &[]).await;
    let cookie = sticky_cookie(&first).expect("no sticky cookie set");
    assert!(cookie.starts_with("weir_sticky="), "{cookie}");
    let home = first.header("x-upstream").unwrap().to_string();
    for _ in 0..10 {
        let r = get_with(listen, "/", &[("cookie", &cookie)]).await;
        assert_eq!(r.header("x-upstream"), Some(home.as_str()));
        assert!(
            r.header("set-cookie").is_none(),
            "cookie re-set for a sticking client"
        );
    }

    // Forge: keep the MAC, change the endpoint id. It must not be honoured.
    let value = cookie.trim_start_matches("weir_sticky=");
    let mut forged_homes = std::collections::HashSet::new();
    for id in 0..16u64 {
        let forged = format!("weir_sticky={id:016x}{}", &value[16..]);
        let r = get_with(listen, "/", &[("cookie", &forged)]).await;
        assert!(
            sticky_cookie(&r).is_some(),
            "forged cookie accepted without a new one"
        );
        forged_homes.insert(r.header("x-upstream").unwrap().to_string());
    }
    // Forged requests are balanced normally (round robin base), not pinned.
    assert!(forged_homes.len() > 1, "{forged_homes:?}");

    // The home endpoint leaves: the cookie falls back and is replaced.
    let rest: Vec<(SocketAddr, u32)> = ups
        .iter()
        .filter(|u| u.name() != home)
        .map(|u| (u.addr(), 1))
        .collect();
    assert!(w
        .reload(&one_pool(listen, &endpoints(&rest), extra))
        .contains("config reloaded"));
    let r = get_with(listen, "/", &[("cookie", &cookie)]).await;
    assert_eq!(r.status, 200);
    assert_ne!(r.header("x-upstream"), Some(home.as_str()));
    assert!(sticky_cookie(&r).is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_start_ramps_a_new_endpoint() {
    let ups = upstreams(&["old", "new"]).await;
    let listen = free_addr();
    let extra = "slow_start = \"10s\"";
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(ups[0].addr(), 1)]), extra),
        &[listen],
    );
    // Endpoints of the first config start at full weight (as in HAProxy).
    let both = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1)]);
    assert!(w
        .reload(&one_pool(listen, &both, extra))
        .contains("config reloaded"));
    let mut conn = HttpConn::connect(listen).await.unwrap();
    for _ in 0..200 {
        conn.get("/").await.unwrap();
    }
    let new = ups[1].requests();
    // Equal weights would give ~100; a freshly added endpoint ramps from 5%.
    assert!(new > 0 && new < 60, "new endpoint got {new} of 200");
}
