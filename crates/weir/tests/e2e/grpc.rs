//! gRPC through weir, with real gRPC on both sides: tonic clients and the
//! testkit's tonic Echo server. Unary and the three kinds of streaming calls, their
//! trailers and statuses; a deadline weir enforces itself; weir's own errors as gRPC
//! statuses; the grpc health check; gRPC over TLS on both hops.

use std::time::{Duration, Instant};

use weir_testkit::certs::Ca;
use weir_testkit::grpc::tonic::{Code, Request};
use weir_testkit::grpc::{
    grpc_client, grpc_client_raw, grpc_client_tls, EchoRequest, GrpcUpstream,
};

use crate::common::{free_addr, one_pool, Weir};

fn msg(message: &str) -> EchoRequest {
    EchoRequest {
        message: message.into(),
        ..Default::default()
    }
}

/// weir on a fresh port in front of `ups` (`protocol = "h2c"`), with `extra` pool keys.
fn front(ups: &[&GrpcUpstream], extra: &str) -> (Weir, std::net::SocketAddr) {
    let listen = free_addr();
    let eps: Vec<String> = ups
        .iter()
        .map(|u| format!("{{ addr = \"{}\" }}", u.addr()))
        .collect();
    let eps = format!("endpoints = [{}]", eps.join(", "));
    let cfg = one_pool(listen, &eps, &format!("protocol = \"h2c\"\n{extra}"));
    (Weir::start(&cfg, &[listen]), listen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_and_streaming_calls_with_trailers_and_statuses() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let (_w, listen) = front(&[&up], "");
    let mut c = grpc_client(listen).await.unwrap();

    // Unary, with a trailer set by the server.
    let mut req = msg("hi");
    req.set_trailer = "t1".into();
    let resp = c.unary(req).await.unwrap();
    let reply = resp.get_ref();
    assert_eq!((reply.message.as_str(), reply.server.as_str()), ("hi", "a"));
    assert_eq!(
        reply.authority,
        listen.to_string(),
        ":authority passes through"
    );
    // Unary with a 1 MiB answer: flow control on both hops.
    let mut big = msg("big");
    big.reply_bytes = 1 << 20;
    let reply = c.unary(big).await.unwrap().into_inner();
    assert!(
        reply.padding.len() >= (1 << 20) - 64,
        "{}",
        reply.padding.len()
    );

    // The server's status and message reach the client as it sent them.
    let mut req = msg("no");
    req.status_code = Code::NotFound as i32;
    let status = c.unary(req).await.unwrap_err();
    assert_eq!((status.code(), status.message()), (Code::NotFound, "asked"));

    // Server streaming: five replies, in order.
    let mut req = msg("s");
    req.count = 5;
    let mut stream = c.server_stream(req).await.unwrap().into_inner();
    let mut got = Vec::new();
    while let Some(r) = stream.message().await.unwrap() {
        got.push(r.message);
    }
    assert_eq!(got, ["s 0", "s 1", "s 2", "s 3", "s 4"]);

    // Client streaming: three messages, one answer.
    let reqs = tokio_stream_of(vec![msg("x"), msg("y"), msg("z")]);
    let reply = c.client_stream(reqs).await.unwrap().into_inner();
    assert_eq!((reply.message.as_str(), reply.count), ("x,y,z", 3));

    // Bidirectional, interactive: each message is sent only after the answer to the
    // previous one came back through weir (a proxy that waited for the request's end
    // would hang here).
    let (tx, rx) = tokio::sync::mpsc::channel::<EchoRequest>(1);
    let outbound =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) });
    tx.send(msg("ping 0")).await.unwrap();
    let mut inbound = c.bidi(Request::new(outbound)).await.unwrap().into_inner();
    for i in 0..3u64 {
        let r = tokio::time::timeout(Duration::from_secs(20), inbound.message())
            .await
            .expect("an answer before the next message")
            .unwrap()
            .unwrap();
        assert_eq!(r.message, format!("ping {i}"));
        if i < 2 {
            tx.send(msg(&format!("ping {}", i + 1))).await.unwrap();
        }
    }
    drop(tx);
    assert!(inbound.message().await.unwrap().is_none());
    // The trailers of a streaming call too.
    let mut req = msg("t");
    req.count = 1;
    req.set_trailer = "t2".into();
    let mut stream = c.server_stream(req).await.unwrap().into_inner();
    while stream.message().await.unwrap().is_some() {}
    let trailers = stream.trailers().await.unwrap().expect("trailers");
    assert_eq!(trailers.get("x-echo-trailer").unwrap(), "t2");
}

/// Response-head deadlines on one upstream HTTP/2 connection are kept by its task, on one
/// timer armed at the earliest: a call with a short deadline (grpc-timeout 300 ms) times
/// out long before the pool's `response_timeout` (6 s) while a slower call waits on the
/// same connection, a second short one after it too; a call past the pool's own deadline
/// ends with it; the slow one that fits its deadline is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_deadlines_on_one_connection_each_end_their_own_call() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let (_w, listen) = front(&[&up], "response_timeout = \"6s\"");
    let raw = grpc_client_raw(listen).unwrap();
    let call = |delay_ms: u64, deadline: Option<Duration>| {
        let mut c = raw.clone();
        async move {
            let mut req = Request::new(EchoRequest {
                delay_ms,
                ..msg("x")
            });
            if let Some(d) = deadline {
                req.set_timeout(d);
            }
            let started = Instant::now();
            (c.unary(req).await, started.elapsed())
        }
    };
    let timed_out = |r: Result<_, weir_testkit::grpc::tonic::Status>| {
        let status = r.unwrap_err();
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
        assert_eq!(status.message(), "upstream_timeout");
    };
    // Answered at 1.2 s, within the pool's 6 s.
    let slow = tokio::spawn(call(1_200, None));
    // Both open after it, on the same connection, with deadlines far earlier than its:
    // each ends at its own (a timer left armed for the pool's would hold it 6 s).
    for _ in 0..2 {
        let (short, took) = call(10_000, Some(Duration::from_millis(300))).await;
        timed_out(short);
        assert!(took < Duration::from_secs(5), "{took:?}");
    }
    let (slow, _) = slow.await.unwrap();
    assert_eq!(
        slow.unwrap().get_ref().message,
        "x",
        "the slow call is answered"
    );
    // Past the pool's response_timeout: ended by weir at 6 s, not the backend at 10 s.
    let (late, took) = call(10_000, None).await;
    timed_out(late);
    assert!(took >= Duration::from_secs(6), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
}

fn tokio_stream_of(v: Vec<EchoRequest>) -> impl futures_util::Stream<Item = EchoRequest> {
    futures_util::stream::iter(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_weir_enforces_and_weirs_own_errors_as_grpc_statuses() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let (_w, listen) = front(&[&up], "");
    // A client that sends grpc-timeout but does not enforce it: the status is weir's.
    let mut raw = grpc_client_raw(listen).unwrap();
    let mut req = Request::new(EchoRequest {
        delay_ms: 5_000,
        ..msg("slow")
    });
    req.set_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let status = raw.unary(req).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert_eq!(status.message(), "upstream_timeout");
    assert!(
        // The status is the proof (the server would have answered OK after 5 s); the
        // wait is only bounded below, which no load can break.
        took >= Duration::from_millis(500),
        "{took:?}"
    );
    // The server saw the deadline (less the time weir spent).
    let deadline = Instant::now() + Duration::from_secs(10);
    while up.log().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = up.log()[0].headers["grpc-timeout"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(seen.ends_with('m') || seen.ends_with('u'), "{seen}");

    // No route for the service: UNIMPLEMENTED, as a server without the method says. A
    // route to a pool whose endpoint refuses connections: UNAVAILABLE.
    for (prefix, code, message) in [
        ("/other.Service/", Code::Unimplemented, "route_not_found"),
        ("/weir.test.Echo/", Code::Unavailable, "retries_exhausted"),
    ] {
        let listen = free_addr();
        let cfg = format!(
            r#"
[listeners.web]
bind = "{listen}"
[routes.r]
listener = "web"
path_prefix = "{prefix}"
pool = "gone"
[pools.gone]
protocol = "h2c"
endpoints = [{{ addr = "{}" }}]
"#,
            free_addr()
        );
        let _w = Weir::start(&cfg, &[listen]);
        let mut c = grpc_client(listen).await.unwrap();
        let status = c.unary(msg("x")).await.unwrap_err();
        assert_eq!(
            (status.code(), status.message()),
            (code, message),
            "{prefix}"
        );
    }
}

/// `weir_grpc_calls_total{grpc_code}` summed over the label sets of `admin`'s metrics: by
/// gRPC status name.
async fn grpc_calls(admin: std::net::SocketAddr) -> std::collections::BTreeMap<String, u64> {
    let text = weir_testkit::client::get(admin, "/metrics")
        .await
        .unwrap()
        .text();
    let mut by = std::collections::BTreeMap::new();
    for l in text
        .lines()
        .filter(|l| l.starts_with("weir_grpc_calls_total{"))
    {
        let code = l
            .split("grpc_code=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let n: u64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        *by.entry(code.to_string()).or_insert(0) += n;
    }
    by
}

/// Every gRPC call is an HTTP 200, so calls are also counted by the `grpc-status` their
/// client got: the backend's, in trailers after messages or in a trailers-only answer, and
/// weir's own answer's; in the metrics and in the JSON stats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_counted_by_their_grpc_status() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let (w, listen) = front(&[&up], "");
    let mut c = grpc_client(listen).await.unwrap();
    for _ in 0..2 {
        c.unary(msg("ok")).await.unwrap();
    }
    let mut req = msg("no");
    req.status_code = Code::NotFound as i32;
    assert_eq!(c.unary(req).await.unwrap_err().code(), Code::NotFound);
    // A status after a message: in the trailers.
    let mut second = msg("stop");
    second.status_code = Code::Aborted as i32;
    let mut inbound = c
        .bidi(tokio_stream_of(vec![msg("one"), second]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(inbound.message().await.unwrap().unwrap().message, "one");
    assert_eq!(inbound.message().await.unwrap_err().code(), Code::Aborted);
    // weir's own answer: the deadline passed (the client does not enforce it).
    let mut raw = grpc_client_raw(listen).unwrap();
    let mut req = Request::new(EchoRequest {
        delay_ms: 5_000,
        ..msg("slow")
    });
    req.set_timeout(Duration::from_millis(300));
    let status = raw.unary(req).await.unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");

    let want: std::collections::BTreeMap<String, u64> = [
        ("OK", 2),
        ("NOT_FOUND", 1),
        ("ABORTED", 1),
        ("DEADLINE_EXCEEDED", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    // Counted when each answer's body is done with, just after the client has it.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = grpc_calls(w.admin).await;
    while got != want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        got = grpc_calls(w.admin).await;
    }
    assert_eq!(got, want);
    // The same counts in the JSON stats, per listener.
    let stats: serde_json::Value = serde_json::from_slice(
        &weir_testkit::client::get(w.admin, "/api/v1/stats")
            .await
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(
        stats["listeners"][0]["grpc"],
        serde_json::json!(want),
        "{stats}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_health_check_takes_a_not_serving_server_out() {
    let a = GrpcUpstream::spawn("a").await.unwrap();
    let b = GrpcUpstream::spawn("b").await.unwrap();
    let health = "health = { check = \"grpc\", service = \"weir.test.Echo\", interval = \"1s\", timeout = \"900ms\", rise = 1, fall = 2 }";
    a.set_serving("weir.test.Echo", true).await;
    b.set_serving("weir.test.Echo", true).await;
    let (w, listen) = front(&[&a, &b], health);
    // Both checked, both healthy: calls go to both.
    let deadline = Instant::now() + Duration::from_secs(20);
    while (a.health_checks() == 0 || b.health_checks() == 0) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(a.health_checks() > 0 && b.health_checks() > 0);
    let mut c = grpc_client(listen).await.unwrap();
    // b says it no longer serves the service: weir logs it down and sends all to a.
    let from = w.log_lines();
    b.set_serving("weir.test.Echo", false).await;
    w.wait_log(from, "endpoint is unhealthy", Duration::from_secs(20));
    let text = w.log_text();
    assert!(
        text.contains("weir.test.Echo") && text.contains("is NOT_SERVING"),
        "{text}"
    );
    for _ in 0..10 {
        let r = c.unary(msg("x")).await.unwrap().into_inner();
        assert_eq!(r.server, "a");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_over_tls_on_both_hops() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ca");
    let ca_file = ca.write(dir.path(), "ca");
    let ca_pem = std::fs::read_to_string(&ca_file).unwrap();
    let (cert, key) = ca.leaf_files(dir.path(), "backend", &["grpc.internal"]);
    let front_pair = ca.leaf(&["api.test"]).write(dir.path(), "front");
    let up = GrpcUpstream::spawn_tls("a", &cert, &key).await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
[listeners.web.tls]
certificates = [{{ cert = "{}", key = "{}", default = true }}]
[pools.app]
protocol = "h2"
endpoints = [{{ addr = "{}" }}]
health = {{ check = "grpc", interval = "300ms", timeout = "250ms" }}
[pools.app.tls]
ca = "{}"
server_name = "grpc.internal"
"#,
        front_pair.cert.display(),
        front_pair.key.display(),
        up.addr(),
        ca_file.display()
    );
    let _w = Weir::start(&cfg, &[listen]);
    // By address, verifying the name the listener's certificate holds.
    let mut c = grpc_client_tls(format!("https://{listen}"), &ca_pem, "api.test")
        .await
        .unwrap();
    let mut req = msg("secure");
    req.count = 3;
    let mut stream = c.server_stream(req).await.unwrap().into_inner();
    let mut n = 0;
    while let Some(r) = stream.message().await.unwrap() {
        assert_eq!(r.server, "a");
        n += 1;
    }
    assert_eq!(n, 3);
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.health_checks() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(up.health_checks() > 0, "health checked over TLS and HTTP/2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_grpc_status_retries_idempotent_calls_only() {
    let a = GrpcUpstream::spawn("a").await.unwrap();
    let b = GrpcUpstream::spawn("b").await.unwrap();
    let (_w, listen) = front(&[&a, &b], "retry = { on_grpc_status = [14], attempts = 1 }");
    let mut c = grpc_client(listen).await.unwrap();
    let unavailable = || EchoRequest {
        status_code: Code::Unavailable as i32,
        ..msg("x")
    };
    // Marked idempotent: the UNAVAILABLE answer is retried on the other server, and
    // its answer (UNAVAILABLE too) is what the client gets.
    let mut req = Request::new(unavailable());
    req.metadata_mut()
        .insert("idempotency-key", "k1".parse().unwrap());
    let status = c.unary(req).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(a.calls() + b.calls(), 2, "tried on both");
    // Not marked: a POST the server may have acted on is not sent again.
    let status = c.unary(unavailable()).await.unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(a.calls() + b.calls(), 3, "tried once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_deadline_also_caps_its_wait_in_the_queue() {
    let up = GrpcUpstream::spawn("a").await.unwrap();
    let (_w, listen) = front(
        &[&up],
        "max_conn = 1\nmax_queue = 10\nqueue_timeout = \"30s\"",
    );
    // One call holds the only slot for 5 s.
    let mut holder = grpc_client(listen).await.unwrap();
    let held = tokio::spawn(async move {
        holder
            .unary(EchoRequest {
                delay_ms: 5_000,
                ..msg("hold")
            })
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.calls() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(up.calls(), 1);
    // The next waits in the queue, but only until its own deadline (500 ms), not the
    // pool's 30 s: RESOURCE_EXHAUSTED from weir, and the call never reached the server.
    let mut raw = grpc_client_raw(listen).unwrap();
    let mut req = Request::new(msg("queued"));
    req.set_timeout(Duration::from_millis(500));
    let started = Instant::now();
    let status = raw.unary(req).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(
        (status.code(), status.message()),
        (Code::ResourceExhausted, "queue_timeout")
    );
    // Well before the pool's 30 s (and the holder's 5 s).
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(up.calls(), 1);
    held.abort();
}
