//! weir's own answers to gRPC calls: trailers-only, HTTP 200, with the
//! `grpc-status` its reason maps to (no route → UNIMPLEMENTED, a dead backend →
//! UNAVAILABLE, `grpc-timeout` passed → DEADLINE_EXCEEDED), the reason still in
//! `x-weir-reason`, the access log and the metrics. And trailers from an HTTP/2 backend
//! reach an HTTP/2 client. The client here is the `h2` crate, so the test sees the raw
//! frames a gRPC library would.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request};
use tokio::net::{TcpListener, TcpStream};
use weir_testkit::{HttpUpstream, Latency};

use crate::common::{free_addr, Weir};

/// A call's answer: status, head, body, trailers.
struct Answer {
    status: u16,
    head: HeaderMap,
    body: Vec<u8>,
    trailers: Option<HeaderMap>,
    took: Duration,
}

/// One gRPC-shaped POST over h2c with prior knowledge, with `extra` headers.
async fn call(addr: SocketAddr, path: &str, extra: &[(&str, &str)]) -> Answer {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = client.ready().await.unwrap();
    let mut req = Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let started = Instant::now();
    let (resp, mut send) = client.send_request(req.body(()).unwrap(), false).unwrap();
    // One empty message (5-byte prefix, length 0).
    send.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    let resp = resp.await.unwrap();
    let took = started.elapsed();
    let status = resp.status().as_u16();
    let head = resp.headers().clone();
    let mut recv = resp.into_body();
    let mut body = Vec::new();
    while let Some(d) = recv.data().await {
        let d = d.unwrap();
        let _ = recv.flow_control().release_capacity(d.len());
        body.extend_from_slice(&d);
    }
    let trailers = recv.trailers().await.unwrap();
    Answer {
        status,
        head,
        body,
        trailers,
        took,
    }
}

fn grpc_status(a: &Answer) -> String {
    let h = a.trailers.as_ref().unwrap_or(&a.head);
    h.get("grpc-status")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn weirs_own_answers_are_trailers_only_grpc_statuses() {
    let slow = HttpUpstream::builder("slow")
        .h2c()
        .latency(Latency::Fixed(Duration::from_secs(5)))
        .spawn()
        .await
        .unwrap();
    let dead = free_addr();
    let (listen, logs) = (free_addr(), tempfile::tempdir().unwrap());
    let log = logs.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
access_log = "{}"
[routes.slow]
listener = "web"
path_prefix = "/slow."
pool = "slow"
[routes.dead]
listener = "web"
path_prefix = "/dead."
pool = "dead"
[pools.slow]
protocol = "h2c"
endpoints = [{{ addr = "{}" }}]
[pools.dead]
protocol = "h2c"
endpoints = [{{ addr = "{dead}" }}]
"#,
        log.display(),
        slow.addr()
    );
    let w = Weir::start(&cfg, &[listen]);

    // No route: UNIMPLEMENTED (12).
    let a = call(listen, "/nowhere.Svc/Call", &[]).await;
    assert_eq!(a.status, 200);
    assert_eq!(grpc_status(&a), "12");
    assert!(
        a.trailers.is_none(),
        "trailers-only: the status is in the head"
    );
    assert!(a.body.is_empty());
    assert_eq!(a.head["content-type"], "application/grpc");
    assert_eq!(a.head["grpc-message"], "route_not_found");
    assert_eq!(a.head["x-weir-reason"], "route_not_found");

    // Nothing listens: UNAVAILABLE (14), the gRPC client may try elsewhere.
    let a = call(listen, "/dead.Svc/Call", &[]).await;
    assert_eq!((a.status, grpc_status(&a)), (200, "14".to_string()));
    assert_eq!(a.head["x-weir-reason"], "retries_exhausted");

    // The call's deadline (grpc-timeout 1 s) ends the wait long before the backend
    // answers (5 s) or the pool's response_timeout (60 s): DEADLINE_EXCEEDED (4).
    let a = call(listen, "/slow.Svc/Call", &[("grpc-timeout", "1S")]).await;
    assert_eq!((a.status, grpc_status(&a)), (200, "4".to_string()));
    assert_eq!(a.head["x-weir-reason"], "upstream_timeout");
    // The status is the proof that weir cut it (the backend would answer 200 after 5 s);
    // the time is only bounded below.
    assert!(a.took >= Duration::from_secs(1), "took {:?}", a.took);
    // The backend got the deadline too.
    let until = Instant::now() + Duration::from_secs(10);
    while slow.log().is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let rec = slow.log();
    assert_eq!(rec.len(), 1);
    assert_eq!(rec[0].headers["grpc-timeout"], "1S");
    // The log names the limit that ran out: the call's, not the pool's request_timeout.
    let line = w.wait_log(0, "upstream_timeout", Duration::from_secs(10));
    assert!(line.contains("grpc-timeout (1s)"), "{line}");
    assert!(!line.contains("request_timeout"), "{line}");

    // Counted and logged under their reasons, with the status the client got (200), once
    // each answer is done (weir records it after the client has it: wait for that).
    let deadline = Instant::now() + Duration::from_secs(10);
    let want = "weir_requests_total{listener=\"web\",route=\"slow\",pool=\"slow\",";
    let (mut text, mut line) = (String::new(), String::new());
    while Instant::now() < deadline {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        let metrics = weir_testkit::client::get(w.admin, "/metrics")
            .await
            .unwrap()
            .text();
        line = metrics
            .lines()
            .find(|l| l.starts_with(want))
            .unwrap_or_default()
            .to_string();
        if text.lines().count() >= 3 && !line.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        line.contains("code=\"200\",reason=\"upstream_timeout\"} 1"),
        "{line}"
    );
    for (reason, code) in [
        ("route_not_found", 12),
        ("retries_exhausted", 14),
        ("upstream_timeout", 4),
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(reason))
            .unwrap_or_else(|| panic!("{reason} in {text}"));
        assert!(line.contains("\"status\":200"), "{line}");
        assert!(line.contains(&format!("\"grpc_status\":{code}")), "{line}");
        assert!(line.contains("\"protocol\":\"HTTP/2\""), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailers_pass_from_an_h2_backend_to_an_h2_client() {
    // A bare HTTP/2 backend: a message, then grpc-status 0 and a custom trailer.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let backend = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut conn = h2::server::handshake(tcp).await.unwrap();
                while let Some(Ok((_req, mut respond))) = conn.accept().await {
                    let resp = http::Response::builder()
                        .header("content-type", "application/grpc")
                        .body(())
                        .unwrap();
                    let mut send = respond.send_response(resp, false).unwrap();
                    send.send_data(Bytes::from_static(&[0, 0, 0, 0, 2, 8, 1]), false)
                        .unwrap();
                    let mut t = HeaderMap::new();
                    t.insert("grpc-status", "0".parse().unwrap());
                    t.insert("x-trailer", "kept".parse().unwrap());
                    send.send_trailers(t).unwrap();
                }
            });
        }
    });
    let listen = free_addr();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("access.log");
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\naccess_log = \"{}\"\n\
         [pools.app]\nprotocol = \"h2c\"\nendpoints = [{{ addr = \"{backend}\" }}]\n",
        log.display()
    );
    let _w = Weir::start(&cfg, &[listen]);
    let a = call(listen, "/any.Svc/Call", &[]).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, [0, 0, 0, 0, 2, 8, 1]);
    let t = a.trailers.expect("trailers");
    assert_eq!(t["grpc-status"], "0");
    assert_eq!(t["x-trailer"], "kept");
    // The call's status, from the trailers, in its access log line.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut text = String::new();
    while text.is_empty() && Instant::now() < deadline {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(text.contains("\"grpc_status\":0"), "{text}");
}
