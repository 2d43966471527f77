//! HTTP/2 from clients: h2c with prior knowledge and h2 over TLS
//! (ALPN) on the same http listeners as HTTP/1.1, each stream through the same pipeline to
//! HTTP/1.1 backends; a drain's GOAWAY lets streams in flight finish; a rapid-reset client
//! is sent GOAWAY and counted; h2spec's conformance cases. Clients: curl, the `h2` crate,
//! h2spec (installed by test.sh).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use tokio::net::TcpStream;
use weir_testkit::certs::Ca;
use weir_testkit::HttpUpstream;

use crate::common::{free_addr, rss_kib, Weir};
use crate::tls_kit::{client, connect, curl, metric, wait_metric};

struct H2 {
    w: Weir,
    plain: SocketAddr,
    tls: SocketAddr,
    ca_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    up: HttpUpstream,
}

async fn start() -> H2 {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new("ca");
    let ca_path = ca.write(dir.path(), "ca");
    let pair = ca.leaf(&["shop.test"]).write(dir.path(), "shop");
    let up = HttpUpstream::spawn("a").await.unwrap();
    let (plain, tls) = (free_addr(), free_addr());
    let cfg = format!(
        r#"
[global]
drain_grace = "20s"
[listeners.plain]
bind = "{plain}"
pool = "app"
[listeners.tls]
bind = "{tls}"
pool = "app"
[listeners.tls.tls]
certificates = [{{ cert = "{}", key = "{}", default = true }}]
[pools.app]
endpoints = [{{ addr = "{}" }}]
"#,
        pair.cert.display(),
        pair.key.display(),
        up.addr()
    );
    let w = Weir::start(&cfg, &[plain, tls]);
    H2 {
        w,
        plain,
        tls,
        ca_path,
        _dir: dir,
        up,
    }
}

type Client = h2::client::SendRequest<Bytes>;

async fn h2c(addr: SocketAddr) -> Client {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// `GET path` on a new stream: (status, body).
async fn get(client: &Client, addr: SocketAddr, path: &str) -> Result<(u16, Vec<u8>), h2::Error> {
    let mut c = client.clone().ready().await?;
    let req = Request::get(format!("http://{addr}{path}"))
        .body(())
        .unwrap();
    let (resp, _) = c.send_request(req, true)?;
    let resp = resp.await?;
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    Ok((status, out))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_and_h2_over_tls_reach_http1_backends() {
    let s = start().await;
    // curl with prior knowledge (h2c), and over TLS where ALPN picks h2.
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "20",
            "-D",
            "-",
            "--http2-prior-knowledge",
        ])
        .arg(format!("http://{}/headers", s.plain))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/2 200"), "{text}");
    assert!(
        text.contains(r#""version":"HTTP/1.1""#),
        "the backend speaks HTTP/1.1: {text}"
    );
    assert!(
        text.contains(r#"["forwarded","for=127.0.0.1;proto=http"]"#),
        "{text}"
    );
    let (ok, text, err) = curl(
        &s.ca_path,
        "shop.test",
        s.tls,
        "/echo",
        &["--http2", "-d", "a body over h2"],
    );
    assert!(ok, "{err}");
    assert!(text.starts_with("HTTP/2 200"), "{text}");
    assert!(text.ends_with("a body over h2"), "{text}");
    // HTTP/1.1 still works on the same listener.
    let r = weir_testkit::client::get(s.plain, "/").await.unwrap();
    assert_eq!(r.status, 200);

    // Many streams at once on one connection, and a body larger than every window.
    let client = h2c(s.plain).await;
    let mut tasks = Vec::new();
    for i in 0..50 {
        let c = client.clone();
        let addr = s.plain;
        tasks.push(tokio::spawn(async move {
            get(&c, addr, &format!("/bytes/{}", 1000 + i))
                .await
                .unwrap()
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        let (status, body) = t.await.unwrap();
        assert_eq!((status, body.len()), (200, 1000 + i));
    }
    let (status, body) = get(&client, s.plain, "/bytes/4194304").await.unwrap();
    assert_eq!((status, body.len()), (200, 4 * 1024 * 1024));
    assert_eq!(body, weir_testkit::pattern(4 * 1024 * 1024));
    // Counted like any request.
    assert!(
        metric(
            s.w.admin,
            "weir_requests_total{listener=\"plain\",route=\"\",pool=\"app\""
        )
        .await
            >= 0.0
    );
    drop(s.up);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_sends_goaway_and_the_streams_in_flight_finish() {
    let mut s = start().await;
    let client = h2c(s.plain).await;
    let addr = s.plain;
    let slow = {
        let c = client.clone();
        tokio::spawn(async move { get(&c, addr, "/?latency_ms=1500").await })
    };
    // The slow request is at the backend before weir is told to stop.
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.up.in_flight() == 0 {
        assert!(
            Instant::now() < deadline,
            "the request never reached the backend"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.w.signal(libc::SIGTERM);
    let (status, _) = slow.await.unwrap().expect("the stream in flight finishes");
    assert_eq!(status, 200);
    // After GOAWAY no new stream is taken on that connection.
    assert!(get(&client, addr, "/").await.is_err());
    assert_eq!(s.w.wait_exit(Duration::from_secs(30)).code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rapid_reset_client_is_sent_goaway_and_counted() {
    let s = start().await;
    let tcp = TcpStream::connect(s.plain).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let conn = tokio::spawn(conn);
    // Open streams and cancel each at once, far faster than any real client does.
    let mut sent = 0;
    for _ in 0..2000 {
        let Ok(mut c) = client.clone().ready().await else {
            break;
        };
        let req = Request::get(format!("http://{}/?latency_ms=200", s.plain))
            .body(())
            .unwrap();
        let Ok((_, mut stream)) = c.send_request(req, true) else {
            break;
        };
        stream.send_reset(h2::Reason::CANCEL);
        sent += 1;
    }
    let ended = tokio::time::timeout(Duration::from_secs(20), conn)
        .await
        .expect("weir never closed the connection")
        .unwrap();
    // GOAWAY (ENHANCE_YOUR_CALM), or the close right after it if the client was still
    // writing when it came.
    let err = ended.expect_err("the connection ended with an error");
    assert!(
        err.reason() == Some(h2::Reason::ENHANCE_YOUR_CALM) || err.is_io(),
        "{err} after {sent} streams"
    );
    assert_eq!(
        wait_metric(
            s.w.admin,
            "weir_http2_goaway_total{reason=\"rapid_reset\"}",
            1.0
        )
        .await,
        1.0
    );
    // Other clients are served.
    let (status, _) = get(&h2c(s.plain).await, s.plain, "/").await.unwrap();
    assert_eq!(status, 200);
}

/// h2spec's path: test.sh installs it under ~/.cache/weir-tools (or `WEIR_H2SPEC`).
fn h2spec() -> std::path::PathBuf {
    if let Ok(p) = std::env::var("WEIR_H2SPEC") {
        return p.into();
    }
    let p =
        std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/weir-tools/h2spec");
    assert!(
        p.exists(),
        "h2spec is not installed at {}: run ./test.sh, which installs it",
        p.display()
    );
    p
}

/// Runs h2spec: its report, and the titles of the failed cases (the lines h2spec lists
/// under "Failures:", marked with ×).
fn run_h2spec(addr: SocketAddr, tls: bool) -> (String, Vec<String>) {
    let mut cmd = std::process::Command::new(h2spec());
    cmd.args([
        "-h",
        "127.0.0.1",
        "-p",
        &addr.port().to_string(),
        "-o",
        "10",
    ]);
    if tls {
        cmd.args(["-t", "-k"]);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let failed = text
        .split("Failures:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("× "))
        .map(str::to_string)
        .collect();
    (text, failed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2spec_conformance() {
    let s = start().await;
    let (text, failed) = run_h2spec(s.tls, true);
    assert!(text.contains("145 tests"), "{text}");
    assert!(failed.is_empty(), "h2 over TLS: {failed:?}\n{text}");
    // h2c shares its port with HTTP/1.1: the one case h2spec expects a bare close for, a
    // garbage preface ("INVALID CONNECTION PREFACE", a valid HTTP/1 method and target),
    // gets HTTP/1's 400, as any HTTP/1.1 server answers a bad request line.
    let (text, failed) = run_h2spec(s.plain, false);
    assert!(text.contains("145 tests"), "{text}");
    assert_eq!(failed.len(), 1, "h2c: {failed:?}\n{text}");
    assert!(
        failed[0].contains("Sends invalid connection preface"),
        "{failed:?}"
    );
}

/// An HTTP/2 frame: 9-byte header and payload.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// `:method` as an HPACK static index.
const GET: u8 = 0x82;
const POST: u8 = 0x83;

/// A request block's pseudo-fields: `method`, `:scheme` http, `:path` /, and `:authority`
/// 127.0.0.1 as a literal the table keeps.
fn pseudo(method: u8) -> Vec<u8> {
    let mut b = vec![method, 0x86, 0x84, 0x41, 9];
    b.extend_from_slice(b"127.0.0.1");
    b
}

/// Writes `chunk` over and over for up to `total` bytes without reading; how much went
/// out before weir stopped taking it (closed, or stopped reading: the write stalls).
async fn flood(addr: SocketAddr, first: &[u8], chunk: &[u8], total: usize) -> usize {
    use tokio::io::AsyncWriteExt;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(PREFACE).await.unwrap();
    s.write_all(&frame(4, 0, 0, &[])).await.unwrap();
    s.write_all(first).await.unwrap();
    let mut sent = 0;
    while sent < total {
        match tokio::time::timeout(Duration::from_secs(2), s.write_all(chunk)).await {
            Ok(Ok(())) => sent += chunk.len(),
            // Closed by weir, or weir stopped reading (backpressure): either bounds it.
            _ => break,
        }
    }
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ping_settings_and_continuation_floods_are_bounded() {
    let s = start().await;
    let pid = s.w.child.id();
    let before = rss_kib(pid);
    // PING flood: 64 MiB of PINGs from a client that never reads the PONGs. weir bounds
    // the answers it queues for a client that does not read them (past 10 000, GOAWAY with
    // control_flood), so its memory does not grow with the flood.
    let pings = frame(6, 0, 0, &[7; 8]).repeat(4096);
    let addr = s.plain;
    let flooded = tokio::spawn(async move { flood(addr, &[], &pings, 64 << 20).await });
    // SETTINGS flood (CVE-2019-9515): 64 MiB of SETTINGS, each to be acknowledged, from a
    // client that never reads the acknowledgements; bounded the same way.
    let settings = frame(4, 0, 0, &[0, 1, 0, 0, 0x10, 0]).repeat(4096); // HEADER_TABLE_SIZE 4096
    let settings_flooded = tokio::spawn(async move { flood(addr, &[], &settings, 64 << 20).await });
    // CONTINUATION flood: one HEADERS without END_HEADERS, then CONTINUATION frames of
    // header fields, endlessly (CVE-2024-27316). Refused once past the header list limit.
    let mut field = vec![0x00, 5];
    field.extend_from_slice(b"x-pad");
    field.extend_from_slice(&[0x7f, 0x81, 0x1f]); // length 255 as an HPACK integer (127 + 128)
    field.extend_from_slice(&[b'a'; 255]);
    let first = frame(1, 0, 1, &pseudo(GET));
    let continuation = frame(9, 0, 1, &field);
    let cont_sent = flood(s.plain, &first, &continuation, 64 << 20).await;
    assert!(
        cont_sent < 16 << 20,
        "weir took {cont_sent} bytes of one header block"
    );
    assert_eq!(
        wait_metric(
            s.w.admin,
            "weir_http2_goaway_total{reason=\"continuation_flood\"}",
            1.0
        )
        .await,
        1.0
    );
    let ping_sent = flooded.await.unwrap();
    let settings_sent = settings_flooded.await.unwrap();
    // Each of the two was sent GOAWAY once its unread answers passed the bound.
    assert_eq!(
        wait_metric(
            s.w.admin,
            "weir_http2_goaway_total{reason=\"control_flood\"}",
            2.0
        )
        .await,
        2.0
    );
    // While all three were refused or stalled, others are served, and weir stayed small.
    let (status, _) = get(&h2c(s.plain).await, s.plain, "/").await.unwrap();
    assert_eq!(status, 200);
    let grew = rss_kib(pid).saturating_sub(before);
    eprintln!("CONTINUATION flood: {cont_sent} bytes taken; PING flood: {ping_sent}; SETTINGS flood: {settings_sent}; weir grew {grew} KiB");
    assert!(
        grew < 64 * 1024,
        "weir grew {grew} KiB (PING flood sent {ping_sent} bytes, SETTINGS {settings_sent})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_stalled_by_a_zero_window_is_reset_after_the_idle_timeout() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\nidle_timeout = \"2s\"\n[pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        up.addr()
    );
    let _w = Weir::start(&cfg, &[listen]);
    // A client that never opens its window: the response's head comes, its body cannot.
    let tcp = TcpStream::connect(listen).await.unwrap();
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, Bytes>(tcp)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut c = client.ready().await.unwrap();
    let req = Request::get(format!("http://{listen}/bytes/100000"))
        .body(())
        .unwrap();
    let (resp, _) = c.send_request(req, true).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(resp.status(), 200);
    let started = Instant::now();
    let mut body = resp.into_body();
    let err = tokio::time::timeout(Duration::from_secs(30), body.data())
        .await
        .expect("the stalled stream was never reset")
        .expect("no data can come")
        .expect_err("the stream is reset");
    assert_eq!(err.reason(), Some(h2::Reason::CANCEL), "{err}");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "reset before the stall time"
    );
    // The backend's connection went back or closed: the next request is served.
    let (status, body) = get(&h2c(listen).await, listen, "/bytes/100").await.unwrap();
    assert_eq!((status, body.len()), (200, 100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_sent_goaway_before_it_is_closed() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\nidle_timeout = \"1s\"\n[pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        up.addr()
    );
    let _w = crate::common::Weir::start(&cfg, &[listen]);
    let tcp = TcpStream::connect(listen).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let conn = tokio::spawn(conn);
    let (status, _) = get(&client, listen, "/").await.unwrap();
    assert_eq!(status, 200);
    // Idle past idle_timeout: GOAWAY (NO_ERROR), then the close. h2 ends the connection
    // cleanly only after a GOAWAY; a bare close would be an unexpected EOF.
    let ended = tokio::time::timeout(Duration::from_secs(20), conn)
        .await
        .expect("weir closed the idle connection")
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    // And the client learnt not to use it.
    assert!(client.clone().ready().await.is_err());
}

/// Reads what weir sends on `s` until a frame of `kind` on `stream` arrives; its payload.
async fn read_until_frame<S>(s: &mut S, kind: u8, stream: u32) -> Vec<u8>
where
    S: tokio::io::AsyncRead + Unpin,
{
    let mut frames = frames_until(s, kind, stream).await;
    frames.pop().expect("the frame waited for").payload
}

/// A frame weir sent.
#[derive(Debug)]
struct Seen {
    kind: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// Every frame weir sends on `s` up to and with the first of `kind` on `stream`.
async fn frames_until<S>(s: &mut S, kind: u8, stream: u32) -> Vec<Seen>
where
    S: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut buf = Vec::new();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        while buf.len() >= 9 {
            let len = usize::from(buf[0]) << 16 | usize::from(buf[1]) << 8 | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let f = Seen {
                kind: buf[3],
                stream: u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]),
                payload: buf[9..9 + len].to_vec(),
            };
            buf.drain(..9 + len);
            let last = f.kind == kind && f.stream == stream;
            seen.push(f);
            if last {
                return seen;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no frame of type {kind} on stream {stream}: {seen:?}"
        );
        let mut chunk = [0u8; 16384];
        let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut chunk))
            .await
            .expect("weir answered nothing")
            .unwrap();
        assert!(
            n > 0,
            "weir closed before a frame of type {kind} on stream {stream}: {seen:?}"
        );
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// A connection's protocol is ALPN's when the client offered one, else its first bytes'
/// (however they are cut): the HTTP/2 preface a byte at a time is HTTP/2. A preface where
/// HTTP/1.1 was chosen (by ALPN, or by a first request) gets no answer, not even an HTTP/1
/// one an HTTP/2 client would misread: the connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alpn_or_else_the_first_bytes_choose_the_protocol() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = start().await;
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    wire.extend(frame(1, 0x5, 1, &pseudo(GET)));
    let answered = |headers: &[u8]| assert_eq!(headers.first(), Some(&0x88), "{headers:?}");

    // Plain, a byte at a time: HTTP/2, and the request answered (`:status 200`).
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    c.set_nodelay(true).unwrap();
    for b in &wire {
        c.write_all(&[*b]).await.unwrap();
    }
    answered(&read_until_frame(&mut c, 1, 1).await);

    // TLS without ALPN: the first bytes say HTTP/2 there too.
    let ca = std::fs::read_to_string(&s.ca_path).unwrap();
    let h = connect(&client(&ca, &[], None), s.tls, Some("shop.test"))
        .await
        .unwrap();
    assert_eq!(h.alpn(), None);
    let mut t = h.stream;
    t.write_all(&wire).await.unwrap();
    answered(&read_until_frame(&mut t, 1, 1).await);

    // ALPN http/1.1: the preface is refused, with nothing sent back.
    let h = connect(&client(&ca, &["http/1.1"], None), s.tls, Some("shop.test"))
        .await
        .unwrap();
    assert_eq!(h.alpn().as_deref(), Some("http/1.1"));
    let mut t = h.stream;
    t.write_all(&wire).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), t.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "weir did not close the connection");
    assert!(out.is_empty(), "{:?}", String::from_utf8_lossy(&out));

    // Plain, after a first HTTP/1.1 request: its answer, then the close.
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    let mut pipelined = b"GET / HTTP/1.1\r\nhost: a\r\n\r\n".to_vec();
    pipelined.extend_from_slice(&wire);
    c.write_all(&pipelined).await.unwrap();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), c.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "weir did not close the connection");
    let out = String::from_utf8_lossy(&out);
    assert!(out.starts_with("HTTP/1.1 200 "), "{out}");
}

/// Frames a client sent on a stream before weir's reset of it reached the client (here DATA
/// past the request's content-length: weir resets the stream, PROTOCOL_ERROR) are ignored
/// (RFC 9113 §5.1): no stream error for the late DATA, no connection error for the late
/// trailers, and the connection goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_on_their_way_when_weir_resets_a_stream_are_ignored() {
    use tokio::io::AsyncWriteExt;
    let s = start().await;
    // POST / with content-length: 3 (a literal the table keeps), then four bytes.
    let mut head = pseudo(POST);
    head.extend_from_slice(&[0x5c, 1, b'3']);
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    wire.extend(frame(1, 0x4, 1, &head));
    wire.extend(frame(0, 0, 1, b"abcd"));
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    c.write_all(&wire).await.unwrap();
    let reset = read_until_frame(&mut c, 3, 1).await;
    assert_eq!(reset, [0, 0, 0, 1], "PROTOCOL_ERROR");
    // More body and trailers, as a client that had not seen the reset yet sends them; then
    // a PING, whose ACK comes after anything weir says about them.
    let mut late = frame(0, 0, 1, b"more");
    late.extend(frame(1, 0x5, 1, &[0x40, 1, b'x', 1, b'y']));
    late.extend(frame(6, 0, 0, b"12345678"));
    c.write_all(&late).await.unwrap();
    let frames = frames_until(&mut c, 6, 0).await;
    assert!(
        frames.iter().all(|f| f.stream != 1 && f.kind != 7),
        "late frames answered: {frames:?}"
    );
    // And a new request on the same connection is served.
    c.write_all(&frame(1, 0x5, 3, &pseudo(GET))).await.unwrap();
    let head = read_until_frame(&mut c, 1, 3).await;
    assert_eq!(head[0], 0x88, ":status 200 (static index 8): {head:?}");
}

/// An answer weir makes before the request's body is in (a redirect filter's, here) reaches
/// curl whole while curl is still uploading 4 MiB. weir does not follow it with RST_STREAM
/// NO_ERROR at once, which RFC 9113 §8.1 allows: Debian 12's curl (7.88) fails such a
/// transfer with "Stream error in the HTTP/2 framing layer" (exit 92; it did when weir sent
/// it). The rest of the body is read and dropped, its window given back, so the upload never
/// stalls; only an upload going on past 16 MiB or 5 s is reset (`h2_early_answer.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_early_answer_reaches_curl_while_it_uploads() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let plain = free_addr();
    let cfg = format!(
        r#"
[listeners.plain]
bind = "{plain}"
pool = "app"
[pools.app]
endpoints = [{{ addr = "{}" }}]
[filters.away]
kind = "redirect"
scheme = "https"
status = 301
[routes.all]
listener = "plain"
pool = "app"
filters = ["away"]
"#,
        up.addr()
    );
    let _w = Weir::start(&cfg, &[plain]);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 4 << 20]).unwrap();
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "30",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code} %{http_version}",
        ])
        .args(["--http2-prior-knowledge", "--data-binary"])
        .arg(format!("@{}", body.display()))
        .arg(format!("http://{plain}/upload"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "curl: {:?} {err}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "301 2", "{err}");
}

/// Uploads a client cancels while they wait in a pool's queue (their bytes received, not
/// read by anyone) give those bytes back to the connection's window. The window is shared
/// by every stream of the connection (1 MiB): four such cancels of ~240 KiB each used it up,
/// and no stream on the connection could upload anything after them. Seen on the wire as
/// weir's WINDOW_UPDATE for the connection, which it sends once half the window is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_uploads_give_their_bytes_back_to_the_connection() {
    use tokio::io::AsyncWriteExt;
    let up = HttpUpstream::spawn("a").await.unwrap();
    let plain = free_addr();
    let cfg = format!(
        "[listeners.plain]\nbind = \"{plain}\"\npool = \"app\"\n\n\
         [pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n\
         max_conn = 1\nmax_queue = 10\nqueue_timeout = \"60s\"\n",
        up.addr()
    );
    let _w = Weir::start(&cfg, &[plain]);
    let mut c = TcpStream::connect(plain).await.unwrap();
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    // GET /?hang=1 (the testkit never answers it): it holds the pool's one connection.
    let mut get = vec![GET, 0x86, 0x04, 8];
    get.extend_from_slice(b"/?hang=1");
    get.extend_from_slice(&[0x41, 9]);
    get.extend_from_slice(b"127.0.0.1");
    wire.extend(frame(1, 0x5, 1, &get));
    c.write_all(&wire).await.unwrap();
    // weir's own WINDOW_UPDATE for the connection, which it opens at 1 MiB.
    read_until_frame(&mut c, 8, 0).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.in_flight() == 0 {
        assert!(
            Instant::now() < deadline,
            "the GET never reached the backend"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Four POSTs of 15 full DATA frames each (240 KiB, within a stream's 256 KiB window):
    // queued behind the GET, each read at most up to the replay buffer (64 KiB), then
    // cancelled.
    let chunk = vec![b'x'; 16_384];
    for stream in [3, 5, 7, 9] {
        let mut w = frame(1, 0x4, stream, &pseudo(POST));
        for _ in 0..15 {
            w.extend(frame(0, 0, stream, &chunk));
        }
        w.extend(frame(3, 0, stream, &[0, 0, 0, 8]));
        c.write_all(&w).await.unwrap();
    }
    let update = read_until_frame(&mut c, 8, 0).await;
    let n = u32::from_be_bytes(update[..4].try_into().unwrap());
    assert!(
        n >= 512 * 1024,
        "the connection's window got back {n} bytes"
    );
}

/// An HPACK bomb: one 4000-byte entry put in the table, then a header block of ~130 000
/// one-byte references to it (half a GB decoded). weir answers 431 without keeping what
/// the references decode to, and goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hpack_bomb_gets_431_and_weir_stays_small() {
    use tokio::io::AsyncWriteExt;
    let s = start().await;
    let pid = s.w.child.id();
    let before = rss_kib(pid);
    let mut block = pseudo(GET);
    // x: 4000 bytes, indexed (4000 = 127 + 3873 as an HPACK integer).
    block.extend_from_slice(&[0x40, 0x01, b'x', 0x7f, 0xa1, 0x1e]);
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 130_000)); // index 62: that entry
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    let chunks: Vec<&[u8]> = block.chunks(16_384).collect();
    for (i, c) in chunks.iter().enumerate() {
        // HEADERS with END_STREAM, then CONTINUATION; END_HEADERS on the last.
        let (kind, mut flags) = if i == 0 { (1, 0x1) } else { (9, 0) };
        if i + 1 == chunks.len() {
            flags |= 0x4;
        }
        wire.extend(frame(kind, flags, 1, c));
    }
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    c.write_all(&wire).await.unwrap();
    let head = read_until_frame(&mut c, 1, 1).await;
    // :status 431 is no static entry: a literal with the name's index (8), "431".
    assert_eq!(head[..5], [0x08, 3, b'4', b'3', b'1'], "{head:?}");
    let (status, _) = get(&h2c(s.plain).await, s.plain, "/").await.unwrap();
    assert_eq!(status, 200);
    let grew = rss_kib(pid).saturating_sub(before);
    assert!(grew < 64 * 1024, "weir grew {grew} KiB");
}

/// A client whose streams weir keeps resetting for its own errors (here, requests without
/// `:path`) is sent GOAWAY ENHANCE_YOUR_CALM past 1024 of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_provoking_stream_errors_is_sent_goaway() {
    use tokio::io::AsyncWriteExt;
    let s = start().await;
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    // Exactly one past the bound: weir closes after its GOAWAY, and bytes it had not read
    // would make the close a reset that could beat the GOAWAY to this reader.
    for i in 0..1025u32 {
        // :method GET, :scheme http, no :path.
        wire.extend(frame(1, 0x5, 2 * i + 1, &[0x82, 0x86]));
    }
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    c.write_all(&wire).await.unwrap();
    let goaway = read_until_frame(&mut c, 7, 0).await;
    assert_eq!(goaway[4..8], 0xbu32.to_be_bytes(), "{goaway:?}");
    assert_eq!(
        wait_metric(
            s.w.admin,
            "weir_http2_goaway_total{reason=\"stream_errors\"}",
            1.0
        )
        .await,
        1.0
    );
    // Others are served.
    let (status, _) = get(&h2c(s.plain).await, s.plain, "/").await.unwrap();
    assert_eq!(status, 200);
}

/// Cookies an HTTP/2 client sends as separate fields (RFC 9113 §8.2.3) reach an HTTP/1.1
/// backend as one `Cookie` line, joined with "; " (RFC 6265 §5.4: many servers read only
/// the first line).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_crumbs_reach_an_http1_backend_as_one_line() {
    let s = start().await;
    let client = h2c(s.plain).await;
    let mut c = client.ready().await.unwrap();
    let req = Request::get(format!("http://{}/cookies", s.plain))
        .header("cookie", "session=abc")
        .header("cookie", "theme=dark")
        .header("cookie", "lang=en")
        .body(())
        .unwrap();
    let (resp, _) = c.send_request(req, true).unwrap();
    assert_eq!(resp.await.unwrap().status(), 200);
    let seen = s.up.log();
    let r = seen
        .iter()
        .find(|r| r.path == "/cookies")
        .expect("the request arrived");
    let cookies: Vec<_> = r.headers.get_all("cookie").iter().collect();
    assert_eq!(cookies, ["session=abc; theme=dark; lang=en"]);
}

/// A client that breaks a connection rule (here WINDOW_UPDATE with an increment of 0 on the
/// connection, RFC 9113 §6.9) is sent GOAWAY PROTOCOL_ERROR, and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protocol_error_is_sent_goaway_and_counted() {
    use tokio::io::AsyncWriteExt;
    let s = start().await;
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    wire.extend(frame(8, 0, 0, &0u32.to_be_bytes()));
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    c.write_all(&wire).await.unwrap();
    let goaway = read_until_frame(&mut c, 7, 0).await;
    assert_eq!(goaway[4..8], 0x1u32.to_be_bytes(), "{goaway:?}");
    assert_eq!(
        wait_metric(
            s.w.admin,
            "weir_http2_goaway_total{reason=\"protocol_error\"}",
            1.0
        )
        .await,
        1.0
    );
}

/// Fields a client indexes are taken from HPACK's table the next time it refers to them,
/// but a content-length is not taken that way: each request's DATA is held to its own. A
/// request naming the indexed `content-length: 3` and sending 7 bytes is reset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_indexed_content_length_still_binds_each_request() {
    use tokio::io::AsyncWriteExt;
    let s = start().await;
    let mut wire = PREFACE.to_vec();
    wire.extend(frame(4, 0, 0, &[]));
    // :method POST, :scheme http, :path /; :authority and content-length: 3 each added to
    // the table (content-length is index 62 after this block, :authority 63).
    let mut first = pseudo(POST);
    first.extend_from_slice(&[0x5c, 1, b'3']);
    wire.extend(frame(1, 0x4, 1, &first));
    wire.extend(frame(0, 0x1, 1, b"abc"));
    // The same fields by index: twice with three bytes (the first reference makes the
    // fields weir keeps with the entries, the second takes them), then with seven.
    for (id, body) in [(3, &b"abc"[..]), (5, b"abc"), (7, b"toolong")] {
        wire.extend(frame(1, 0x4, id, &[0x83, 0x86, 0x84, 0xbf, 0xbe]));
        wire.extend(frame(0, 0x1, id, body));
    }
    let mut c = TcpStream::connect(s.plain).await.unwrap();
    c.write_all(&wire).await.unwrap();
    let rst = read_until_frame(&mut c, 3, 7).await;
    assert_eq!(rst[..4], 0x1u32.to_be_bytes(), "{rst:?}");
}

/// `curl --http2-prior-knowledge` with `args` and `-v`: (status, curl's verbose output).
fn curl_h2(args: &[&str], url: String) -> (String, String) {
    let out = std::process::Command::new("curl")
        .args(["-sS", "-v", "--max-time", "20", "-o", "/dev/null"])
        .args(["-w", "%{http_code}", "--http2-prior-knowledge"])
        .args(args)
        .arg(url)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `Expect` over HTTP/2, as over HTTP/1.1: a client waiting on `100-continue` is sent its
/// `100` when the pipeline reads the body (curl is told to wait a minute for it, so without
/// the `100` it runs out of its 20 s), or the 413 of a body limit instead; any other
/// expectation gets 417 (reason `bad_request`), reaches no endpoint, and is access-logged
/// with its method and path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expectations_over_http2_are_met_or_refused() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let plain = free_addr();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let cfg = format!(
        r#"
[listeners.plain]
bind = "{plain}"
pool = "app"
access_log = "{}"
[pools.app]
endpoints = [{{ addr = "{}" }}]
[filters.small]
kind = "body_limit"
max_bytes = "1KiB"
[routes.upload]
listener = "plain"
path_prefix = "/upload"
pool = "app"
filters = ["small"]
[routes.all]
listener = "plain"
pool = "app"
"#,
        log.display(),
        up.addr()
    );
    let w = Weir::start(&cfg, &[plain]);
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 200_000]).unwrap();
    let data = format!("@{}", body.display());
    let wait = ["--expect100-timeout", "60", "-H", "Expect: 100-continue"];

    let (code, verbose) = curl_h2(
        &[&wait[..], &["--data-binary", &data]].concat(),
        format!("http://{plain}/echo"),
    );
    assert_eq!(code, "200", "{verbose}");
    assert!(verbose.contains("< HTTP/2 100"), "{verbose}");
    assert_eq!(up.requests(), 1);

    let (code, verbose) = curl_h2(
        &[&wait[..], &["--data-binary", &data]].concat(),
        format!("http://{plain}/upload"),
    );
    assert_eq!(code, "413", "{verbose}");
    assert!(!verbose.contains("< HTTP/2 100"), "{verbose}");
    assert!(
        verbose.contains("x-weir-reason: body_too_large"),
        "{verbose}"
    );

    for args in [
        &["-H", "Expect: 200-ok", "--data-binary", &data][..],
        &["-H", "Expect: 200-ok"],
    ] {
        let (code, verbose) = curl_h2(args, format!("http://{plain}/echo"));
        assert_eq!(code, "417", "{verbose}");
        assert!(verbose.contains("x-weir-reason: bad_request"), "{verbose}");
    }
    assert_eq!(up.requests(), 1, "no refused request reached the endpoint");
    let refused: Vec<_> = crate::common::access_log(&log, 4)
        .into_iter()
        .filter(|e| e["status"] == 417)
        .collect();
    assert_eq!(refused.len(), 2, "{refused:#?}");
    for (e, method) in refused.iter().zip(["POST", "GET"]) {
        assert_eq!(
            (&e["method"], &e["path"], &e["protocol"], &e["reason"]),
            (
                &serde_json::json!(method),
                &serde_json::json!("/echo"),
                &serde_json::json!("HTTP/2"),
                &serde_json::json!("bad_request")
            ),
            "{e}"
        );
    }
    let metrics = weir_testkit::client::get(w.admin, "/metrics")
        .await
        .unwrap()
        .text();
    assert!(
        metrics.lines().any(|l| l.contains("code=\"417\"")
            && l.contains("reason=\"bad_request\"")
            && l.ends_with(" 2")),
        "{metrics}"
    );
}
