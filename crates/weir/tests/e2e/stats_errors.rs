//! `/api/v1/stats` counts every failed request as an error with its reason: the answers
//! weir makes itself (a pool with no healthy endpoint, a missing route) and the 5xx
//! answers of upstreams, per listener, route, pool and endpoint, with a breakdown by status
//! class and errors per second; `/api/v1/stats/history` keeps the last minutes of those
//! rates a second apart, so a dashboard opened later draws them at once.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use weir_testkit::{client, HttpUpstream};

use crate::common::{endpoints, free_addr, Weir};

async fn get_json(w: &Weir, path: &str) -> Value {
    let r = client::get(w.admin, path).await.unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

fn named<'a>(v: &'a Value, list: &str, name: &str) -> &'a Value {
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap_or_else(|| panic!("no {list} {name} in {v}"))
}

/// Asks `/api/v1/stats` until `ok` holds for it (20 s at most; the machine may be busy).
async fn stats_until(w: &Weir, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = get_json(w, "/api/v1/stats").await;
        if ok(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "never {what}: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn status(listen: SocketAddr, path: &str) -> u16 {
    client::get(listen, path).await.unwrap().status.as_u16()
}

/// One listener: `/` to pool `app` (a live backend, which answers `/status/500` with a 500),
/// `/down/` to pool `down`, whose only endpoint nothing listens on (health-checked, so weir
/// answers 503 `no_healthy_endpoint` itself: `fail_closed`).
fn config(listen: SocketAddr, up: SocketAddr, dead: SocketAddr) -> String {
    format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n\n\
         [routes.down]\nlistener = \"web\"\npath_prefix = \"/down/\"\npool = \"down\"\n\n\
         [pools.app]\n{}\n\n\
         [pools.down]\n{}\n[pools.down.health]\ncheck = \"tcp\"\ninterval = \"200ms\"\ntimeout = \"100ms\"\nfall = 1\nno_healthy = \"fail_closed\"\n",
        endpoints(&[(up, 1)]),
        endpoints(&[(dead, 1)]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn weirs_own_answers_and_upstream_5xx_count_as_errors() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (listen, dead) = (free_addr(), free_addr());
    let w = Weir::start(&config(listen, up.addr(), dead), &[listen]);
    stats_until(&w, "the dead endpoint shown down", |v| {
        named(v, "pools", "down")["endpoints"][0]["state"] == "down"
    })
    .await;

    // Half the requests answered by weir (503), a fifth by the backend with a 500.
    for i in 0..10 {
        assert_eq!(status(listen, "/").await, 200);
        assert_eq!(status(listen, "/down/x").await, 503);
        if i % 2 == 0 {
            assert_eq!(status(listen, "/status/500").await, 500);
        }
    }
    let v = stats_until(&w, "25 requests counted", |v| {
        named(v, "listeners", "web")["requests_total"] == 25
    })
    .await;

    let web = named(&v, "listeners", "web");
    assert_eq!(web["errors"]["no_healthy_endpoint"], 10, "{web}");
    assert_eq!(web["errors"]["upstream_5xx"], 5, "{web}");
    assert_eq!(web["statuses"]["2xx"], 10, "{web}");
    assert_eq!(web["statuses"]["5xx"], 15, "{web}");
    assert_eq!(web["statuses"]["4xx"], 0, "{web}");

    let route = named(&v, "routes", "down");
    assert_eq!(route["requests_total"], 10, "{route}");
    assert_eq!(route["errors"]["no_healthy_endpoint"], 10, "{route}");
    assert_eq!(route["statuses"]["5xx"], 10, "{route}");

    let down = named(&v, "pools", "down");
    assert_eq!(down["requests_total"], 10, "{down}");
    assert_eq!(down["errors"]["no_healthy_endpoint"], 10, "{down}");
    assert_eq!(down["statuses"]["5xx"], 10, "{down}");

    let app = named(&v, "pools", "app");
    assert_eq!(app["requests_total"], 15, "{app}");
    assert_eq!(app["errors"]["upstream_5xx"], 5, "{app}");
    assert_eq!(app["statuses"]["2xx"], 10, "{app}");
    assert_eq!(app["statuses"]["5xx"], 5, "{app}");
    let ep = &app["endpoints"][0];
    assert_eq!(ep["errors"]["upstream_5xx"], 5, "{ep}");

    // Errors per second, at every level, while such traffic goes on.
    let traffic = tokio::spawn(async move {
        loop {
            let _ = client::get(listen, "/down/x").await;
            let _ = client::get(listen, "/status/500").await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    // Once a whole second of it is sampled, every request of the listener failed.
    let v = stats_until(
        &w,
        "errors per second at every level, all the requests",
        |v| {
            let rate = |x: &Value, what: &str| x[what].as_f64().unwrap_or(0.0);
            let failing = |x: &Value| rate(x, "errors_per_sec") > 0.0;
            let web = named(v, "listeners", "web");
            failing(web)
                && (rate(web, "errors_per_sec") - rate(web, "requests_per_sec")).abs() < 1e-6
                && failing(named(v, "routes", "down"))
                && failing(named(v, "pools", "down"))
                && failing(named(v, "pools", "app"))
                && failing(&named(v, "pools", "app")["endpoints"][0])
        },
    )
    .await;
    let web = named(&v, "listeners", "web");
    assert!(web["statuses"]["5xx"].as_u64().unwrap() > 15, "{web}");

    // The history has the same, a sample a second, for the dashboard's graphs.
    let h = get_json(&w, "/api/v1/stats/history").await;
    traffic.abort();
    let t = h["t"].as_array().unwrap();
    assert!(!t.is_empty(), "{h}");
    assert!(t.windows(2).all(|p| p[0].as_u64() < p[1].as_u64()), "{h}");
    let down = named(&h, "pools", "down");
    for series in [
        "requests_per_sec",
        "errors_per_sec",
        "p99_ms",
        "queue_depth",
    ] {
        assert_eq!(
            down[series].as_array().unwrap().len(),
            t.len(),
            "{series}: {h}"
        );
    }
    let errors: Vec<f64> = down["errors_per_sec"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert!(errors.iter().any(|&e| e > 0.0), "{h}");
    assert!(
        h["total"]["errors_per_sec"].as_array().unwrap().len() == t.len(),
        "{h}"
    );

    // Asked again from its `next`, only newer samples come.
    let next = h["next"].as_u64().unwrap();
    let later = get_json(&w, &format!("/api/v1/stats/history?from={next}")).await;
    assert!(later["t"].as_array().unwrap().len() <= 3, "{later}");
    assert!(later["next"].as_u64().unwrap() >= next, "{later}");
    let r = client::get(w.admin, "/api/v1/stats/history?from=soon")
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("\"field\":\"from\""), "{}", r.text());
}
