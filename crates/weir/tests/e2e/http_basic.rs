//! Forwarding basics: headers, weighted round robin, keep-alive both ways.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use weir_testkit::client::{self, HttpConn};
use weir_testkit::HttpUpstream;

use crate::common::{endpoints, fixed_backend, free_addr, one_pool, raw_exchange, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forwards_and_rewrites_headers() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let req = Request::get("/headers?q=1")
        .header("host", "shop.example.com:8080")
        .header("connection", "keep-alive, x-hop")
        .header("x-hop", "secret")
        // Every Connection line counts, not only the first.
        .header("connection", "x-hop2")
        .header("x-hop2", "secret")
        .header("keep-alive", "timeout=5")
        .header("x-forwarded-for", "10.1.2.3")
        .header("x-custom", "kept")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let resp = client::send(listen, req).await.unwrap();
    assert_eq!(resp.status, 200);
    let seen = resp.text();
    assert!(seen.contains(r#""uri":"/headers?q=1""#), "{seen}");
    // The listener trusts no proxy: the client's own X-Forwarded-For is replaced.
    assert!(
        seen.contains(r#"["x-forwarded-for","127.0.0.1"]"#),
        "{seen}"
    );
    assert!(seen.contains(r#"["x-forwarded-proto","http"]"#), "{seen}");
    assert!(
        seen.contains(r#"["x-forwarded-host","shop.example.com:8080"]"#),
        "{seen}"
    );
    assert!(
        seen.contains(r#"["host","shop.example.com:8080"]"#),
        "{seen}"
    );
    assert!(seen.contains(r#"["x-custom","kept"]"#), "{seen}");
    assert!(
        !seen.contains("x-hop"),
        "hop-by-hop header forwarded: {seen}"
    );
    assert!(
        !seen.contains("keep-alive"),
        "hop-by-hop header forwarded: {seen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn weights_3_to_1_split_300_requests_225_to_75() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 3), (b.addr(), 1)]);
    let _w = Weir::start(&one_pool(listen, &eps, ""), &[listen]);

    let mut conn = HttpConn::connect(listen).await.unwrap();
    for _ in 0..300 {
        assert_eq!(conn.get("/").await.unwrap().status, 200);
    }
    assert_eq!((a.requests(), b.requests()), (225, 75));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn weights_1_1_8_interleave_smoothly() {
    let ups = [
        HttpUpstream::spawn("a").await.unwrap(),
        HttpUpstream::spawn("b").await.unwrap(),
        HttpUpstream::spawn("c").await.unwrap(),
    ];
    let listen = free_addr();
    let eps = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1), (ups[2].addr(), 8)]);
    let _w = Weir::start(&one_pool(listen, &eps, ""), &[listen]);

    let mut conn = HttpConn::connect(listen).await.unwrap();
    let mut order = String::new();
    for _ in 0..10 {
        let r = conn.get("/").await.unwrap();
        order.push_str(r.header("x-upstream").unwrap());
    }
    assert_eq!(order.matches('a').count(), 1, "{order}");
    assert_eq!(order.matches('b').count(), 1, "{order}");
    // Smooth: the light endpoints are spread out, not served back to back.
    assert!(!order.contains("ab") && !order.contains("ba"), "{order}");
    assert!(!order.contains("ccccc"), "{order}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn head_204_and_304_have_no_body() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut conn = HttpConn::connect(listen).await.unwrap();
    let head = Request::head("/").body(Full::new(Bytes::new())).unwrap();
    let r = conn.send(head).await.unwrap();
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    assert_eq!(r.header("content-length"), Some("2"));
    for code in [204, 304] {
        let r = conn.get(&format!("/status/{code}")).await.unwrap();
        assert_eq!(r.status.as_u16(), code);
        assert!(r.body.is_empty());
    }
    // The connection survived all of them.
    assert_eq!(conn.get("/").await.unwrap().text(), "a\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keeps_alive_on_both_sides() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut conn = HttpConn::connect(listen).await.unwrap();
    for _ in 0..50 {
        assert_eq!(conn.get("/").await.unwrap().status, 200);
    }
    assert!(!conn.is_closed());
    assert_eq!(up.requests(), 50);
    assert_eq!(up.connections(), 1, "upstream connection was not reused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn honours_upstream_keep_alive_timeout_header() {
    // The backend announces `Keep-Alive: timeout=1`: weir must not reuse the
    // connection after 3/4 of a second idle.
    let up = HttpUpstream::builder("a")
        .keep_alive_timeout_header(1)
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut conn = HttpConn::connect(listen).await.unwrap();
    conn.get("/").await.unwrap();
    conn.get("/").await.unwrap();
    assert_eq!(up.connections(), 1);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(conn.get("/").await.unwrap().status, 200);
    assert_eq!(
        up.connections(),
        2,
        "reused a connection past the announced timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn never_reuses_a_connection_the_backend_closed() {
    // The backend silently closes keep-alive connections idle for 100 ms.
    let up = HttpUpstream::builder("a")
        .idle_close(Duration::from_millis(100))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );

    let mut conn = HttpConn::connect(listen).await.unwrap();
    for i in 0..10 {
        let r = conn.get("/").await.unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert_eq!(up.requests(), 10);
}

/// Connections accepted, request heads read.
type Counts = std::sync::Arc<(
    std::sync::atomic::AtomicUsize,
    std::sync::atomic::AtomicUsize,
)>;

/// A backend that answers every request head it reads with `answer`; after one that says
/// `Connection: close` it keeps reading (and counting) request heads but never answers again.
async fn scripted_backend(answer: &'static [u8]) -> (std::net::SocketAddr, Counts) {
    use std::sync::atomic::Ordering::SeqCst;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let counts = Counts::default();
    let c = counts.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let c = c.clone();
            c.0.fetch_add(1, SeqCst);
            tokio::spawn(async move {
                let closes = answer
                    .to_ascii_lowercase()
                    .windows(17)
                    .any(|w| w == b"connection: close");
                let (mut buf, mut b, mut answered) = (Vec::new(), [0u8; 4096], false);
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        c.1.fetch_add(1, SeqCst);
                        if !(closes && answered) {
                            let _ = s.write_all(answer).await;
                            answered = true;
                        }
                    }
                    match s.read(&mut b).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&b[..n]),
                    }
                }
            });
        }
    });
    (addr, counts)
}

/// The parsers read a `Connection` line that says only close or keep-alive and leave it out
/// of the head's map: what it says must still decide whether a connection is reused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upstreams_connection_line_decides_reuse() {
    use std::sync::atomic::Ordering::SeqCst;
    // `close` (and the socket left open): never reused, so every request reaches the backend
    // once, each on a connection of its own; a reuse would send a head that is never answered.
    let (up, counts) =
        scripted_backend(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
            .await;
    let listen = free_addr();
    let _w = Weir::start(
        &one_pool(listen, &endpoints(&[(up, 1)]), r#"response_timeout = "3s""#),
        &[listen],
    );
    let mut conn = HttpConn::connect(listen).await.unwrap();
    for i in 0..3 {
        let r = conn.get("/").await.unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
        // The upstream's hop: the client's connection stays open.
        assert!(!r.headers.contains_key("connection"), "{:?}", r.headers);
    }
    assert_eq!(counts.1.load(SeqCst), 3, "request heads the backend read");
    assert_eq!(counts.0.load(SeqCst), 3, "connections");

    // HTTP/1.0 with `keep-alive`: kept, which only that line says.
    let (up, counts) = scripted_backend(
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    )
    .await;
    let listen = free_addr();
    let _w = Weir::start(&one_pool(listen, &endpoints(&[(up, 1)]), ""), &[listen]);
    for i in 0..3 {
        // A client connection each, so that only the upstream side can be reused.
        let mut conn = HttpConn::connect(listen).await.unwrap();
        let r = conn.get("/").await.unwrap();
        assert_eq!(r.status, 200, "request {i}: {}", r.text());
    }
    assert_eq!(counts.1.load(SeqCst), 3);
    assert_eq!(counts.0.load(SeqCst), 1, "one connection, reused");
}

/// A proxy answers in its own HTTP version (RFC 9110 §6.2), whatever the upstream's: an
/// HTTP/1.0 answer relayed as `HTTP/1.0` to an HTTP/1.1 client, without `keep-alive`, tells
/// the client the connection ends (and one weir frames with chunks would break HTTP/1.0).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_http10_upstream_is_answered_in_weirs_own_version() {
    let (up, _) = scripted_backend(
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    )
    .await;
    let listen = free_addr();
    let _w = Weir::start(&one_pool(listen, &endpoints(&[(up, 1)]), ""), &[listen]);
    // Two requests on one connection, the second closing it.
    let got = raw_exchange(
        listen,
        b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    // (The first body ends without a line break: the second head follows it on its line.)
    let status: Vec<&str> = got
        .match_indices("HTTP/1.")
        .map(|(i, _)| got[i..].lines().next().unwrap())
        .collect();
    assert_eq!(status, ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "{got}");
    // An HTTP/1.0 client still gets HTTP/1.0.
    let got = raw_exchange(listen, b"GET / HTTP/1.0\r\n\r\n", Duration::from_secs(10)).await;
    assert!(got.starts_with("HTTP/1.0 200 OK\r\n"), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pool_idle_timeout_retires_connections() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = one_pool(
        listen,
        &endpoints(&[(up.addr(), 1)]),
        r#"idle_timeout = "300ms""#,
    );
    let _w = Weir::start(&cfg, &[listen]);

    let mut conn = HttpConn::connect(listen).await.unwrap();
    conn.get("/").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    conn.get("/").await.unwrap();
    assert_eq!(up.connections(), 1);
    tokio::time::sleep(Duration::from_millis(500)).await;
    conn.get("/").await.unwrap();
    assert_eq!(up.connections(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn upstream_connections_retire_after_max_requests_and_max_age() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = one_pool(
        listen,
        &endpoints(&[(up.addr(), 1)]),
        "max_requests_per_conn = 3",
    );
    let _w = Weir::start(&cfg, &[listen]);
    let mut conn = HttpConn::connect(listen).await.unwrap();
    for _ in 0..9 {
        assert_eq!(conn.get("/").await.unwrap().status, 200);
    }
    assert_eq!(up.connections(), 3, "3 requests per upstream connection");

    let aged = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let cfg = one_pool(
        listen,
        &endpoints(&[(aged.addr(), 1)]),
        "max_conn_age = \"300ms\"",
    );
    let _w2 = Weir::start(&cfg, &[listen]);
    let mut conn = HttpConn::connect(listen).await.unwrap();
    conn.get("/").await.unwrap();
    conn.get("/").await.unwrap();
    assert_eq!(aged.connections(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    conn.get("/").await.unwrap();
    conn.get("/").await.unwrap();
    assert_eq!(
        aged.connections(),
        2,
        "a connection older than max_conn_age was reused"
    );
}

/// A backend's own reason phrase reaches an HTTP/1.1 client as the backend wrote it (as
/// hyper's server passed it on); the status's usual phrase is weir's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backends_own_reason_phrase_reaches_the_client() {
    let answer =
        |status| format!("HTTP/1.1 {status}\r\ncontent-length: 1\r\nconnection: close\r\n\r\n!");
    let custom_up = fixed_backend(answer("418 Kein Kaffee").leak()).await;
    let usual_up = fixed_backend(answer("418 I'm a teapot").leak()).await;
    let (custom, usual) = (free_addr(), free_addr());
    let cfg = format!(
        "[listeners.custom]\nbind = \"{custom}\"\npool = \"custom\"\n\n\
         [listeners.usual]\nbind = \"{usual}\"\npool = \"usual\"\n\n\
         [pools.custom]\n{}\n\n[pools.usual]\n{}\n",
        endpoints(&[(custom_up, 1)]),
        endpoints(&[(usual_up, 1)]),
    );
    let _w = Weir::start(&cfg, &[custom, usual]);
    let ask = b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
    let got = raw_exchange(custom, ask, Duration::from_secs(30)).await;
    assert!(got.starts_with("HTTP/1.1 418 Kein Kaffee\r\n"), "{got:?}");
    let got = raw_exchange(usual, ask, Duration::from_secs(30)).await;
    assert!(got.starts_with("HTTP/1.1 418 I'm a teapot\r\n"), "{got:?}");
}
