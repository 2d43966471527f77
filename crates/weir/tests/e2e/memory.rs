//! Memory bounded for idle connections: an idle keep-alive
//! HTTP connection, an idle TCP session or an idle WebSocket holds no buffers, and what a
//! burst of connections took goes back to the OS once they close. Measured
//! on weir's own resident set, which nothing but this test's traffic moves. A request
//! waiting on a slow backend holds no read buffer for its answer yet.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use weir_testkit::{HttpUpstream, TcpUpstream, WsUpstream};

use crate::common::{free_addr, rss_kib, settled_rss, Weir};

const CONNS: usize = 2000;

/// weir on one thread, with transparent huge pages off: set on this test process, whose
/// children inherit it (harmless to other tests' processes). The resident set then grows
/// by 4 KiB pages; with huge pages (mimalloc's arena gets them) one more 2 MiB page was a
/// kibibyte per connection here.
fn start(cfg: &str, listen: SocketAddr) -> Weir {
    // SAFETY: no pointers; PR_SET_THP_DISABLE only says how memory is backed.
    let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    Weir::start_with(cfg, &[listen], &["--threads", "1"])
}

/// One request/answer on a new connection, left open (HTTP) or one echo
/// exchange on a new session, left open (TCP).
async fn open(addr: SocketAddr, http: bool) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    if http {
        get(&mut s).await;
    } else {
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        s.write_all(b"ping\n").await.unwrap();
        while got.len() < 5 {
            let n = s.read(&mut buf).await.unwrap();
            assert!(n > 0);
            got.extend_from_slice(&buf[..n]);
        }
    }
    s
}

/// A GET on `s`, read to the end of its 200 answer (the fake upstream answers `a\n` with
/// Content-Length).
async fn get(s: &mut TcpStream) {
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(b"\r\n\r\na\n") {
        let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf))
            .await
            .expect("no answer")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    assert!(
        got.starts_with(b"HTTP/1.1 200 "),
        "{}",
        String::from_utf8_lossy(&got)
    );
}

/// Opens `CONNS` idle connections (after a few on connections already closed, so that weir is
/// a used proxy) and waits until weir's growth per connection is at most `limit` KiB (memory
/// freed may take the allocator a moment to give back). Returns them, and the resident set
/// weir started from.
async fn hold_idle(w: &Weir, addr: SocketAddr, http: bool, limit: f64) -> (Vec<TcpStream>, u64) {
    let pid = w.child.id();
    for _ in 0..3 {
        drop(open(addr, http).await);
    }
    let start = settled_rss(pid).await;
    let mut conns = Vec::with_capacity(CONNS);
    for _ in 0..CONNS {
        conns.push(open(addr, http).await);
    }
    let per_conn = || rss_kib(pid).saturating_sub(start) as f64 / CONNS as f64;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut cost = per_conn();
    while cost > limit && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cost = per_conn();
    }
    assert!(
        cost <= limit,
        "{cost:.2} KiB per idle {} connection",
        if http { "HTTP" } else { "TCP" }
    );
    (conns, start)
}

/// Closes `conns` and waits for weir's resident set to come back within 10 % of `start`
/// (plus a page per hundred connections).
async fn released(w: &Weir, conns: Vec<TcpStream>, start: u64) {
    let pid = w.child.id();
    drop(conns);
    let limit = start + start / 10 + (CONNS as u64 / 100) * 4;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut now = rss_kib(pid);
    while now > limit && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = rss_kib(pid);
    }
    assert!(
        now <= limit,
        "weir kept {} KiB after {CONNS} connections closed (started at {start} KiB)",
        now - start
    );
}

/// HAProxy's figure in the bench's idle-http (1.11 KiB). Here about 0.93 KiB, with the
/// connection's timeouts and drains watched by its listener's task; 1.15 with a timer and a
/// drain waiter in every connection's own state, 18 with an 8 KiB read buffer and the
/// request's future kept between requests.
const HTTP_IDLE_LIMIT_KIB: f64 = 1.1;

/// An idle keep-alive connection is little more than its socket: between requests weir
/// holds its stream's halves and a watch for its timeouts and drains, none of the request
/// machinery (freed when a request ends, made again when the next one's bytes come). Once
/// idle, every tenth still serves a request on the same connection; once closed, their
/// memory goes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_keep_alive_connections_hold_only_their_socket_and_still_serve() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\nidle_timeout = \"600s\"\n\n\
         [pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        up.addr()
    );
    let w = start(&cfg, listen);
    let (mut conns, start) = hold_idle(&w, listen, true, HTTP_IDLE_LIMIT_KIB).await;
    for s in conns.iter_mut().step_by(10) {
        get(s).await;
    }
    released(&w, conns, start).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_tcp_sessions_hold_no_buffers() {
    let up = TcpUpstream::echo("t", false).await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.db]\nbind = \"{listen}\"\nprotocol = \"tcp\"\npool = \"db\"\n\n\
         [pools.db]\nendpoints = [{{ addr = \"{}\" }}]\n",
        up.addr()
    );
    let w = start(&cfg, listen);
    // Before: 34 KiB (two 16 KiB relay buffers).
    let (conns, start) = hold_idle(&w, listen, false, 8.0).await;
    released(&w, conns, start).await;
}

type Ws = tokio_tungstenite::WebSocketStream<TcpStream>;

const SOCKETS: usize = 1000;

/// A WebSocket upgraded through weir, one message echoed.
async fn open_ws(addr: SocketAddr) -> Ws {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut ws, resp) = tokio_tungstenite::client_async(format!("ws://{addr}/ws"), tcp)
        .await
        .unwrap();
    assert_eq!(resp.status(), 101);
    ws_echo(&mut ws, Message::text("hello")).await;
    ws
}

async fn ws_echo(ws: &mut Ws, msg: Message) {
    ws.send(msg.clone()).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .expect("no echo")
        .expect("stream ended")
        .expect("websocket error");
    assert!(got == msg, "echo differs");
}

/// An idle WebSocket holds neither handshake's read buffer (the backend's 16 KiB, the
/// client's 8 KiB) nor relay buffers; once idle, the sockets still relay small and large
/// messages both ways and pass a close on.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_websockets_hold_no_buffers_and_still_relay() {
    let up = WsUpstream::echo().await.unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\nupgrade_idle_timeout = \"600s\"\n\n\
         [pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        up.addr()
    );
    let w = start(&cfg, listen);
    let pid = w.child.id();
    for _ in 0..3 {
        drop(open_ws(listen).await);
    }
    let start = settled_rss(pid).await;
    let mut sockets = Vec::with_capacity(SOCKETS);
    for _ in 0..SOCKETS {
        sockets.push(open_ws(listen).await);
    }
    let per_socket = || rss_kib(pid).saturating_sub(start) as f64 / SOCKETS as f64;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut cost = per_socket();
    while cost > WS_LIMIT_KIB && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        cost = per_socket();
    }
    assert!(cost <= WS_LIMIT_KIB, "{cost:.2} KiB per idle WebSocket");

    // Idle, they still relay: a short message on every tenth, a large one on one.
    for ws in sockets.iter_mut().step_by(10) {
        ws_echo(ws, Message::text("still here")).await;
    }
    let big: Vec<u8> = (0..1_572_864u32).map(|i| (i % 251) as u8).collect();
    ws_echo(&mut sockets[1], Message::binary(big)).await;
    // The backend's close (code and reason) comes through, then the client's reply.
    let ws = &mut sockets[2];
    ws.send(Message::text("close:4001:done")).await.unwrap();
    match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
        Ok(Some(Ok(Message::Close(Some(f))))) => {
            assert_eq!(u16::from(f.code), 4001);
            assert_eq!(f.reason.as_str(), "done");
        }
        other => panic!("want a close frame, got {other:?}"),
    }
    while let Some(Ok(_)) = ws.next().await {}
    drop(sockets);
    let deadline = Instant::now() + Duration::from_secs(20);
    while up.active() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} sessions still open",
            up.active()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Before: 32.6 KiB per idle WebSocket here (31.4 in the release bench's idle-ws), the two
/// handshake read buffers kept for the relay's life; the goal is 8.
const WS_LIMIT_KIB: f64 = 8.0;

/// A request in flight holds no read buffer for its answer until the answer comes: the
/// upstream connection makes room once its socket is readable. When the 16 KiB buffer was
/// made as the request went out, each request here cost 35-38 KiB; now about 19.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_waiting_on_their_answer_hold_no_read_buffer() {
    const WAITING: usize = 1000;
    let (up, w, listen) = behind_slow_upstream(Duration::from_secs(120)).await;
    let pid = w.child.id();
    let start = settled_rss(pid).await;
    let mut clients = Vec::with_capacity(WAITING);
    for _ in 0..WAITING {
        let mut s = TcpStream::connect(listen).await.unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        clients.push(s);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while (up.in_flight() as usize) < WAITING {
        assert!(
            Instant::now() < deadline,
            "{} of {WAITING} requests reached the upstream",
            up.in_flight()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let per_request = rss_kib(pid).saturating_sub(start) as f64 / WAITING as f64;
    assert!(
        per_request <= LIMIT_KIB,
        "{per_request:.1} KiB per request waiting on its answer"
    );
    drop(clients);
}

/// Between the 35-38 KiB per waiting request with the read buffer made early and the ~19
/// without it.
const LIMIT_KIB: f64 = 28.0;

/// weir on one thread in front of one upstream that answers after `latency`.
async fn behind_slow_upstream(latency: Duration) -> (HttpUpstream, Weir, SocketAddr) {
    let up = HttpUpstream::builder("a")
        .latency(weir_testkit::Latency::Fixed(latency))
        .spawn()
        .await
        .unwrap();
    let listen = free_addr();
    let cfg = format!(
        "[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n\n\
         [pools.app]\nendpoints = [{{ addr = \"{}\" }}]\n",
        up.addr()
    );
    let w = start(&cfg, listen);
    (up, w, listen)
}
