//! TLS termination on tcp listeners: a tcp listener with `[tls]` completes the
//! handshake itself and relays plaintext to a plain tcp pool, with half-close carried
//! through TLS (close_notify one way, FIN the other).

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use weir_testkit::certs::{Ca, Pair};
use weir_testkit::TcpUpstream;

use crate::common::{free_addr, Weir};
use crate::tls_kit::{client, connect, wait_metric};

struct Setup {
    ca: Ca,
    pair: Pair,
    up: TcpUpstream,
    listen: SocketAddr,
    w: Weir,
    /// The certificate files.
    _dir: tempfile::TempDir,
}

/// weir with a tcp listener `db` terminating TLS for db.example, in front of a plain echo
/// backend that greets with `plain`.
async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("tcp tls CA");
    let pair = ca.leaf(&["db.example"]).write(dir.path(), "db");
    let up = TcpUpstream::echo("plain", true).await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        r#"
[listeners.db]
protocol = "tcp"
bind = "{listen}"
pool = "db"
idle_timeout = "2s"
[listeners.db.tls]
certificates = [{{ cert = "{}", key = "{}", default = true }}]

[pools.db]
endpoints = [{{ addr = "{}" }}]
"#,
        pair.cert.display(),
        pair.key.display(),
        up.addr()
    );
    // Waiting on the admin listener only: a probe on `db` would count as a handshake.
    let mut w = Weir::start(&cfg, &[]);
    let admin = w.admin;
    w.wait_listening(admin);
    Setup {
        ca,
        pair,
        up,
        listen,
        w,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tcp_listener_terminates_tls_and_relays_plaintext() {
    let s = setup().await;
    let tls = client(&s.ca.pem, &[], None);
    let h = connect(&tls, s.listen, Some("db.example")).await.unwrap();
    assert!(h.leaf() == s.pair.der, "not the listener's certificate");
    assert_eq!(h.version(), "1.3");
    let (r, mut w) = tokio::io::split(h.stream);
    let mut r = BufReader::new(r);
    let mut line = String::new();
    r.read_line(&mut line).await.unwrap();
    // The backend spoke plaintext, and hears plaintext.
    assert_eq!(line, "plain\n");
    w.write_all(b"ping\n").await.unwrap();
    line.clear();
    r.read_line(&mut line).await.unwrap();
    assert_eq!(line, "ping\n");
    // close_notify: weir half-closes the backend, whose echo ends, which weir passes
    // back as close_notify (read_to_end would fail on a close without one).
    w.shutdown().await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), r.read_to_end(&mut rest))
        .await
        .expect("no end after the half-close")
        .unwrap();
    assert!(rest.is_empty(), "{rest:?}");

    // openssl's client: verified for the name, the backend's greeting and echo through.
    let ca_file = s.ca.write(s.w.dir.path(), "ca");
    let listen = s.listen.to_string();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = Command::new("openssl")
            .args(["s_client", "-quiet", "-connect", &listen])
            .args([
                "-servername",
                "db.example",
                "-verify_hostname",
                "db.example",
            ])
            .arg("-CAfile")
            .arg(&ca_file)
            .arg("-verify_return_error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("openssl runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"hello over openssl\n")
            .unwrap();
        // -quiet keeps reading after its input ends; the listener's 2 s idle_timeout
        // closes the session once the echo is back.
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout,
        "plain\nhello over openssl\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let ok = "weir_tls_handshakes_total{listener=\"db\",version=\"1.3\",result=\"ok\"}";
    assert_eq!(wait_metric(s.w.admin, ok, 2.0).await, 2.0);
    let sessions = format!(
        "weir_requests_total{{listener=\"db\",route=\"\",pool=\"db\",endpoint=\"{}\",code=\"\",reason=\"\"}}",
        s.up.addr()
    );
    assert_eq!(wait_metric(s.w.admin, &sessions, 2.0).await, 2.0);
    assert_eq!(s.up.connections(), 2);
}

/// Megabytes both ways through the copying relay, byte-exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_large_transfer_through_terminated_tls_is_byte_exact() {
    let s = setup().await;
    let tls = client(&s.ca.pem, &[], None);
    let h = connect(&tls, s.listen, Some("db.example")).await.unwrap();
    let (mut r, mut w) = tokio::io::split(h.stream);
    let data = weir_testkit::pattern(8 * 1024 * 1024);
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await.unwrap();
        w.shutdown().await.unwrap();
    });
    let mut got = Vec::with_capacity(data.len() + 6);
    tokio::time::timeout(Duration::from_secs(60), r.read_to_end(&mut got))
        .await
        .expect("transfer did not finish")
        .unwrap();
    writer.await.unwrap();
    assert_eq!(&got[..6], b"plain\n");
    assert_eq!(got.len() - 6, data.len());
    assert!(got[6..] == data[..], "bytes differ");
}

/// A client that is not TLS gets no session; the handshake counts say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plaintext_to_a_tls_tcp_listener_reaches_no_backend() {
    let s = setup().await;
    let mut c = tokio::net::TcpStream::connect(s.listen).await.unwrap();
    c.write_all(b"\x00\x01garbage, not a TLS record\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out))
        .await
        .expect("not closed");
    assert!(out.is_empty(), "{out:?}");
    let not_tls = "weir_tls_handshakes_total{listener=\"db\",version=\"\",result=\"not_tls\"}";
    assert_eq!(wait_metric(s.w.admin, not_tls, 1.0).await, 1.0);
    assert_eq!(s.up.connections(), 0);
}
