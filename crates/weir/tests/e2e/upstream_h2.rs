//! HTTP/2 to upstreams: a pool's `protocol = "h2c"` (cleartext, prior
//! knowledge) or `"h2"` (over TLS, ALPN h2). HTTP/1.1 and HTTP/2 clients alike reach such
//! pools; streams share connections up to `max_streams_per_conn`; health checks speak the
//! pool's protocol; a stream the backend refuses unprocessed (REFUSED_STREAM) is retried
//! whatever its method. Backends: the testkit's hyper server in h2c mode, a TLS front with
//! ALPN h2, and a bare `h2` server that refuses streams.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Request;
use tokio::net::{TcpListener, TcpStream};
use weir_testkit::certs::Ca;
use weir_testkit::tls::{server_config, TlsFront};
use weir_testkit::{HttpUpstream, Latency};

use crate::common::{free_addr, one_pool, Weir};
use crate::tls_kit::{metric, wait_metric};

pub(crate) fn curl(args: &[&str], url: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", "-D", "-"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_and_h2_clients_reach_an_h2c_pool() {
    let up = HttpUpstream::builder("a").h2c().spawn().await.unwrap();
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{}\" }}]", up.addr());
    let _w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);

    // HTTP/1.1 in, HTTP/2 out: the Host becomes :authority, the backend sees HTTP/2.
    let text = curl(
        &[
            "-H",
            "Host: shop.test",
            "-H",
            "Connection: keep-alive, x-drop",
        ],
        &format!("http://{listen}/headers?q=1"),
    );
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains(r#""version":"HTTP/2.0""#), "{text}");
    assert!(
        text.contains(r#""uri":"http://shop.test/headers?q=1""#),
        "{text}"
    );
    assert!(
        !text.contains(r#"["connection""#) && !text.contains(r#"["host""#),
        "no HTTP/1 connection fields on HTTP/2, Host is :authority: {text}"
    );
    assert!(
        text.contains(r#"["forwarded","for=127.0.0.1;proto=http"]"#),
        "{text}"
    );

    // A 1 MiB upload and its echo, both ways through the stream's flow control.
    let body = "x".repeat(1 << 20);
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "20", "--data-binary", "@-"])
        .arg(format!("http://{listen}/echo"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(body.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.stdout.len(), body.len());
    assert!(out.stdout == body.as_bytes());

    // HTTP/2 in (h2c prior knowledge), HTTP/2 out.
    let text = curl(
        &["--http2-prior-knowledge"],
        &format!("http://{listen}/headers"),
    );
    assert!(text.starts_with("HTTP/2 200"), "{text}");
    assert!(text.contains(r#""version":"HTTP/2.0""#), "{text}");
    // The forwarding fields weir adds, after the request's own, over HTTP/2 too.
    for field in [
        r#"["x-forwarded-for","127.0.0.1"]"#,
        r#"["forwarded","for=127.0.0.1;proto=http"]"#,
        r#"["x-forwarded-proto","http"]"#,
        &format!(r#"["x-forwarded-host","{listen}"]"#),
    ] {
        assert!(text.contains(field), "{field} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_share_connections_up_to_max_streams_per_conn() {
    let up = HttpUpstream::builder("a").h2c().spawn().await.unwrap();
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{}\" }}]", up.addr());
    let extra = "protocol = \"h2c\"\nmax_streams_per_conn = 4\nidle_timeout = \"60s\"";
    let w = Weir::start(&one_pool(listen, &eps, extra), &[listen]);

    // One after another: one connection carries them all.
    for _ in 0..10 {
        let r = weir_testkit::client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 200);
    }
    assert_eq!(
        up.connections(),
        1,
        "sequential requests share one connection"
    );
    // It counts as an open upstream connection, and as idle once its streams ended (the
    // last one ends as its response body is dropped: wait for that).
    let upstream = |state: &str| format!("weir_connections{{side=\"upstream\",state=\"{state}\"}}");
    assert_eq!(metric(w.admin, &upstream("open")).await, 1.0);
    assert_eq!(wait_metric(w.admin, &upstream("idle"), 1.0).await, 1.0);

    // 16 at once, each held 3 s by the backend: at most 4 streams on a connection, so
    // however many were in flight together, at least a quarter as many connections.
    up.reset_stats();
    let calls: Vec<_> = (0..16)
        .map(|_| tokio::spawn(weir_testkit::client::get(listen, "/?latency_ms=3000")))
        .collect();
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap().status, 200);
    }
    // Connections still open (weir keeps them 60 s), the first one included.
    let (conns, together) = (up.open_connections(), up.max_in_flight());
    assert!(
        together > 4 && conns as f64 >= together as f64 / 4.0,
        "{conns} connections for {together} streams in flight at 4 per connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_pool_speaks_http2_over_tls_and_is_health_checked_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ca");
    let ca_file = ca.write(dir.path(), "ca");
    let (cert, key) = ca.leaf_files(dir.path(), "api", &["api.internal"]);
    let up = HttpUpstream::builder("a").h2c().spawn().await.unwrap();
    let mut cfg = rustls::ServerConfig::clone(&server_config(&cert, &key, None).unwrap());
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let front = TlsFront::spawn(up.addr(), Arc::new(cfg)).unwrap();
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{}\" }}]", front.addr());
    let extra = format!(
        "protocol = \"h2\"\nhealth = {{ check = \"http\", interval = \"300ms\", timeout = \"250ms\" }}\n\
         [pools.app.tls]\nca = \"{}\"\nserver_name = \"api.internal\"",
        ca_file.display()
    );
    let _w = Weir::start(&one_pool(listen, &eps, &extra), &[listen]);
    let text = curl(&[], &format!("http://{listen}/headers"));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains(r#""version":"HTTP/2.0""#), "{text}");
    assert!(
        text.contains(r#""uri":"https://"#),
        ":scheme is https: {text}"
    );
    // The checks went over the same TLS and HTTP/2.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while up.health_checks() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up.health_checks() >= 2, "{} checks", up.health_checks());
    let checks: Vec<_> = up
        .log()
        .into_iter()
        .filter(|r| r.path == "/healthz")
        .collect();
    assert!(checks.iter().all(|r| r.version == http::Version::HTTP_2));
}

/// A bare HTTP/2 server that refuses the first stream it gets with REFUSED_STREAM (as a
/// server at its limit may) and answers the others 200.
async fn refusing_server() -> (SocketAddr, Arc<AtomicU64>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let answered = Arc::new(AtomicU64::new(0));
    let counted = answered.clone();
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn(async move {
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            tokio::spawn(serve_refusing(tcp, counted.clone(), refused.clone()));
        }
    });
    (addr, answered)
}

async fn serve_refusing(
    tcp: TcpStream,
    answered: Arc<AtomicU64>,
    refused: Arc<std::sync::atomic::AtomicBool>,
) {
    let Ok(mut conn) = h2::server::handshake(tcp).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        if !refused.swap(true, Relaxed) {
            respond.send_reset(h2::Reason::REFUSED_STREAM);
            continue;
        }
        let counted = answered.clone();
        tokio::spawn(async move {
            let mut body = req.into_body();
            while let Some(Ok(d)) = body.data().await {
                let _ = body.flow_control().release_capacity(d.len());
            }
            counted.fetch_add(1, Relaxed);
            let resp = http::Response::builder().status(200).body(()).unwrap();
            let mut send = respond.send_response(resp, false).unwrap();
            let _ = send.send_data(Bytes::from_static(b"done\n"), true);
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_stream_is_retried_even_for_a_post() {
    let (addr, answered) = refusing_server().await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    let w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);
    let req = Request::post(format!("http://{listen}/orders"))
        .body(http_body_util::Full::new(Bytes::from_static(
            b"{\"qty\":1}",
        )))
        .unwrap();
    let mut conn = weir_testkit::client::HttpConn::connect(listen)
        .await
        .unwrap();
    let r = conn.send(req).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "done\n");
    // Answered once: the refused try never reached the application.
    assert_eq!(answered.load(Relaxed), 1);
    let admin = w.admin;
    let retried = metric(
        admin,
        "weir_retries_total{pool=\"app\",reason=\"upstream_reset\"}",
    )
    .await;
    assert_eq!(retried, 1.0);
}

/// An h2c backend (the `h2` crate's server) that hands each request to `serve`, on a task of
/// its own; counts the connections it accepted.
async fn h2_backend<F, Fut>(serve: F) -> (SocketAddr, Arc<AtomicU64>)
where
    F: Fn(http::Request<h2::RecvStream>, h2::server::SendResponse<Bytes>) -> Fut
        + Clone
        + Send
        + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let conns = Arc::new(AtomicU64::new(0));
    let counted = conns.clone();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = l.accept().await.unwrap();
            counted.fetch_add(1, Relaxed);
            let serve = serve.clone();
            tokio::spawn(async move {
                let Ok(mut conn) = h2::server::handshake(tcp).await else {
                    return;
                };
                while let Some(Ok((req, respond))) = conn.accept().await {
                    tokio::spawn(serve.clone()(req, respond));
                }
            });
        }
    });
    (addr, conns)
}

/// An h2 client connection (the `h2` crate's) to weir's h2c listener.
async fn h2_client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// Sends `total` bytes on `send` as the windows allow, END_STREAM with the last.
async fn upload(mut send: h2::SendStream<Bytes>, total: usize) -> Result<(), String> {
    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
    let mut left = total;
    while left > 0 {
        send.reserve_capacity(left.min(chunk.len()));
        let room = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(room) => room.map_err(|e| e.to_string())?,
            None => return Err(format!("the stream closed with {left} bytes to go")),
        };
        let n = room.min(left);
        left -= n;
        send.send_data(chunk.slice(..n), left == 0)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// A whole response body, its window given back as it is read.
async fn read_all(mut body: h2::RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

/// A POST of `size` bytes on `client`, uploaded as the answer comes: (status, body), once
/// both the answer and the upload are done.
async fn post(client: &h2::client::SendRequest<Bytes>, url: &str, size: usize) -> (u16, Vec<u8>) {
    let mut c = client.clone().ready().await.unwrap();
    let req = Request::post(url).body(()).unwrap();
    let (resp, send) = c.send_request(req, false).unwrap();
    let sending = tokio::spawn(upload(send, size));
    let resp = resp.await.unwrap();
    let status = resp.status().as_u16();
    let body = read_all(resp.into_body()).await.unwrap();
    sending.await.unwrap().unwrap();
    (status, body)
}

/// An HTTP/2 client still uploading after the whole answer came (RFC 9113 §8.1: a server may
/// answer early; weir resets with NO_ERROR only past 16 MiB or 5 s, see `http2.rs`) gets to finish
/// its upload: weir gives back to its windows what it sends, taken or not. Here the early
/// answer is an h2 backend's, which resets its side of the stream unread; weir frees its
/// upstream stream as it takes the answer's end, and both connections serve on. (Debian 12's
/// curl, 7.88, cannot be the client: it hangs at the end of such an upload now and then,
/// whatever the server does; nghttp2's own client and the `h2` crate's finish.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2_client_finishes_its_upload_after_a_backends_early_answer() {
    let (addr, conns) = h2_backend(|req, mut respond| async move {
        let resp = http::Response::builder().status(200).body(()).unwrap();
        let mut send = respond.send_response(resp, false).unwrap();
        let _ = send.send_data(Bytes::from_static(b"early\n"), true);
        // Dropped only after the answer: unread, its stream is reset.
        drop(req);
    })
    .await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    let _w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);
    let client = h2_client(listen).await;
    // Larger than the replay buffer, so it streams, and than every window; the second
    // upload after the first, on the same connection, finds its windows whole again.
    for path in ["/upload", "/again"] {
        let done = tokio::time::timeout(
            Duration::from_secs(30),
            post(&client, &format!("http://{listen}{path}"), 4 << 20),
        )
        .await;
        let (status, body) = done.unwrap_or_else(|_| panic!("{path}: upload stalled"));
        assert_eq!(status, 200, "{path}");
        assert_eq!(body, b"early\n", "{path}");
    }
    assert_eq!(
        conns.load(Relaxed),
        1,
        "one upstream connection served both"
    );
}

/// A client that cancels downloads it did not read (its window full, weir's upstream stream
/// holding what came behind it) does not use up the upstream connection they shared: weir
/// gives the bytes nobody took back to that connection's window (1 MiB, so four or five
/// such cancels stalled every later stream on it), and a whole download follows on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_downloads_give_their_bytes_back_to_the_upstream_connection() {
    const SIZE: usize = 1 << 20;
    let (addr, conns) = h2_backend(|_req, mut respond| async move {
        let resp = http::Response::builder().status(200).body(()).unwrap();
        let Ok(send) = respond.send_response(resp, false) else {
            return;
        };
        // Cancelled downloads end in an error here: weir reset the stream.
        let _ = upload(send, SIZE).await;
    })
    .await;
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{addr}\" }}]");
    let _w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);
    let client = h2_client(listen).await;
    for n in 0..8 {
        let mut c = client.clone().ready().await.unwrap();
        let req = Request::get(format!("http://{listen}/big/{n}"))
            .body(())
            .unwrap();
        let (resp, _) = c.send_request(req, true).unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(20), resp)
            .await
            .expect("an answer")
            .unwrap();
        let mut body = resp.into_body();
        // The client's stream window (64 KiB) fills; nothing is given back.
        let mut got = 0;
        while got < 65_535 {
            let chunk = tokio::time::timeout(Duration::from_secs(20), body.data())
                .await
                .expect("data")
                .unwrap()
                .unwrap();
            got += chunk.len();
        }
        // Dropped unread: the h2 client resets the stream (CANCEL).
        drop(body);
    }
    let mut c = client.clone().ready().await.unwrap();
    let req = Request::get(format!("http://{listen}/whole"))
        .body(())
        .unwrap();
    let (resp, _) = c.send_request(req, true).unwrap();
    let whole = tokio::time::timeout(Duration::from_secs(30), async {
        read_all(resp.await.unwrap().into_body()).await.unwrap()
    })
    .await
    .expect("the download after the cancelled ones stalled");
    assert_eq!(whole.len(), SIZE);
    assert_eq!(conns.load(Relaxed), 1, "all on one upstream connection");
}

#[test]
fn weir_check_names_protocol_mistakes_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    let cases = [
        (
            "[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\nprotocol = \"h2\"\n",
            "weir.toml:3:12",
            "is HTTP/2 over TLS: add [pools.app.tls]",
        ),
        (
            "[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\nprotocol = \"http2\"\n",
            "weir.toml:3:12",
            "invalid protocol \"http2\"",
        ),
        (
            "[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\nhealth = { check = \"grpc\" }\n",
            "weir.toml:3:20",
            "check = \"grpc\" speaks HTTP/2: set protocol = \"h2c\"",
        ),
        (
            "[pools.app]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\nretry = { on_grpc_status = [0] }\n",
            "weir.toml:3:29",
            "on_grpc_status may only list gRPC error codes (1-16), found 0",
        ),
    ];
    for (toml, at, says) in cases {
        std::fs::write(
            &path,
            format!("[listeners.web]\nbind = \"127.0.0.1:0\"\npool = \"app\"\n{toml}"),
        )
        .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
            .arg("check")
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{text}");
        let at = at.replace("weir.toml:3:", "weir.toml:6:");
        assert!(text.contains(&at), "{at} in {text}");
        assert!(text.contains(says), "{says} in {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_going_away_lets_its_streams_finish_and_new_ones_go_elsewhere() {
    let slow = Latency::Fixed(Duration::from_millis(1000));
    let a = HttpUpstream::builder("a")
        .h2c()
        .latency(slow)
        .spawn()
        .await
        .unwrap();
    let b = HttpUpstream::builder("b")
        .h2c()
        .latency(slow)
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let eps = format!(
        "endpoints = [{{ addr = \"{}\" }}, {{ addr = \"{}\" }}]",
        a.addr(),
        b.addr()
    );
    let _w = Weir::start(&one_pool(listen, &eps, "protocol = \"h2c\""), &[listen]);
    // The first request is held by whichever backend got it.
    let first = tokio::spawn(weir_testkit::client::get(listen, "/"));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while a.in_flight() + b.in_flight() == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (busy, other) = match a.in_flight() {
        1 => (a, b),
        _ => (b, a),
    };
    assert_eq!(busy.in_flight(), 1);
    let (busy_name, other_name) = (format!("{}\n", busy.name()), format!("{}\n", other.name()));
    // It restarts gracefully: GOAWAY on its connection, the stream in progress finishes.
    let going = tokio::spawn(async move {
        busy.shutdown_gracefully().await;
        busy
    });
    let r = first.await.unwrap().unwrap();
    assert_eq!((r.status.as_u16(), r.text()), (200, busy_name));
    let _gone = going.await.unwrap();
    // New requests, POSTs included, find the other one (the first refuses connections).
    for _ in 0..2 {
        let req = Request::post(format!("http://{listen}/"))
            .body(http_body_util::Full::new(Bytes::from_static(b"x")))
            .unwrap();
        let mut conn = weir_testkit::client::HttpConn::connect(listen)
            .await
            .unwrap();
        let r = conn.send(req).await.unwrap();
        assert_eq!((r.status.as_u16(), r.text()), (200, other_name.clone()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_conn_caps_streams_and_the_rest_queue() {
    let up = HttpUpstream::builder("a")
        .h2c()
        .latency(Latency::Fixed(Duration::from_millis(200)))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{}\" }}]", up.addr());
    let extra = "protocol = \"h2c\"\nmax_conn = 2\nmax_queue = 20\nqueue_timeout = \"30s\"";
    let _w = Weir::start(&one_pool(listen, &eps, extra), &[listen]);
    // Eight at once: two streams at the backend at a time, however many would fit on
    // one HTTP/2 connection; the others wait in weir's queue and all are answered.
    let calls: Vec<_> = (0..8)
        .map(|_| tokio::spawn(weir_testkit::client::get(listen, "/")))
        .collect();
    for c in calls {
        assert_eq!(c.await.unwrap().unwrap().status, 200);
    }
    assert!(up.max_in_flight() <= 2, "{}", up.max_in_flight());
    assert_eq!(up.requests(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_requests_per_conn_retires_a_shared_connection() {
    let up = HttpUpstream::builder("a").h2c().spawn().await.unwrap();
    let listen = free_addr();
    let eps = format!("endpoints = [{{ addr = \"{}\" }}]", up.addr());
    let extra = "protocol = \"h2c\"\nmax_requests_per_conn = 3";
    let _w = Weir::start(&one_pool(listen, &eps, extra), &[listen]);
    for _ in 0..9 {
        let r = weir_testkit::client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 200);
    }
    // Three streams each: the log's connection numbers say which carried what.
    let conns: Vec<u64> = up.log().iter().map(|r| r.conn_id).collect();
    assert_eq!(conns, [0, 0, 0, 1, 1, 1, 2, 2, 2], "{conns:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_endpoints_streams_finish_on_its_shared_connection() {
    let slow = Latency::Fixed(Duration::from_millis(1500));
    let a = HttpUpstream::builder("a")
        .h2c()
        .latency(slow)
        .spawn()
        .await
        .unwrap();
    let b = HttpUpstream::builder("b").h2c().spawn().await.unwrap();
    let listen = free_addr();
    let cfg = |eps: &str| {
        format!(
            "[global]\ndrain_grace = \"20s\"\n{}",
            one_pool(listen, eps, "protocol = \"h2c\"")
        )
    };
    let w = Weir::start(
        &cfg(&format!("endpoints = [{{ addr = \"{}\" }}]", a.addr())),
        &[listen],
    );
    // Three streams in flight on a's connection.
    let calls: Vec<_> = (0..3)
        .map(|_| tokio::spawn(weir_testkit::client::get(listen, "/")))
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while a.in_flight() < 3 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(a.in_flight(), 3);
    // a is replaced by b: its streams finish (drain), new requests go to b.
    w.reload(&cfg(&format!(
        "endpoints = [{{ addr = \"{}\" }}]",
        b.addr()
    )));
    let r = weir_testkit::client::get(listen, "/").await.unwrap();
    assert_eq!(r.text(), "b\n");
    for c in calls {
        let r = c.await.unwrap().unwrap();
        assert_eq!((r.status.as_u16(), r.text()), (200, "a\n".to_string()));
    }
}

#[test]
fn weir_check_warns_of_protocol_settings_that_do_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weir.toml");
    std::fs::write(
        &path,
        "[listeners.db]\nbind = \"127.0.0.1:0\"\nprotocol = \"tcp\"\npool = \"app\"\n\
         [pools.app]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\nprotocol = \"h2\"\n\
         [pools.app.tls]\nalpn = [\"http/1.1\"]\n\
         [pools.web]\nendpoints = [{ addr = \"127.0.0.1:9\" }]\nmax_streams_per_conn = 8\n\
         health = { check = \"http\", service = \"x\" }\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    // Warnings only: the file is accepted.
    assert!(out.status.success(), "{text}");
    for (at, says) in [
        ("weir.toml:4:8", "a tcp listener does not use"),
        ("weir.toml:9:8", "does not offer \"h2\""),
        ("weir.toml:12:1", "max_streams_per_conn has no effect"),
        (
            "weir.toml:13:28",
            "service has no effect unless check = \"grpc\"",
        ),
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(at))
            .unwrap_or_else(|| panic!("{at} in {text}"));
        assert!(line.contains("warning") && line.contains(says), "{line}");
    }
}
