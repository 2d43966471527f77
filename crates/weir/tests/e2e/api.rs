//! The admin API's repository semantics (docs/DESIGN.md §3): preconditions, versions, validation
//! of the whole config before commit, transactions, problem+json errors.

use serde_json::json;

use crate::api_client::{add, call, get, json, update, version};
use crate::common::{free_addr, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_update_read_delete_follow_the_preconditions() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;

    // No precondition: refused.
    let r = call(a, "PUT", "pools/app", &[], Some(json!({}))).await;
    assert_eq!(r.status, 428);
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    assert_eq!(json(&r)["status"], 428);

    // Add, then add again: 412.
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-none-match", "*")],
        Some(json!({"balance": "p2c"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("location"), Some("/api/v1/pools/app"));
    let v1 = version(&r);
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-none-match", "*")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 412);
    assert_eq!(json(&r)["current_version"], v1);

    // Read: body is the spec, ETag the version; conditional read; HEAD.
    let r = get(a, "pools/app").await;
    assert_eq!((r.status.as_u16(), version(&r)), (200, v1));
    assert_eq!(json(&r), json!({"balance": "p2c"}));
    let tag = format!("\"{v1}\"");
    let r = call(a, "GET", "pools/app", &[("if-none-match", &tag)], None).await;
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    assert_eq!(call(a, "HEAD", "pools/app", &[], None).await.status, 200);
    assert_eq!(call(a, "HEAD", "pools/nope", &[], None).await.status, 404);
    assert_eq!(get(a, "pools/nope").await.status, 404);

    // Update the current version; then the old version is stale.
    let v2 = update(a, "pools/app", v1, json!({"balance": "least_conn"})).await;
    assert!(v2 > v1);
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-match", &tag)],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 412);
    assert_eq!(json(&r)["current_version"], v2);
    let r = call(a, "GET", "pools/app", &[("if-none-match", &tag)], None).await;
    assert_eq!(r.status, 200, "changed since v1");
    // Updating something absent: 404.
    let r = call(
        a,
        "PUT",
        "pools/nope",
        &[("if-match", "\"1\"")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 404);

    // Delete: needs If-Match, refuses a stale one, then 204 and gone.
    assert_eq!(call(a, "DELETE", "pools/app", &[], None).await.status, 428);
    assert_eq!(
        call(a, "DELETE", "pools/app", &[("if-match", &tag)], None)
            .await
            .status,
        412
    );
    let cur = format!("\"{v2}\"");
    assert_eq!(
        call(a, "DELETE", "pools/app", &[("if-match", &cur)], None)
            .await
            .status,
        204
    );
    assert_eq!(get(a, "pools/app").await.status, 404);
    assert_eq!(
        call(a, "DELETE", "pools/app", &[("if-match", &cur)], None)
            .await
            .status,
        404
    );

    // Entity-tag lists: any tag in the list may match.
    let vl = add(a, "pools/lists", json!({})).await;
    let list = format!("\"1\", \"{vl}\"");
    let r = call(a, "GET", "pools/lists", &[("if-none-match", &list)], None).await;
    assert_eq!(r.status, 304);
    let r = call(
        a,
        "PUT",
        "pools/lists",
        &[("if-match", &list)],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());

    // Re-adding never reuses a version.
    let v3 = add(a, "pools/app", json!({})).await;
    assert!(v3 > v2);
    let list = json(&get(a, "pools").await);
    assert_eq!(list["items"][0]["name"], "app");
    assert_eq!(list["items"][0]["version"], v3);
    assert_eq!(list["revision"], v3);
    // An empty transaction changes nothing and is answered.
    let r = call(a, "POST", "transaction", &[], Some(json!({"changes": []}))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(json(&r)["revision"], v3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_updates_from_one_version_exactly_one_wins() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let v = add(a, "pools/app", json!({})).await;
    let tag = format!("\"{v}\"");
    let tries: Vec<_> = (0..8)
        .map(|i| {
            let tag = tag.clone();
            tokio::spawn(async move {
                call(
                    a,
                    "PUT",
                    "pools/app",
                    &[("if-match", &tag)],
                    Some(json!({"max_conn": i + 1})),
                )
                .await
                .status
                .as_u16()
            })
        })
        .collect();
    let mut codes = Vec::new();
    for t in tries {
        codes.push(t.await.unwrap());
    }
    codes.sort();
    assert_eq!(codes, [200, 412, 412, 412, 412, 412, 412, 412]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_change_is_422_naming_the_field_and_changes_nothing() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let v = add(a, "pools/app", json!({"max_conn": 2})).await;
    let revision = json(&get(a, "config").await)["revision"].clone();
    let tag = format!("\"{v}\"");

    let cases = [
        (json!({"max_conn": -1}), "pools/app/max_conn"),
        (json!({"max_conn": 2, "max_qeue": 3}), "pools/app/max_qeue"),
        (
            json!({"health": {"check": "http", "interval": "1s", "timeout": "2s"}}),
            "pools/app/health/timeout",
        ),
        (json!({"balance": "fastest"}), "pools/app/balance"),
    ];
    for (spec, field) in cases {
        let r = call(
            a,
            "PUT",
            "pools/app",
            &[("if-match", &tag)],
            Some(spec.clone()),
        )
        .await;
        assert_eq!(r.status, 422, "{spec}: {}", r.text());
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        let p = json(&r);
        assert_eq!(p["field"], field, "{spec}: {p}");
        assert!(p["detail"].as_str().unwrap().len() > 10, "{p}");
    }
    // A route to a pool that does not exist names the route's field.
    let r = call(
        a,
        "PUT",
        "routes/r",
        &[("if-none-match", "*")],
        Some(json!({"listener": "web", "pool": "app"})),
    )
    .await;
    assert_eq!(r.status, 422);
    assert_eq!(json(&r)["field"], "routes/r/listener");
    // An endpoint with a bad weight names it; a pool's endpoints are not part of its spec.
    let r = call(
        a,
        "PUT",
        "pools/app/endpoints/127.0.0.1:9",
        &[("if-none-match", "*")],
        Some(json!({"weight": 0})),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("pools/app/endpoints/127.0.0.1:9/weight"))
    );
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-match", &tag)],
        Some(json!({"endpoints": []})),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("pools/app/endpoints"))
    );

    // Nothing changed.
    let r = get(a, "pools/app").await;
    assert_eq!((version(&r), json(&r)), (v, json!({"max_conn": 2})));
    assert_eq!(json(&get(a, "config").await)["revision"], revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_400_problems_and_big_bodies_413() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let raw = |body: &'static str| {
        let req = http::Request::put("/api/v1/pools/app")
            .header("if-none-match", "*")
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .unwrap();
        weir_testkit::client::send(a, req)
    };
    for body in ["{not json", "[1,2]", "\"pool\"", ""] {
        let r = raw(body).await.unwrap();
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(json(&r)["type"], "urn:weir:problem:bad-request");
    }
    let big = format!("{{\"x\": \"{}\"}}", "a".repeat(2 << 20));
    let req = http::Request::put("/api/v1/pools/app")
        .header("if-none-match", "*")
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from(big)))
        .unwrap();
    let r = weir_testkit::client::send(a, req).await.unwrap();
    assert_eq!(r.status, 413);
    // Bad names, bad addresses, If-Match: *, both preconditions, unknown paths, wrong methods.
    assert_eq!(
        call(
            a,
            "PUT",
            "pools/a%20b",
            &[("if-none-match", "*")],
            Some(json!({}))
        )
        .await
        .status,
        400
    );
    assert_eq!(
        call(a, "GET", "pools/app/endpoints/nohost", &[], None)
            .await
            .status,
        400
    );
    assert_eq!(
        call(a, "PUT", "pools/app", &[("if-match", "*")], Some(json!({})))
            .await
            .status,
        400
    );
    assert_eq!(
        call(
            a,
            "PUT",
            "pools/app",
            &[("if-match", "\"1\""), ("if-none-match", "*")],
            Some(json!({}))
        )
        .await
        .status,
        400
    );
    assert_eq!(get(a, "widgets").await.status, 404);
    let r = call(a, "POST", "pools/app", &[], Some(json!({}))).await;
    assert_eq!(r.status, 405);
    assert!(r.header("allow").unwrap().contains("PUT"));
    // None of it changed anything, and weir still answers.
    assert_eq!(json(&get(a, "config").await)["revision"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_commits_all_or_nothing() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let listen = free_addr();
    let body = json!({"changes": [
        {"op": "put", "path": "pools/app", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": "pools/app/endpoints/127.0.0.1:9001", "if_none_match": "*", "spec": {"weight": 2}},
        {"op": "put", "path": "listeners/web", "if_none_match": "*", "spec": {"bind": listen.to_string(), "pool": "app"}},
    ]});
    let r = call(a, "POST", "transaction", &[], Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let out = json(&r);
    let rev = out["revision"].as_u64().unwrap();
    assert_eq!(
        out["results"][1]["path"],
        "pools/app/endpoints/127.0.0.1:9001"
    );
    assert_eq!(out["results"][1]["version"], rev);

    // One stale change fails the whole transaction, and says which.
    let body = json!({"changes": [
        {"op": "put", "path": "pools/other", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": "pools/app", "if_match": rev - 1, "spec": {"balance": "p2c"}},
    ]});
    let r = call(a, "POST", "transaction", &[], Some(body)).await;
    assert_eq!(r.status, 412, "{}", r.text());
    assert_eq!(json(&r)["change"], 1);
    // One invalid change too.
    let body = json!({"changes": [
        {"op": "put", "path": "pools/other", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": "routes/r", "if_none_match": "*", "spec": {"listener": "web", "pool": "missing"}},
    ]});
    let r = call(a, "POST", "transaction", &[], Some(body)).await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("routes/r/pool"))
    );
    assert_eq!(get(a, "pools/other").await.status, 404);
    assert_eq!(json(&get(a, "config").await)["revision"], rev);

    // Deleting the pool takes its endpoints with it (the listener goes too, else it would
    // name a missing pool).
    let body = json!({"changes": [
        {"op": "delete", "path": "listeners/web", "if_match": rev},
        {"op": "delete", "path": "pools/app", "if_match": rev},
    ]});
    let r = call(a, "POST", "transaction", &[], Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        get(a, "pools/app/endpoints/127.0.0.1:9001").await.status,
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_whose_port_is_taken_is_422_and_nothing_changes() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    add(a, "pools/app", json!({})).await;
    let spec = json!({"bind": taken.local_addr().unwrap().to_string(), "pool": "app"});
    let r = call(
        a,
        "PUT",
        "listeners/web",
        &[("if-none-match", "*")],
        Some(spec),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(json(&r)["field"], "listeners/web/bind");
    assert_eq!(get(a, "listeners/web").await.status, 404);
    // The admin listener's own port is taken too, and validation knows it.
    let spec = json!({"bind": a.to_string(), "pool": "app"});
    let r = call(
        a,
        "PUT",
        "listeners/web",
        &[("if-none-match", "*")],
        Some(spec),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
}

/// An endpoint change is validated on the typed model and reaches the data plane
/// without a rebuild; `weir_config_apply_seconds` counts every change applied, so an
/// operator sees how long changes take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_change_is_timed_in_config_apply_seconds() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let count = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| {
                l.strip_prefix("weir_config_apply_seconds_count")
                    .map(|rest| rest.trim_start_matches("{}"))
            })
            .unwrap_or_else(|| panic!("no weir_config_apply_seconds in\n{text}"))
            .trim()
            .parse()
            .unwrap()
    };
    let metrics = || async {
        let r = weir_testkit::client::get(a, "/metrics").await.unwrap();
        String::from_utf8(r.body.to_vec()).unwrap()
    };
    let before = count(&metrics().await);
    add(a, "pools/app", json!({})).await;
    add(
        a,
        "pools/app/endpoints/127.0.0.1:9001",
        json!({"weight": 2}),
    )
    .await;
    // A refused change is not applied, so not counted.
    let r = call(
        a,
        "PUT",
        "pools/app/endpoints/127.0.0.1:9002",
        &[("if-none-match", "*")],
        Some(json!({"weight": 1001})),
    )
    .await;
    assert_eq!(
        (r.status.as_u16(), json(&r)["field"].clone()),
        (422, json!("pools/app/endpoints/127.0.0.1:9002/weight"))
    );
    assert!(
        json(&r)["detail"]
            .as_str()
            .unwrap()
            .contains("weight = 1001 is out of range"),
        "{}",
        r.text()
    );
    assert_eq!(count(&metrics().await), before + 2);
}
