//! The admin listener is safe from web pages by default: a page cannot
//! change the config with a form or a simple cross-site `fetch` (no preflight), nor read
//! or change it through DNS rebinding; an IPv4-mapped loopback admin address counts as
//! loopback; and a JSON body means one thing (no duplicate keys).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::{json, Value};
use weir_testkit::client::{self, Resp};
use weir_testkit::HttpUpstream;

use crate::api_client::{call, get, json, version};
use crate::common::{free_addr, free_port, raw_exchange, Weir, WEIR};

/// `METHOD PATH` with exactly these headers (the client adds `Host` only when missing).
async fn send(
    admin: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Resp {
    let mut b = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let req = b.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
    client::send(admin, req)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// A request with a chunked body (`""`: the last chunk alone) on a connection it closes.
fn chunked(admin: SocketAddr, method: &str, path: &str, extra: &str, body: &str) -> String {
    let chunks = match body {
        "" => "0\r\n\r\n".to_owned(),
        b => format!("{:x}\r\n{b}\r\n0\r\n\r\n", b.len()),
    };
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {admin}\r\n{extra}Transfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n{chunks}"
    )
}

/// The finding's transaction: a pool with a backend and a live listener in front of it.
fn takeover(listen: SocketAddr, backend: SocketAddr) -> String {
    json!({"changes": [
        {"op": "put", "path": "pools/p", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": format!("pools/p/endpoints/{backend}"), "if_none_match": "*",
         "spec": {"weight": 1}},
        {"op": "put", "path": "listeners/l", "if_none_match": "*",
         "spec": {"bind": listen.to_string(), "pool": "p"}},
    ]})
    .to_string()
}

fn assert_problem(r: &Resp, status: u16, kind: &str) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    let p = json(r);
    assert_eq!(p["type"], format!("urn:weir:problem:{kind}"), "{p}");
    assert_eq!(p["status"], status);
    p
}

/// Nothing was created: no pool, no listener. (Asked of weir, not of the port: `listen` was
/// free when picked, but another program may take it since, and a connect that succeeds then
/// says nothing about weir; that failed once with two suites running at once.)
async fn unchanged(admin: SocketAddr, listen: SocketAddr) {
    assert_eq!(json(&get(admin, "pools").await)["items"], json!([]));
    let listeners = json(&get(admin, "listeners").await);
    assert_eq!(
        listeners["items"],
        json!([]),
        "a listener on {listen}: {listeners}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_body_is_not_labelled_json_is_refused_with_415() {
    let backend = HttpUpstream::spawn("backend").await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let listen = free_addr();
    let body = takeover(listen, backend.addr());

    // What a page can send cross-site without a preflight: a form's encodings, a string
    // body (text/plain) and a Blob without a type (no Content-Type at all). Then types that
    // merely look like JSON.
    for ctype in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
        Some("application/jsonp"),
        Some("text/json"),
        Some(""),
    ] {
        let headers: Vec<(&str, &str)> = ctype.map(|c| ("content-type", c)).into_iter().collect();
        let r = send(a, "POST", "/api/v1/transaction", &headers, &body).await;
        let p = assert_problem(&r, 415, "unsupported-media-type");
        assert!(
            p["detail"].as_str().unwrap().contains("application/json"),
            "{ctype:?}: {p}"
        );
        let r = send(
            a,
            "PUT",
            "/api/v1/pools/p",
            &[headers.as_slice(), &[("if-none-match", "*")]].concat(),
            "{}",
        )
        .await;
        assert_problem(&r, 415, "unsupported-media-type");
        unchanged(a, listen).await;
    }

    // A chunked body is a body too.
    let wait = Duration::from_secs(5);
    let r = raw_exchange(
        a,
        chunked(
            a,
            "POST",
            "/api/v1/transaction",
            "Content-Type: text/plain\r\n",
            &body,
        )
        .as_bytes(),
        wait,
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 415 "), "{r}");
    unchanged(a, listen).await;

    // Labelled JSON (parameters and case do not matter), the same body works and proxies.
    let r = send(
        a,
        "PUT",
        "/api/v1/pools/q",
        &[("content-type", "Application/JSON"), ("if-none-match", "*")],
        "{}",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = send(
        a,
        "POST",
        "/api/v1/transaction",
        &[("content-type", "application/json ; charset=utf-8")],
        &body,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "backend\n");

    // An empty body, chunked or not, needs no label: ureq (so `weir ctl`) sends a
    // bodiless POST chunked.
    let ep = "/api/v1/pools/q/endpoints/127.0.0.1:9";
    let r = call(
        a,
        "PUT",
        &ep["/api/v1/".len()..],
        &[],
        Some(json!({"weight": 1, "ttl": "1h"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let hb = format!("{ep}/heartbeat");
    let r = raw_exchange(a, chunked(a, "POST", &hb, "", "").as_bytes(), wait).await;
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
    let tag = format!("\"{}\"", version(&get(a, &ep["/api/v1/".len()..]).await));
    let r = send(a, "DELETE", ep, &[("if-match", &tag)], "").await;
    assert_eq!(r.status, 204, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_from_a_foreign_origin_is_refused_with_403() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let port = a.port();
    let listen = free_addr();
    let json_ct = ("content-type", "application/json");

    // A page elsewhere: another site, a sandboxed frame or file (`null`), another scheme,
    // another port, another name for this host.
    let other_port = format!("http://127.0.0.1:{}", free_port());
    let https = format!("https://127.0.0.1:{port}");
    let by_name = format!("http://localhost:{port}");
    for origin in [
        "http://evil.example",
        "null",
        other_port.as_str(),
        https.as_str(),
        by_name.as_str(),
    ] {
        let o = ("origin", origin);
        let r = send(
            a,
            "POST",
            "/api/v1/transaction",
            &[json_ct, o],
            &takeover(listen, free_addr()),
        )
        .await;
        let p = assert_problem(&r, 403, "cross-origin");
        assert!(
            p["detail"].as_str().unwrap().contains(origin),
            "{origin}: {p}"
        );
        // Reads too, and the rest of the admin listener: the dashboard never asks
        // cross-origin, and nothing else runs in a browser.
        for path in ["/api/v1/pools", "/api/v1/export", "/metrics", "/"] {
            let r = send(a, "GET", path, &[o], "").await;
            assert_problem(&r, 403, "cross-origin");
        }
        // Probes say nothing and are answered.
        assert_eq!(send(a, "GET", "/healthz", &[o], "").await.status, 200);
        unchanged(a, listen).await;
    }

    // The listener's own origin: by the Host the request was sent to, or by its address.
    let own = format!("http://127.0.0.1:{port}");
    let r = send(a, "GET", "/api/v1/pools", &[("origin", &own)], "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let host = format!("localhost:{port}");
    for origin in [by_name.as_str(), own.as_str()] {
        let r = send(
            a,
            "GET",
            "/api/v1/pools",
            &[("host", &host), ("origin", origin)],
            "",
        )
        .await;
        assert_eq!(r.status, 200, "{origin}: {}", r.text());
    }
    let r = send(
        a,
        "PUT",
        "/api/v1/pools/app",
        &[json_ct, ("if-none-match", "*"), ("origin", &own)],
        "{}",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_a_host_that_is_not_loopback_is_refused_with_421() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let port = a.port();
    let listen = free_addr();

    // DNS rebinding: the attacker's name now resolves to 127.0.0.1, so to the browser the
    // page and the admin listener are one origin; only the Host header tells.
    let evil = format!("evil.example:{port}");
    let evil_origin = format!("http://{evil}");
    let r = send(
        a,
        "POST",
        "/api/v1/transaction",
        &[
            ("host", &evil),
            ("origin", &evil_origin),
            ("content-type", "application/json"),
        ],
        &takeover(listen, free_addr()),
    )
    .await;
    let p = assert_problem(&r, 421, "misdirected-request");
    assert!(p["detail"].as_str().unwrap().contains(&evil), "{p}");
    unchanged(a, listen).await;

    let names = [
        evil.clone(),
        "evil.example".into(),
        format!("10.0.0.1:{port}"),
        format!("[::ffff:10.0.0.1]:{port}"),
        format!("[2001:db8::1]:{port}"),
        format!("0.0.0.0:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
        "localhost:notaport".into(),
        String::new(),
    ];
    for host in &names {
        // Reads too: a rebound page could read the config and the metrics.
        for path in ["/api/v1/pools", "/api/v1/export", "/metrics", "/"] {
            let r = send(a, "GET", path, &[("host", host)], "").await;
            assert_problem(&r, 421, "misdirected-request");
        }
        assert_eq!(
            send(a, "GET", "/healthz", &[("host", host)], "")
                .await
                .status,
            200
        );
    }

    // Loopback literals and `localhost`, with or without a port.
    let names = [
        format!("127.0.0.1:{port}"),
        format!("127.1.2.3:{port}"),
        "127.0.0.1".into(),
        format!("localhost:{port}"),
        "LocalHost".into(),
        format!("[::1]:{port}"),
        format!("[::ffff:127.0.0.1]:{port}"),
        "[::ffff:7f00:1]".into(),
    ];
    for host in &names {
        let r = send(a, "GET", "/api/v1/pools", &[("host", host)], "").await;
        assert_eq!(r.status, 200, "{host}: {}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_any_host_is_fine_once_the_token_is_sent() {
    let data = tempfile::tempdir().unwrap();
    let token = data.path().join("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let tf = token.display().to_string();
    let w = Weir::store_on(&data.path().join("s"), free_addr(), &["--token-file", &tf]);
    let a = w.admin;
    let evil = format!("evil.example:{}", a.port());
    let bearer = ("authorization", "Bearer s3cret");

    // On loopback reads are open, but a rebound page would not send the token: a read by
    // another name needs it.
    assert_eq!(get(a, "pools").await.status, 200);
    let r = send(a, "GET", "/api/v1/pools", &[("host", &evil)], "").await;
    let p = assert_problem(&r, 401, "unauthorized");
    assert!(p["detail"].as_str().unwrap().contains("Host"), "{p}");
    let r = send(a, "GET", "/metrics", &[("host", &evil)], "").await;
    assert_problem(&r, 401, "unauthorized");

    let r = send(a, "GET", "/api/v1/pools", &[("host", &evil), bearer], "").await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = send(
        a,
        "PUT",
        "/api/v1/pools/app",
        &[
            ("host", &evil),
            bearer,
            ("content-type", "application/json"),
            ("if-none-match", "*"),
        ],
        "{}",
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // The Origin and Content-Type rules hold with a token too.
    let r = send(
        a,
        "GET",
        "/api/v1/pools",
        &[bearer, ("origin", "http://evil.example")],
        "",
    )
    .await;
    assert_problem(&r, 403, "cross-origin");
    let r = send(
        a,
        "PUT",
        "/api/v1/pools/b",
        &[
            bearer,
            ("content-type", "text/plain"),
            ("if-none-match", "*"),
        ],
        "{}",
    )
    .await;
    assert_problem(&r, 415, "unsupported-media-type");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv4_mapped_loopback_admin_address_is_loopback() {
    // Runs without a token (refused on a non-loopback address), with reads open.
    let data = tempfile::tempdir().unwrap();
    let admin: SocketAddr = format!("[::ffff:127.0.0.1]:{}", free_port())
        .parse()
        .unwrap();
    let w = Weir::store_on(data.path(), admin, &[]);
    let r = call(
        w.admin,
        "PUT",
        "pools/app",
        &[("if-none-match", "*")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(get(w.admin, "pools/app").await.status, 200);

    // `weir check` agrees: no token needed in the file either.
    let file = data.path().join("weir.toml");
    std::fs::write(
        &file,
        format!("[admin]\nlisten = \"{admin}\"\n\n[pools.app]\nendpoints = []\n"),
    )
    .unwrap();
    let out = std::process::Command::new(WEIR)
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_key_in_a_body_is_refused_naming_its_json_pointer() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let put = |path: &'static str, body: &'static str| {
        send(
            a,
            "PUT",
            path,
            &[("content-type", "application/json"), ("if-none-match", "*")],
            body,
        )
    };

    let r = put(
        "/api/v1/pools/app",
        r#"{"balance": "p2c", "max_conn": 1, "balance": "random"}"#,
    )
    .await;
    let p = assert_problem(&r, 400, "bad-request");
    assert_eq!(p["field"], "/balance", "{p}");
    assert!(p["detail"].as_str().unwrap().contains("balance"), "{p}");
    // Nested, and a key that needs escaping in a pointer (`~` and `/`).
    let r = put(
        "/api/v1/pools/app",
        r#"{"health": {"check": "tcp", "check": "none"}}"#,
    )
    .await;
    assert_eq!(
        assert_problem(&r, 400, "bad-request")["field"],
        "/health/check"
    );
    let r = put("/api/v1/pools/app", r#"{"a/b~": 1, "a/b~": 2}"#).await;
    assert_eq!(assert_problem(&r, 400, "bad-request")["field"], "/a~1b~0");
    assert_eq!(get(a, "pools/app").await.status, 404);

    // In a transaction, inside the second change's spec.
    let tx = r#"{"changes": [
        {"op": "put", "path": "pools/a", "if_none_match": "*", "spec": {}},
        {"op": "put", "path": "pools/b", "if_none_match": "*",
         "spec": {"max_conn": 1, "max_queue": 5, "max_conn": 0}}]}"#;
    let r = send(
        a,
        "POST",
        "/api/v1/transaction",
        &[("content-type", "application/json")],
        tx,
    )
    .await;
    let p = assert_problem(&r, 400, "bad-request");
    assert_eq!(p["field"], "/changes/1/spec/max_conn", "{p}");
    assert_eq!(json(&get(a, "pools").await)["items"], json!([]));

    // The same key in different objects is no duplicate.
    let r = put(
        "/api/v1/pools/app",
        r#"{"max_conn": 1, "health": {"check": "none"}, "retry": {"attempts": 1}}"#,
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text());
}
