//! PINGs on upstream HTTP/2 connections (`ping_interval`, `ping_timeout`): a connection
//! whose endpoint stopped serving it without closing it (a hung process, a host gone
//! without a FIN, a flow dropped on the way) is found and given up, and an answering one
//! is kept. The endpoints are the `h2` crate's server, which answers a PING whenever its
//! connection is polled: one that stops polling its connection is a hung endpoint.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::json;
use tokio::net::TcpListener;
use weir_testkit::client::HttpConn;

use crate::api_client::{add, call, get as api_get, json as api_json};
use crate::common::{free_addr, one_pool, Weir};
use crate::tls_kit::metric;

/// An h2c endpoint answering `hello from N` (N its connection's number, from 1). With
/// `hang_first`, its first connection hangs at its second request: from then on it reads
/// nothing, answers nothing (PINGs included), and stays open.
async fn endpoint(hang_first: bool) -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicU64::new(0));
    let counted = conns.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            let n = counted.fetch_add(1, Relaxed) + 1;
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                let mut requests = 0;
                while let Some(Ok((req, mut respond))) = conn.accept().await {
                    requests += 1;
                    if hang_first && n == 1 && requests == 2 {
                        let _held = (conn, req, respond);
                        std::future::pending::<()>().await;
                        unreachable!();
                    }
                    let resp = http::Response::builder().status(200).body(()).unwrap();
                    if let Ok(mut send) = respond.send_response(resp, false) {
                        let _ = send.send_data(Bytes::from(format!("hello from {n}\n")), true);
                    }
                }
            });
        }
    });
    (addr, conns)
}

async fn get(listen: SocketAddr, path: &str) -> (u16, String) {
    let mut c = HttpConn::connect(listen).await.unwrap();
    let req = Request::get(format!("http://{listen}{path}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = c.send(req).await.unwrap();
    (r.status.as_u16(), r.text())
}

/// A request sent on a pooled connection whose endpoint then hung waits for its
/// `response_timeout` (here five minutes) without PINGs. With them, the silent connection is
/// given up after one interval and one timeout, and the request, a GET, is retried on a new
/// connection, which answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_endpoints_connection_is_given_up_and_its_get_retried() {
    let (addr, conns) = endpoint(true).await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    // A 2 s timeout: the endpoint, in this test's process, answers PINGs far sooner even on a
    // loaded machine, so only the hung connection is given up.
    let pool = "protocol = \"h2c\"\nresponse_timeout = \"300s\"\nidle_timeout = \"300s\"\n\
                ping_interval = \"1s\"\nping_timeout = \"2s\"";
    let w = Weir::start(&one_pool(listen, &eps, pool), &[listen]);
    assert_eq!(get(listen, "/one").await, (200, "hello from 1\n".into()));
    // The same (pooled) connection takes the second request, and hangs.
    let (status, body) = tokio::time::timeout(Duration::from_secs(120), get(listen, "/two"))
        .await
        .expect("the request on the hung connection was not given up");
    assert_eq!((status, body.as_str()), (200, "hello from 2\n"));
    assert_eq!(conns.load(Relaxed), 2);
    let retried = metric(
        w.admin,
        "weir_retries_total{pool=\"app\",reason=\"upstream_reset\"}",
    )
    .await;
    assert_eq!(retried, 1.0);
    let dead = metric(w.admin, "weir_upstream_ping_timeouts_total{pool=\"app\"}").await;
    assert_eq!(dead, 1.0);
}

/// An endpoint that answers its PINGs keeps its connection through silences longer than
/// `ping_interval + ping_timeout`: the next request finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answering_endpoint_keeps_its_connection() {
    let (addr, conns) = endpoint(false).await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    let pool = "protocol = \"h2c\"\nidle_timeout = \"300s\"\n\
                ping_interval = \"1s\"\nping_timeout = \"3s\"";
    let w = Weir::start(&one_pool(listen, &eps, pool), &[listen]);
    assert_eq!(get(listen, "/one").await, (200, "hello from 1\n".into()));
    // PINGs go and come back; a connection given up would be gone after four seconds
    // (one interval and one timeout).
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(get(listen, "/two").await, (200, "hello from 1\n".into()));
    assert_eq!(conns.load(Relaxed), 1);
    let dead = metric(w.admin, "weir_upstream_ping_timeouts_total{pool=\"app\"}").await;
    assert_eq!(dead, 0.0);
}

#[test]
fn weir_check_reads_the_ping_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    let check = |text: &str| {
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        let says = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        (out.status.success(), says)
    };
    let head = "[listeners.web]\nbind = \"127.0.0.1:0\"\npool = \"app\"\n[pools.app]\n\
                endpoints = [{ addr = \"127.0.0.1:9\" }]\n";
    // Settings that do nothing: warnings, at their key.
    let (ok, says) = check(&format!("{head}ping_interval = \"30s\"\n"));
    assert!(ok, "{says}");
    assert!(
        says.lines().any(|l| l.contains("weir.toml:6:1")
            && l.contains("warning")
            && l.contains("ping_interval has no effect unless protocol is")),
        "{says}"
    );
    let (ok, says) = check(&format!(
        "{head}protocol = \"h2c\"\nping_timeout = \"5s\"\n"
    ));
    assert!(ok, "{says}");
    assert!(
        says.lines().any(|l| l.contains("weir.toml:7:1")
            && l.contains("ping_timeout has no effect without ping_interval")),
        "{says}"
    );
    // A value that is not a duration: an error at the value.
    let (ok, says) = check(&format!(
        "{head}protocol = \"h2c\"\nping_interval = \"soon\"\n"
    ));
    assert!(!ok, "{says}");
    assert!(
        says.lines()
            .any(|l| l.contains("weir.toml:7:17") && l.contains("error")),
        "{says}"
    );
    // Both set on an h2c pool: accepted without a word.
    let (ok, says) = check(&format!(
        "{head}protocol = \"h2c\"\nping_interval = \"30s\"\nping_timeout = \"5s\"\n"
    ));
    assert!(ok && !says.contains("warning"), "{says}");
}

/// Through the admin API: the settings are a pool's fields like any other, a bad one is
/// refused naming it, and the pool stays as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_takes_the_ping_settings_and_names_a_bad_one() {
    let data = tempfile::tempdir().unwrap();
    let w = Weir::store(data.path());
    let a = w.admin;
    let spec = json!({"protocol": "h2c", "ping_interval": "30s", "ping_timeout": "5s"});
    let v = add(a, "pools/app", spec.clone()).await;
    let tag = format!("\"{v}\"");
    let r = call(
        a,
        "PUT",
        "pools/app",
        &[("if-match", &tag)],
        Some(json!({"protocol": "h2c", "ping_interval": "soon"})),
    )
    .await;
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    assert_eq!(api_json(&r)["field"], "pools/app/ping_interval");
    assert_eq!(api_json(&api_get(a, "pools/app").await), spec);
}
