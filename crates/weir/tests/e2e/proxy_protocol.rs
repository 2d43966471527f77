//! The PROXY protocol through the real binary: headers received on http, https and tcp
//! listeners (written by hand here, and by curl's `--haproxy-protocol`), refusals closed
//! and counted, and `send_proxy` on tcp and http pools (to backends that record what they
//! got) and their health checks.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_testkit::certs::Ca;
use weir_testkit::HttpUpstream;

use crate::client_addr::{get, raw_from, seen_xff};
use crate::common::{free_addr, Weir};
use crate::tls_kit::{curl, wait_metric};

/// A v2 PROXY header from `src` to `dst` (same family), by hand; `None`: the LOCAL command.
pub fn v2(addrs: Option<(SocketAddr, SocketAddr)>) -> Vec<u8> {
    let mut h = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    let Some((src, dst)) = addrs else {
        h.extend_from_slice(&[0x20, 0x00, 0, 0]);
        return h;
    };
    let mut body = Vec::new();
    let fam = match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            body.extend_from_slice(&s.ip().octets());
            body.extend_from_slice(&d.ip().octets());
            0x11
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            body.extend_from_slice(&s.ip().octets());
            body.extend_from_slice(&d.ip().octets());
            0x21
        }
        _ => panic!("one family"),
    };
    body.extend_from_slice(&src.port().to_be_bytes());
    body.extend_from_slice(&dst.port().to_be_bytes());
    // A NOOP TLV: kept within the header, never taken for request bytes.
    body.extend_from_slice(&[0x04, 0, 3, b'x', b'y', b'z']);
    h.extend_from_slice(&[0x21, fam]);
    h.extend_from_slice(&(body.len() as u16).to_be_bytes());
    h.extend_from_slice(&body);
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_on_an_http_listener_name_the_client() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
proxy_protocol = true
trusted_proxies = ["127.0.0.1"]
header_timeout = "1s"
access_log = "{}"

[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        log.display(),
        up.addr()
    );
    let w = Weir::start(&cfg, &[listen]);

    // v1: the header's source is the client; what the client claims is replaced by it.
    let mut req = b"PROXY TCP4 203.0.113.7 127.0.0.1 4242 80\r\n".to_vec();
    req.extend(get("/headers", "X-Forwarded-For: 6.6.6.6\r\n"));
    let r = raw_from("127.0.0.1", listen, &req).await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert_eq!(seen_xff(&r), "203.0.113.7");
    // v2 with IPv6 addresses and a TLV.
    let src: SocketAddr = "[2001:db8::9]:5555".parse().unwrap();
    let mut req = v2(Some((src, "[2001:db8::1]:443".parse().unwrap())));
    req.extend(get("/headers", ""));
    let r = raw_from("127.0.0.1", listen, &req).await;
    assert_eq!(seen_xff(&r), "2001:db8::9", "{r}");
    // v2 LOCAL (a proxy's own health check): the real peer.
    let mut req = v2(None);
    req.extend(get("/headers", ""));
    let r = raw_from("127.0.0.1", listen, &req).await;
    assert_eq!(seen_xff(&r), "127.0.0.1", "{r}");
    let lines = crate::common::access_log(&log, 3);
    let clients: Vec<&str> = lines
        .iter()
        .map(|l| l["client"].as_str().unwrap())
        .collect();
    assert_eq!(
        clients[..2],
        ["203.0.113.7:4242", "[2001:db8::9]:5555"],
        "{lines:?}"
    );
    assert!(clients[2].starts_with("127.0.0.1:"), "{lines:?}");

    // Refusals: closed without a byte of HTTP, and counted.
    let untrusted = raw_from("127.0.0.2", listen, &req).await;
    assert_eq!(untrusted, "", "an untrusted peer's header was taken");
    let plain = raw_from("127.0.0.1", listen, &get("/headers", "")).await;
    assert_eq!(plain, "", "a request without a header was served");
    let slow = raw_from("127.0.0.1", listen, b"PROXY TCP4 1.2.").await;
    assert_eq!(slow, "");
    for reason in ["untrusted", "malformed", "timeout"] {
        let m = format!("weir_proxy_protocol_errors_total{{listener=\"web\",reason=\"{reason}\"}}");
        assert_eq!(wait_metric(w.admin, &m, 1.0).await, 1.0, "{m}");
    }
    w.wait_log(
        0,
        "connection refused at its PROXY header",
        Duration::from_secs(5),
    );
}

/// On a TLS listener the header comes before the ClientHello; curl writes a v1 one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_haproxy_protocol_before_tls() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("weir test CA");
    let ca_path = ca.write(dir.path(), "ca");
    let pair = ca.leaf(&["app.test"]).write(dir.path(), "app");
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
proxy_protocol = true
trusted_proxies = ["127.0.0.0/8"]
[listeners.web.tls]
certificates = [{{ cert = "{}", key = "{}", default = true }}]

[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        pair.cert.display(),
        pair.key.display(),
        up.addr()
    );
    let _w = Weir::start(&cfg, &[listen]);
    let (ok, out, err) = curl(
        &ca_path,
        "app.test",
        listen,
        "/headers",
        &["--haproxy-protocol", "-H", "X-Forwarded-For: 6.6.6.6"],
    );
    assert!(ok, "{err}");
    assert!(out.contains(r#"["x-forwarded-proto","https"]"#), "{out}");
    // The header named curl's own address, a trusted one: its X-Forwarded-For is kept.
    assert!(
        out.contains(r#"["x-forwarded-for","6.6.6.6, 127.0.0.1"]"#),
        "{out}"
    );
    // Without the header, the TLS handshake never starts.
    let (ok, _, _) = curl(&ca_path, "app.test", listen, "/headers", &[]);
    assert!(!ok);
}

/// What a recording backend saw on each connection: the bytes up to the first CRLF or the
/// first 16 (+ length) bytes of a v2 header, then it echoes the rest.
#[derive(Clone, Default)]
pub(crate) struct Recorder {
    heads: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Recorder {
    /// Reads the PROXY header off each connection, records it, and runs `then` on the rest.
    pub(crate) async fn spawn<F, Fut>(self, then: F) -> SocketAddr
    where
        F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let then = Arc::new(then);
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = l.accept().await else {
                    return;
                };
                let (heads, then) = (self.heads.clone(), then.clone());
                tokio::spawn(async move {
                    let mut first = [0u8; 1];
                    if s.read_exact(&mut first).await.is_err() {
                        return;
                    }
                    let mut head = first.to_vec();
                    if first[0] == b'P' {
                        while !head.ends_with(b"\r\n") {
                            let mut b = [0u8; 1];
                            if s.read_exact(&mut b).await.is_err() {
                                return;
                            }
                            head.push(b[0]);
                        }
                    } else {
                        let mut fixed = [0u8; 15];
                        s.read_exact(&mut fixed).await.unwrap();
                        head.extend_from_slice(&fixed);
                        let len = u16::from_be_bytes([head[14], head[15]]) as usize;
                        let mut rest = vec![0u8; len];
                        s.read_exact(&mut rest).await.unwrap();
                        head.extend_from_slice(&rest);
                    }
                    heads.lock().unwrap().push(head);
                    then(s).await;
                });
            }
        });
        addr
    }

    pub(crate) fn heads(&self) -> Vec<Vec<u8>> {
        self.heads.lock().unwrap().clone()
    }

    pub(crate) async fn wait(&self, n: usize) -> Vec<Vec<u8>> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.heads().len() < n && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.heads()
    }
}

pub(crate) async fn echo(mut s: tokio::net::TcpStream) {
    let (mut r, mut w) = s.split();
    let _ = tokio::io::copy(&mut r, &mut w).await;
}

/// An HTTP/1.1 backend answering `ok` to every request on the connection (keep-alive).
pub(crate) async fn answer_ok(mut s: tokio::net::TcpStream) {
    let mut buf = Vec::new();
    let mut b = [0u8; 1024];
    loop {
        while let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..i + 4);
            let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
            if s.write_all(ok).await.is_err() {
                return;
            }
        }
        match s.read(&mut b).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&b[..n]),
        }
    }
}

/// Through a tcp listener that reads PROXY headers (from 127.0.0.1) to a pool that sends v2,
/// to an echo backend: `header` then `ping` from a client, the echo checked; the v2 header
/// the backend got.
pub(crate) async fn relayed_v2_header(header: &[u8]) -> Vec<u8> {
    let rec = Recorder::default();
    let backend = rec.clone().spawn(echo).await;
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.db]
protocol = "tcp"
bind = "{listen}"
pool = "db"
proxy_protocol = true
trusted_proxies = ["127.0.0.1"]

[pools.db]
send_proxy = "v2"
endpoints = [{{ addr = "{backend}" }}]
"#
    );
    let _w = Weir::start(&cfg, &[listen]);
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(&[header, b"ping"].concat()).await.unwrap();
    let mut back = [0u8; 4];
    tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut back))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&back, b"ping");
    rec.wait(1).await.swap_remove(0)
}

/// A tcp listener that receives a v1 header and a pool that sends v2: the backend gets
/// the client the first header named, then the client's bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_listener_passes_the_client_on() {
    let h = &relayed_v2_header(b"PROXY TCP4 198.51.100.20 192.0.2.1 40000 5432\r\n").await;
    assert_eq!(
        (h[12], h[13]),
        (0x21, 0x11),
        "v2 PROXY, TCP over IPv4: {h:?}"
    );
    assert_eq!(&h[16..20], &[198, 51, 100, 20]);
    assert_eq!(
        &h[20..24],
        &[192, 0, 2, 1],
        "the destination the first header named"
    );
    assert_eq!(u16::from_be_bytes([h[24], h[25]]), 40000);
}

/// An http pool with `send_proxy = "v1"`: each request on a connection of its own, with its
/// client's header (a connection that carries one client's header is never reused); the
/// pool's health checks send `PROXY UNKNOWN`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_pool_sends_each_client_on_its_own_connection() {
    let rec = Recorder::default();
    // A keep-alive backend: it would take more requests on the connection if sent.
    let backend = rec.clone().spawn(answer_ok).await;
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"

[pools.app]
send_proxy = "v1"
endpoints = [{{ addr = "{backend}" }}]
[pools.app.health]
check = "http"
path = "/"
interval = "200ms"
timeout = "150ms"
"#
    );
    let _w = Weir::start(&cfg, &[listen]);
    // A health check first (it has no client).
    let first = rec.wait(1).await;
    assert_eq!(first[0], b"PROXY UNKNOWN\r\n");
    // Two requests on one client connection, then one from another client.
    let mut one = weir_testkit::client::HttpConn::connect(listen)
        .await
        .unwrap();
    for _ in 0..2 {
        let req = http::Request::get("/")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap();
        assert_eq!(one.send(req).await.unwrap().status, 200);
    }
    let r = raw_from("127.0.0.2", listen, &get("/", "")).await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let heads: Vec<String> = rec
        .heads()
        .into_iter()
        .map(|h| String::from_utf8(h).unwrap())
        .filter(|h| h != "PROXY UNKNOWN\r\n")
        .collect();
    assert_eq!(heads.len(), 3, "one connection per request: {heads:?}");
    let port = backend.port();
    assert!(
        heads[0].starts_with("PROXY TCP4 127.0.0.1 127.0.0.1 "),
        "{heads:?}"
    );
    assert!(
        heads[2].starts_with("PROXY TCP4 127.0.0.2 127.0.0.1 "),
        "{heads:?}"
    );
    assert!(
        heads
            .iter()
            .all(|h| h.ends_with(&format!(" {}\r\n", listen.port()))),
        "the destination is weir's listener ({port} is the backend's): {heads:?}"
    );
}
