//! What a TLS listener does with bad input: plain HTTP, garbage, a ClientHello trickled a
//! byte at a time, a client that stops mid-handshake, thousands of abandoned handshakes.
//! Each is cut (by the handshake timeout, or at once), counted with its result, and never
//! delays other clients; memory stays bounded. A TLS 1.2 client asking to renegotiate is
//! refused at once with the `no_renegotiation` alert.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::certs::Ca;
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, raw_exchange, rss_kib, Weir};
use crate::tls_kit::{client, connect, wait_metric};

struct Bad {
    w: Weir,
    listen: SocketAddr,
    ca: Ca,
    _dir: tempfile::TempDir,
    _up: HttpUpstream,
}

/// A TLS listener whose handshakes must finish within `timeout`.
async fn start(timeout: &str) -> Bad {
    start_with(timeout, "").await
}

async fn start_with(timeout: &str, listener_extra: &str) -> Bad {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("weir test CA");
    let shop = ca.leaf(&["shop.test"]).write(dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.web]
bind = "{listen}"
pool = "app"
{listener_extra}
[listeners.web.tls]
certificates = [{{ cert = "{}", key = "{}", default = true }}]
handshake_timeout = "{timeout}"
[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        shop.cert.display(),
        shop.key.display(),
        up.addr()
    );
    let w = Weir::start(&cfg, &[listen]);
    Bad {
        w,
        listen,
        ca,
        _dir: dir,
        _up: up,
    }
}

fn result(r: &str) -> String {
    format!("weir_tls_handshakes_total{{listener=\"web\",version=\"\",result=\"{r}\"}}")
}

/// A real ClientHello (from rustls), to send in pieces.
fn client_hello() -> Vec<u8> {
    let cfg = client(&Ca::new("x").pem, &[], None);
    let mut conn = rustls::ClientConnection::new(cfg, "shop.test".try_into().unwrap()).unwrap();
    let mut out = Vec::new();
    conn.write_tls(&mut out).unwrap();
    out
}

/// A full handshake and request, timed.
async fn served(b: &Bad) -> Duration {
    let t = Instant::now();
    let cfg = client(&b.ca.pem, &[], None);
    let h = connect(&cfg, b.listen, Some("shop.test")).await.unwrap();
    let r = h.get("shop.test", "/", "").await;
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    t.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_gets_a_400_that_says_why_and_garbage_is_closed() {
    let b = start("10s").await;
    let r = raw_exchange(
        b.listen,
        b"GET / HTTP/1.1\r\nHost: shop.test\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    assert!(r.contains("x-weir-reason: not_tls"), "{r}");
    assert!(r.contains("plain HTTP request"), "{r}");
    let r = raw_exchange(
        b.listen,
        b"\x00\x01garbage\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(r, "", "garbage is closed without an answer");
    // A TLS record header that is not a ClientHello: an alert, then closed.
    let r = raw_exchange(
        b.listen,
        b"\x16\x03\x01\x00\x05hello",
        Duration::from_secs(10),
    )
    .await;
    assert!(r.as_bytes().first() == Some(&0x15) || r.is_empty(), "{r:?}");
    assert_eq!(wait_metric(b.w.admin, &result("not_tls"), 2.0).await, 2.0);
    assert_eq!(
        wait_metric(b.w.admin, &result("bad_message"), 1.0).await,
        1.0
    );
    served(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_or_abandoned_hello_is_cut_at_the_handshake_timeout() {
    let b = start("1s").await;
    let hello = client_hello();
    // One client sends a byte every 100 ms (the hello takes far longer than 1 s); another
    // sends half the hello and stops. Neither delays a normal client meanwhile.
    let trickle = {
        let hello = hello.clone();
        let addr = b.listen;
        tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let start = Instant::now();
            for byte in hello {
                if s.write_all(&[byte]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // Cut: reading sees the close.
            let mut buf = [0u8; 64];
            let _ = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf)).await;
            start.elapsed()
        })
    };
    let mut half = TcpStream::connect(b.listen).await.unwrap();
    half.write_all(&hello[..hello.len() / 2]).await.unwrap();
    for _ in 0..5 {
        served(&b).await;
    }
    let took = trickle.await.unwrap();
    assert!(
        took < Duration::from_secs(20),
        "the trickling client was never cut ({took:?})"
    );
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(30), half.read(&mut buf))
        .await
        .expect("the abandoned handshake was never cut")
        .unwrap_or(0);
    assert_eq!(n, 0, "the abandoned handshake got bytes instead of a close");
    assert_eq!(wait_metric(b.w.admin, &result("timeout"), 2.0).await, 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_abandoned_handshakes_are_cut_and_cost_bounded_memory() {
    const N: usize = 3000;
    let b = start("3s").await;
    served(&b).await;
    let before = rss_kib(b.w.child.id());
    let hello = client_hello();
    let mut conns = Vec::with_capacity(N);
    for i in 0..N {
        let mut s = TcpStream::connect(b.listen).await.unwrap();
        // Every other one sends half a hello; the rest send nothing at all.
        if i % 2 == 0 {
            s.write_all(&hello[..hello.len() / 2]).await.unwrap();
        }
        conns.push(s);
    }
    // While they all hang, a normal client is served.
    served(&b).await;
    let during = rss_kib(b.w.child.id());
    let per_conn = (during.saturating_sub(before) * 1024) / N as u64;
    // Measured: about 8 KiB each (the task, the socket, rustls' buffer for the half
    // hello); a bound that only fails if pending handshakes grow without limit.
    assert!(
        per_conn < 32 * 1024,
        "{per_conn} bytes per pending handshake"
    );
    // All of them are cut at the timeout and counted.
    assert_eq!(
        wait_metric(b.w.admin, &result("timeout"), N as f64).await,
        N as f64
    );
    for mut s in conns {
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf))
            .await
            .expect("a pending handshake was never cut")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }
    served(&b).await;
    eprintln!("{per_conn} bytes per pending handshake");
}

/// A client that asks to renegotiate (openssl s_client's `R` command, TLS 1.2) gets the
/// `no_renegotiation` alert at once, as from HAProxy and nginx; it is not left waiting for a
/// handshake that never comes (here, 120 s of `header_timeout`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renegotiation_is_refused_at_once() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    let b = start_with("10s", "header_timeout = \"120s\"\nidle_timeout = \"120s\"").await;
    let dir = tempfile::tempdir().unwrap();
    let ca = b.ca.write(dir.path(), "ca");
    let mut child = Command::new("openssl")
        .args(["s_client", "-tls1_2", "-servername", "shop.test", "-CAfile"])
        .arg(&ca)
        .arg("-connect")
        .arg(b.listen.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("openssl runs");
    let mut stdout = child.stdout.take().unwrap();
    // The handshake is done once s_client has printed its session.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("Verify return code") {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "s_client ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let asked = Instant::now();
    child.stdin.as_mut().unwrap().write_all(b"R\n").unwrap();
    let deadline = asked + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = asked.elapsed();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    let out = format!("{}{err}", String::from_utf8_lossy(&seen));
    assert!(
        status.is_some(),
        "s_client still waiting after {took:?}: {out}"
    );
    assert!(out.contains("RENEGOTIATING"), "{out}");
    assert!(
        out.contains("no renegotiation"),
        "the alert reached the client: {out}"
    );
    drop(b.w);
}

/// A client that sends an IP address as its server name (RFC 6066 forbids it; rustls
/// ignores it, as if no name was sent) is served by the default certificate and counted in
/// `weir_tls_sni_ip_address_total`, not logged once per connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ip_address_as_server_name_is_counted_not_logged() {
    let b = start("10s").await;
    let dir = tempfile::tempdir().unwrap();
    let ca = b.ca.write(dir.path(), "ca");
    let ca = ca.display().to_string();
    let listen = b.listen.to_string();
    for _ in 0..5 {
        let out = crate::tls_kit::s_client(
            b.listen,
            &["-servername", "127.0.0.1", "-CAfile", &ca, "-brief"],
        );
        assert!(out.contains("CONNECTION ESTABLISHED"), "{listen}: {out}");
    }
    let n = wait_metric(b.w.admin, "weir_tls_sni_ip_address_total", 5.0).await;
    assert_eq!(n, 5.0);
    assert!(
        !b.w.log_text().contains("Illegal SNI"),
        "{}",
        b.w.log_text()
    );
}
