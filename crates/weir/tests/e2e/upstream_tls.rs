//! TLS to endpoints (`[pools.NAME.tls]`) through the real binary, against fake backends
//! behind a rustls front (`weir_testkit::TlsFront`) with certificates made per test: the
//! CA and server name verified, keep-alive reuse of a TLS connection, resumption on
//! reconnect, verification failures as `connect_failed` with the TLS reason logged, a
//! client certificate for a backend that requires one, health checks over TLS, a tcp
//! listener relaying through TLS, and a pool's CA and client certificate files read again
//! when they change.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::certs::Ca;
use weir_testkit::tls::server_config;
use weir_testkit::{client, HttpUpstream, TcpUpstream, TlsFront};

use crate::common::{endpoints, free_addr, Weir};

/// A fake HTTP backend named `name` behind TLS with a leaf for `names` signed by `ca`.
async fn tls_backend(
    dir: &Path,
    ca: &Ca,
    name: &str,
    names: &[&str],
    client_ca: Option<&Path>,
) -> (HttpUpstream, TlsFront) {
    let up = HttpUpstream::spawn(name).await.unwrap();
    let (cert, key) = ca.leaf_files(dir, name, names);
    let front = TlsFront::spawn(up.addr(), server_config(&cert, &key, client_ca).unwrap()).unwrap();
    (up, front)
}

/// A fake backend `api` (a leaf for `api.internal` signed by the returned server CA) that
/// requires a client certificate signed by the returned clients CA.
async fn mtls_backend(dir: &Path) -> (Ca, Ca, HttpUpstream, TlsFront) {
    let ca = Ca::new("internal ca");
    let clients = Ca::new("clients ca");
    let clients_file = clients.write(dir, "clients");
    let (up, front) = tls_backend(dir, &ca, "api", &["api.internal"], Some(&clients_file)).await;
    (ca, clients, up, front)
}

/// A GET with `host`, answered within 10 s (a TLS failure must not hang a request).
async fn get(listen: SocketAddr, host: &str, path: &str) -> client::Resp {
    let req = http::Request::get(path)
        .header("host", host)
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), client::send(listen, req))
        .await
        .expect("an answer within 10 s")
        .unwrap()
}

fn toml_path(p: &Path) -> String {
    p.display().to_string()
}

fn wait_until(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn verifies_the_ca_and_server_name_reuses_connections_and_resumes_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("internal ca");
    let ca_file = ca.write(dir.path(), "ca");
    let (keep, keep_front) = tls_backend(dir.path(), &ca, "keep", &["api.internal"], None).await;
    let (fresh, fresh_front) = tls_backend(dir.path(), &ca, "fresh", &["api.internal"], None).await;
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"

[routes.keep]
listener = "web"
host = "keep.test"
pool = "keep"

[routes.fresh]
listener = "web"
host = "fresh.test"
pool = "fresh"

[pools.keep]
{}
[pools.keep.tls]
ca = "{ca}"
server_name = "api.internal"

[pools.fresh]
{}
max_requests_per_conn = 1
[pools.fresh.tls]
ca = "{ca}"
server_name = "api.internal"
"#,
        endpoints(&[(keep_front.addr(), 1)]),
        endpoints(&[(fresh_front.addr(), 1)]),
        ca = toml_path(&ca_file),
    );
    let _w = Weir::start(&cfg, &[listen]);

    // Keep-alive: one TLS connection carries every request.
    for _ in 0..5 {
        let r = get(listen, "keep.test", "/").await;
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), "keep\n");
    }
    assert_eq!(keep_front.handshakes(), 1);
    assert_eq!(keep.connections(), 1);
    assert_eq!(
        keep_front.seen(),
        [(
            Some("api.internal".to_string()),
            Some("http/1.1".to_string())
        )]
    );

    // A connection per request: every one after the first resumes a session.
    for _ in 0..3 {
        let r = get(listen, "fresh.test", "/").await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    wait_until("3 handshakes", Duration::from_secs(5), || {
        fresh_front.handshakes() == 3
    });
    assert_eq!(fresh.connections(), 3);
    assert_eq!(fresh_front.resumed(), 2, "{:?}", fresh_front.errors());
    assert_eq!(keep_front.failed() + fresh_front.failed(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_certificate_that_does_not_verify_is_connect_failed_and_a_fixed_config_takes_effect() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("internal ca");
    let ca_file = ca.write(dir.path(), "ca");
    let stranger = Ca::new("someone else");
    let stranger_file = stranger.write(dir.path(), "stranger");
    let (_up, front) = tls_backend(dir.path(), &ca, "api", &["api.internal"], None).await;
    let plain = HttpUpstream::spawn("plain").await.unwrap();
    let listen = free_addr();
    let log = dir.path().join("access.log");
    let cfg = |name: &str, ca: &Path| {
        format!(
            r#"
[listeners.web]
bind = "{listen}"
pool = "api"
access_log = "{log}"

[pools.api]
{eps}
[pools.api.retry]
attempts = 0
[pools.api.tls]
ca = "{ca}"
server_name = "{name}"

[routes.plain]
listener = "web"
host = "plain.test"
pool = "plain"

[pools.plain]
{plain}
[pools.plain.retry]
attempts = 0
[pools.plain.tls]
ca = "{ca}"
server_name = "{name}"
"#,
            log = toml_path(&log),
            eps = endpoints(&[(front.addr(), 1)]),
            plain = endpoints(&[(plain.addr(), 1)]),
            ca = toml_path(ca),
        )
    };
    let w = Weir::start(&cfg("other.internal", &ca_file), &[listen]);

    // The wrong name.
    let from = w.log_lines();
    let r = get(listen, "x", "/").await;
    assert_eq!(r.status, 502);
    assert_eq!(r.header("x-weir-reason"), Some("connect_failed"));
    let line = w.wait_log(from, "request failed", Duration::from_secs(5));
    assert!(line.contains("reason=\"connect_failed\""), "{line}");
    assert!(line.contains("TLS handshake with"), "{line}");
    assert!(line.contains("not valid for name"), "{line}");
    assert!(line.contains("server_name"), "{line}");

    // A CA that did not sign it.
    assert!(w
        .reload(&cfg("api.internal", &stranger_file))
        .contains("config reloaded"));
    let from = w.log_lines();
    let r = get(listen, "x", "/").await;
    assert_eq!(r.status, 502);
    assert_eq!(r.header("x-weir-reason"), Some("connect_failed"));
    let line = w.wait_log(from, "request failed", Duration::from_secs(5));
    assert!(line.contains("UnknownIssuer"), "{line}");

    // An endpoint that does not speak TLS at all.
    let from = w.log_lines();
    let r = get(listen, "plain.test", "/").await;
    assert_eq!(r.status, 502);
    assert_eq!(r.header("x-weir-reason"), Some("connect_failed"));
    let line = w.wait_log(from, "request failed", Duration::from_secs(5));
    assert!(line.contains("does the endpoint speak TLS?"), "{line}");

    // Fixed: new connections use the new settings.
    assert!(w
        .reload(&cfg("api.internal", &ca_file))
        .contains("config reloaded"));
    let r = get(listen, "x", "/").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(front.handshakes(), 1);

    let deadline = Instant::now() + Duration::from_secs(5);
    let entries = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let entries: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if entries.len() >= 4 || Instant::now() > deadline {
            break entries;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let reasons: Vec<_> = entries.iter().map(|e| e["reason"].clone()).collect();
    assert_eq!(
        reasons,
        [
            serde_json::json!("connect_failed"),
            serde_json::json!("connect_failed"),
            serde_json::json!("connect_failed"),
            serde_json::Value::Null
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn presents_a_client_certificate_to_a_backend_that_requires_one() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, clients, _up, front) = mtls_backend(dir.path()).await;
    let ca_file = ca.write(dir.path(), "ca");
    let (client_cert, client_key) =
        clients.leaf_files(dir.path(), "weir-client", &["weir.internal"]);
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "api"

[routes.anonymous]
listener = "web"
host = "anonymous.test"
pool = "anonymous"

[pools.api]
{eps}
[pools.api.tls]
ca = "{ca}"
server_name = "api.internal"
cert = "{}"
key = "{}"

[pools.anonymous]
{eps}
[pools.anonymous.retry]
attempts = 0
[pools.anonymous.tls]
ca = "{ca}"
server_name = "api.internal"
"#,
        toml_path(&client_cert),
        toml_path(&client_key),
        eps = endpoints(&[(front.addr(), 1)]),
        ca = toml_path(&ca_file),
    );
    let w = Weir::start(&cfg, &[listen]);
    let r = get(listen, "x", "/").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "api\n");
    assert_eq!(front.client_certs(), 1);
    assert_eq!(front.failed(), 0, "{:?}", front.errors());

    // Without one, the backend refuses the handshake (under TLS 1.3 weir learns it where
    // the answer would come): connect_failed, not a reset of a request it read.
    let from = w.log_lines();
    let r = get(listen, "anonymous.test", "/").await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(r.header("x-weir-reason"), Some("connect_failed"));
    let line = w.wait_log(from, "request failed", Duration::from_secs(5));
    assert!(line.contains("CertificateRequired"), "{line}");
    // The front counts its failure after sending the alert: it may come after the answer.
    wait_until(
        "the refused handshake counted",
        Duration::from_secs(5),
        || front.failed() == 1,
    );
    assert!(
        front.errors()[0].contains("certificate"),
        "{:?}",
        front.errors()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_health_checks_go_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("internal ca");
    let ca_file = ca.write(dir.path(), "ca");
    let (up, front) = tls_backend(dir.path(), &ca, "api", &["api.internal"], None).await;
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "api"

[pools.api]
{}
[pools.api.tls]
ca = "{}"
server_name = "api.internal"
[pools.api.health]
check = "http"
path = "/healthz"
interval = "500ms"
timeout = "450ms"
rise = 2
fall = 2
no_healthy = "fail_closed"
"#,
        endpoints(&[(front.addr(), 1)]),
        toml_path(&ca_file),
    );
    let w = Weir::start(&cfg, &[listen]);
    // Checks are TLS connections that verify.
    wait_until("two checks over TLS", Duration::from_secs(10), || {
        front.handshakes() >= 2
    });
    assert_eq!(front.failed(), 0, "{:?}", front.errors());
    assert_eq!(get(listen, "x", "/").await.status, 200);

    let from = w.log_lines();
    up.set_healthy(false);
    w.wait_log(from, "endpoint is unhealthy", Duration::from_secs(10));
    let r = get(listen, "x", "/").await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.header("x-weir-reason"), Some("no_healthy_endpoint"));

    let from = w.log_lines();
    up.set_healthy(true);
    w.wait_log(from, "endpoint is healthy again", Duration::from_secs(10));
    assert_eq!(get(listen, "x", "/").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tcp_listener_relays_through_tls_verifying_the_endpoint_ip() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("internal ca");
    let ca_file = ca.write(dir.path(), "ca");
    let echo = TcpUpstream::echo("e", true).await.unwrap();
    // No server_name: the endpoint's address is verified, as an IP SAN.
    let (cert, key) = ca.leaf_files(dir.path(), "echo", &["127.0.0.1"]);
    let front = TlsFront::spawn(echo.addr(), server_config(&cert, &key, None).unwrap()).unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.db]
bind = "{listen}"
protocol = "tcp"
pool = "db"

[pools.db]
{}
[pools.db.tls]
ca = "{}"
"#,
        endpoints(&[(front.addr(), 1)]),
        toml_path(&ca_file),
    );
    let _w = Weir::start(&cfg, &[listen]);
    let mut s = TcpStream::connect(listen).await.unwrap();
    let mut greeting = [0u8; 2];
    s.read_exact(&mut greeting).await.unwrap();
    assert_eq!(&greeting, b"e\n");
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (mut r, mut wr) = s.into_split();
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        wr.write_all(&sent).await.unwrap();
        wr.shutdown().await.unwrap();
    });
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), r.read_to_end(&mut back))
        .await
        .expect("echo within 20 s")
        .unwrap();
    writer.await.unwrap();
    assert!(back == data, "{} bytes back of {}", back.len(), data.len());
    assert_eq!(front.failed(), 0, "{:?}", front.errors());
    // No ALPN on a tcp listener's sessions unless the pool's `alpn` says so; the IP as SNI
    // is not sent (SNI carries names only).
    wait_until(
        "the readiness probe's session too",
        Duration::from_secs(5),
        || front.handshakes() >= 1,
    );
    assert!(
        front.seen().iter().all(|s| *s == (None, None)),
        "{:?}",
        front.seen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ca_file_that_does_not_read_refuses_the_change_and_keeps_the_running_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("internal ca");
    let ca_file = ca.write(dir.path(), "ca");
    let (_up, front) = tls_backend(dir.path(), &ca, "api", &["api.internal"], None).await;
    let listen = free_addr();
    let cfg = |ca: &Path| {
        format!(
            r#"
[listeners.web]
bind = "{listen}"
pool = "api"

[pools.api]
{}
[pools.api.tls]
ca = "{}"
server_name = "api.internal"
"#,
            endpoints(&[(front.addr(), 1)]),
            toml_path(ca),
        )
    };
    let w = Weir::start(&cfg(&ca_file), &[listen]);
    assert_eq!(get(listen, "x", "/").await.status, 200);
    let outcome = w.reload(&cfg(&dir.path().join("missing.pem")));
    // Rejected as `weir check` would, at the `ca` value.
    assert!(outcome.contains("reload rejected"), "{outcome}");
    let log = w.log_text();
    assert!(
        log.contains("missing.pem") && log.contains("weir.toml:9:6: error: CA file: cannot read"),
        "{log}"
    );
    // The running settings stay, and so do their sessions: a new connection resumes.
    let mut c = client::HttpConn::connect(listen).await.unwrap();
    let r = c
        .send(
            http::Request::get("/close")
                .body(http_body_util::Full::new(bytes::Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(get(listen, "x", "/").await.status, 200);
    assert_eq!(front.handshakes(), 2);
    assert_eq!(front.resumed(), 1);
}

/// A large request body streams up through TLS while the answer streams back (full
/// duplex): what rustls holds back when the socket is full must still go out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_large_body_goes_both_ways_through_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("internal ca");
    let ca_file = ca.write(dir.path(), "ca");
    let (_up, front) = tls_backend(dir.path(), &ca, "api", &["api.internal"], None).await;
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "api"

[pools.api]
idle_timeout = "60s"
{}
[pools.api.tls]
ca = "{}"
server_name = "api.internal"
"#,
        endpoints(&[(front.addr(), 1)]),
        toml_path(&ca_file),
    );
    // Why a connection was not reused is a debug line (once seen to fail under load, cause
    // not found); the pool's idle time is a minute, so that a slow machine between the two
    // requests cannot be the reason.
    let w = Weir::start_logging(
        &cfg,
        &[listen],
        &["--threads", "2"],
        "info,weir_codec::h1::client=debug,weir_upstream::idle=debug",
    );
    let body: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    for _ in 0..2 {
        let req = http::Request::post("/echo")
            .header("host", "x")
            .body(http_body_util::Full::new(bytes::Bytes::from(body.clone())))
            .unwrap();
        let r = tokio::time::timeout(Duration::from_secs(60), client::send(listen, req))
            .await
            .expect("echoed within 60 s")
            .unwrap();
        assert_eq!(r.status, 200);
        assert!(
            r.body == body,
            "{} bytes back of {}",
            r.body.len(),
            body.len()
        );
    }
    assert_eq!(front.handshakes(), 1, "weir's log:\n{}", w.log_text());
}

/// A pool's CA, certificate and key files are read again when they change, with no reload
/// (a rotated CA, a renewed short-lived client certificate); a file that no longer reads
/// keeps the settings in use.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn changed_tls_files_of_a_pool_are_read_again() {
    use crate::tls_kit::{metric, wait_metric};
    let dir = tempfile::tempdir().unwrap();
    let (ca, clients, _up, front) = mtls_backend(dir.path()).await;
    // To begin with, weir trusts another CA and holds a certificate the backend refuses.
    let ca_file = Ca::new("someone else").write(dir.path(), "pool-ca");
    let (cert, key) = Ca::new("outsiders").leaf_files(dir.path(), "pool-client", &["weir"]);
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "api"

[pools.api]
{eps}
max_requests_per_conn = 1
[pools.api.retry]
attempts = 0
[pools.api.tls]
ca = "{ca}"
server_name = "api.internal"
cert = "{cert}"
key = "{key}"
"#,
        eps = endpoints(&[(front.addr(), 1)]),
        ca = toml_path(&ca_file),
        cert = toml_path(&cert),
        key = toml_path(&key),
    );
    let w = Weir::start(&cfg, &[listen]);
    let from = w.log_lines();
    assert_eq!(get(listen, "x", "/").await.status, 502);
    let line = w.wait_log(from, "request failed", Duration::from_secs(5));
    assert!(line.contains("UnknownIssuer"), "{line}");
    let reloads = |result: &str| {
        format!("weir_upstream_tls_reloads_total{{pool=\"api\",result=\"{result}\"}}")
    };

    // The CA rotated: weir now trusts the backend, which still refuses weir's certificate.
    std::fs::copy(ca.write(dir.path(), "new-ca"), &ca_file).unwrap();
    assert!(wait_metric(w.admin, &reloads("ok"), 1.0).await >= 1.0);
    let from = w.log_lines();
    assert_eq!(get(listen, "x", "/").await.status, 502);
    let line = w.wait_log(from, "request failed", Duration::from_secs(5));
    assert!(!line.contains("UnknownIssuer"), "{line}");

    // The client certificate renewed (key first, then certificate, as a renewal may write
    // them): every request from then on is let in.
    let (new_cert, new_key) = clients.leaf_files(dir.path(), "renewed", &["weir"]);
    std::fs::copy(&new_key, &key).unwrap();
    std::fs::copy(&new_cert, &cert).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = get(listen, "x", "/").await;
        if r.status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the renewed certificate not used"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A CA file that no longer reads: the settings in use stay, new connections still work.
    let failed = metric(w.admin, &reloads("failed")).await;
    let from = w.log_lines();
    std::fs::write(&ca_file, "not a certificate\n").unwrap();
    assert!(wait_metric(w.admin, &reloads("failed"), failed + 1.0).await >= failed + 1.0);
    let line = w.wait_log(
        from,
        "pool TLS files not read again",
        Duration::from_secs(5),
    );
    assert!(line.contains("api"), "{line}");
    for _ in 0..3 {
        let r = get(listen, "x", "/").await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
}
