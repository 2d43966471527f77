//! Access logs: JSON lines with timings and a reason for every failure,
//! reopened on SIGUSR1.

use std::time::Duration;

use serde_json::Value;
use weir_testkit::client;
use weir_testkit::HttpUpstream;

use crate::common::{access_log, endpoints, free_addr, raw_exchange, Weir};

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_request_is_logged_with_its_reason() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (listen, dead) = (free_addr(), free_addr());
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
access_log = "{}"

[routes.ok]
listener = "web"
host = "ok.test"
pool = "app"

[routes.dead]
listener = "web"
host = "dead.test"
pool = "dead"

[routes.slow]
listener = "web"
host = "slow.test"
pool = "slow"

[pools.app]
{}
[pools.dead]
{}
[pools.dead.retry]
attempts = 0
[pools.slow]
{}
response_timeout = "200ms"
[pools.slow.retry]
attempts = 0
"#,
        log.display(),
        endpoints(&[(up.addr(), 1)]),
        endpoints(&[(dead, 1)]),
        endpoints(&[(up.addr(), 1)])
    );
    let w = Weir::start(&cfg, &[listen]);
    let get = |host: &'static str, path: &'static str| async move {
        let req = http::Request::get(path)
            .header("host", host)
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        client::send(listen, req).await.unwrap()
    };
    assert_eq!(get("ok.test", "/hello?x=1").await.status, 200);
    assert_eq!(get("nowhere.test", "/").await.status, 404);
    assert_eq!(get("dead.test", "/").await.status, 502);
    assert_eq!(get("slow.test", "/?hang=1").await.status, 504);

    let entries = access_log(&log, 4);
    assert_eq!(entries.len(), 4, "{entries:#?}");
    let ok = &entries[0];
    assert_eq!(ok["method"], "GET");
    assert_eq!(ok["protocol"], "HTTP/1.1");
    assert!(
        ok.get("grpc_status").is_none(),
        "only gRPC calls have one: {ok}"
    );
    assert_eq!(ok["host"], "ok.test");
    assert_eq!(ok["path"], "/hello?x=1");
    assert_eq!(ok["status"], 200);
    assert_eq!(ok["route"], "ok");
    assert_eq!(ok["pool"], "app");
    assert_eq!(ok["endpoint"], up.addr().to_string());
    assert_eq!(ok["bytes"], 2);
    assert!(ok["reason"].is_null());
    assert!(ok["client"].as_str().unwrap().starts_with("127.0.0.1:"));
    for key in [
        "time",
        "queue_ms",
        "connect_ms",
        "first_byte_ms",
        "total_ms",
        "retries",
    ] {
        assert!(ok[key].is_number(), "{key}: {ok}");
    }
    assert!(ok["total_ms"].as_f64().unwrap() >= ok["first_byte_ms"].as_f64().unwrap());
    let reasons: Vec<&str> = entries[1..]
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        ["route_not_found", "connect_failed", "upstream_timeout"]
    );

    // Rotation: move the file away, SIGUSR1, and weir writes a new one.
    let rotated = dir.path().join("access.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    let from = w.log_lines();
    w.signal(libc::SIGUSR1);
    w.wait_log(from, "reopening access logs", Duration::from_secs(5));
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(get("ok.test", "/after").await.status, 200);
    let fresh = access_log(&log, 1);
    assert_eq!(fresh.len(), 1);
    assert_eq!(fresh[0]["path"], "/after");
    assert_eq!(lines(&rotated).len(), 4);
}

/// Requests the server refuses before routing (framing, oversize heads)
/// are failures like any other: an access log line and a count, with the
/// reason, under the listener's no-route labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refused_requests_are_logged_and_counted() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
access_log = "{}"
max_header_bytes = 8192

[pools.app]
{}
"#,
        log.display(),
        endpoints(&[(up.addr(), 1)]),
    );
    let w = Weir::start(&cfg, &[listen]);
    let smuggle =
        b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n";
    let text = raw_exchange(listen, smuggle, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(10_000)
    );
    let text = raw_exchange(listen, big.as_bytes(), Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 431 "), "{text}");

    let entries = access_log(&log, 2);
    assert_eq!(entries.len(), 2, "{entries:#?}");
    for (e, status) in entries.iter().zip([400, 431]) {
        assert_eq!(e["status"], status, "{e}");
        assert_eq!(e["reason"], "bad_request", "{e}");
        assert_eq!(e["listener"], "web", "{e}");
    }
    let text = client::get(w.admin, "/metrics").await.unwrap().text();
    for code in ["400", "431"] {
        assert!(
            text.lines().any(|l| l.starts_with("weir_requests_total{")
                && l.contains("listener=\"web\"")
                && l.contains(&format!("code=\"{code}\""))
                && l.contains("reason=\"bad_request\"")
                && l.ends_with(" 1")),
            "no count for {code}:\n{text}"
        );
    }
    assert_eq!(up.requests(), 0);
}
