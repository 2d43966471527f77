//! WebSocket (any HTTP/1.1 Upgrade) through weir: after the 101 weir relays bytes,
//! so a real WebSocket client and server (tokio-tungstenite) must see echo of text, a
//! large and a fragmented message, ping/pong and close codes exactly; the socket survives
//! a reload that keeps its endpoint and is cut after the drain grace when the endpoint
//! goes; a declined upgrade and an unsolicited 101 stay ordinary HTTP.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use weir_testkit::WsUpstream;

use crate::common::{endpoints, fixed_backend, free_addr, raw_exchange, Weir};
use crate::tls_kit::metric;

type Ws = WebSocketStream<TcpStream>;

const GAUGE: &str = "weir_upgraded_connections{pool=\"app\"}";

fn cfg(listen: SocketAddr, app: SocketAddr, extra: &str) -> String {
    format!(
        "[global]\ndrain_grace = \"2s\"\n[listeners.web]\nbind = \"{listen}\"\npool = \"app\"\n{extra}\n[pools.app]\n{}\n",
        endpoints(&[(app, 1)])
    )
}

async fn open(listen: SocketAddr) -> Ws {
    let tcp = TcpStream::connect(listen).await.unwrap();
    let (ws, resp) = tokio_tungstenite::client_async(format!("ws://{listen}/ws"), tcp)
        .await
        .unwrap();
    assert_eq!(resp.status(), 101);
    ws
}

/// The next data message (pongs and other control frames are skipped).
async fn next(ws: &mut Ws) -> Message {
    tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .expect("no message")
        .expect("stream ended")
        .expect("websocket error")
}

async fn echo_text(ws: &mut Ws, text: &str) {
    ws.send(Message::text(text)).await.unwrap();
    assert_eq!(next(ws).await, Message::text(text));
}

/// Waits (up to 20 s) until the gauge reads `want`.
async fn wait_gauge(admin: SocketAddr, want: f64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = metric(admin, GAUGE).await;
        if v == want {
            return;
        }
        assert!(Instant::now() < deadline, "{GAUGE} stayed {v}, want {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn echo_large_fragmented_ping_and_close_code() {
    let up = WsUpstream::echo().await.unwrap();
    let listen = free_addr();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("access.log");
    let extra = format!("access_log = \"{}\"", log.display());
    let w = Weir::start(&cfg(listen, up.addr(), &extra), &[listen]);
    let mut ws = open(listen).await;
    wait_gauge(w.admin, 1.0).await;

    echo_text(&mut ws, "hello through weir").await;
    let big: Vec<u8> = (0..1_572_864u32).map(|i| (i % 251) as u8).collect();
    ws.send(Message::binary(big.clone())).await.unwrap();
    assert!(next(&mut ws).await == Message::binary(big), "large message");

    // One message in three frames: the backend reassembles it, so weir passed
    // every frame through as it was.
    for (part, op, fin) in [
        ("frag", OpCode::Data(Data::Text), false),
        ("men", OpCode::Data(Data::Continue), false),
        ("ted", OpCode::Data(Data::Continue), true),
    ] {
        ws.send(Message::Frame(Frame::message(part, op, fin)))
            .await
            .unwrap();
    }
    assert_eq!(next(&mut ws).await, Message::text("fragmented"));

    ws.send(Message::Ping("are you there".into()))
        .await
        .unwrap();
    assert_eq!(next(&mut ws).await, Message::Pong("are you there".into()));

    // The backend closes with a code and reason of its own.
    ws.send(Message::text("close:4001:gone fishing"))
        .await
        .unwrap();
    match next(&mut ws).await {
        Message::Close(Some(f)) => {
            assert_eq!(u16::from(f.code), 4001);
            assert_eq!(f.reason.as_str(), "gone fishing");
        }
        other => panic!("want a close frame, got {other:?}"),
    }
    // The client's close reply completes the handshake; then both sides close
    // (weir passes each side's FIN on and ends when it has both).
    while let Some(Ok(_)) = ws.next().await {}
    drop(ws);
    wait_gauge(w.admin, 0.0).await;
    assert_eq!(up.sessions(), 1);

    // One access log line for the whole connection, status 101.
    let deadline = Instant::now() + Duration::from_secs(20);
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(l) = text.lines().find(|l| l.contains("\"status\":101")) {
            break l.to_string();
        }
        assert!(Instant::now() < deadline, "no 101 line in:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(line.contains("\"bytes\":"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_socket_survives_a_reload_and_is_cut_when_its_endpoint_goes() {
    let up = WsUpstream::echo().await.unwrap();
    let other = WsUpstream::echo().await.unwrap();
    let listen = free_addr();
    let w = Weir::start(&cfg(listen, up.addr(), ""), &[listen]);
    let mut ws = open(listen).await;
    echo_text(&mut ws, "before").await;

    // An unrelated route and pool: the socket's endpoint stays.
    let more = format!(
        "{}\n[routes.other]\nlistener = \"web\"\npath_prefix = \"/other\"\npool = \"other\"\n[pools.other]\n{}\n",
        cfg(listen, up.addr(), ""),
        endpoints(&[(other.addr(), 1)])
    );
    assert!(w.reload(&more).contains("config reloaded"));
    echo_text(&mut ws, "after the reload").await;
    assert_eq!(metric(w.admin, GAUGE).await, 1.0);

    // The endpoint goes: the socket is cut once the drain grace is over.
    assert!(w
        .reload(&cfg(listen, other.addr(), ""))
        .contains("config reloaded"));
    let removed = Instant::now();
    let end = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match ws.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(
        end.is_ok(),
        "the socket outlived its endpoint's drain grace"
    );
    assert!(
        removed.elapsed() >= Duration::from_millis(1500),
        "cut before the grace"
    );
    wait_gauge(w.admin, 0.0).await;
    // New sockets go to the new endpoint.
    let mut ws = open(listen).await;
    echo_text(&mut ws, "new").await;
    assert_eq!(other.sessions(), 1);
}

const UPGRADE_REQ: &str = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn declined_upgrades_and_unsolicited_101s_are_ordinary_http() {
    let t = Duration::from_secs(10);
    for (resp, req, want) in [
        // Declined: the backend's answer, as any.
        (
            "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\n\r\nnope",
            UPGRADE_REQ,
            "HTTP/1.1 404",
        ),
        (
            "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
            UPGRADE_REQ,
            "HTTP/1.1 200",
        ),
        // A 101 nobody asked for, or to another protocol: refused.
        (
            "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "HTTP/1.1 502",
        ),
        (
            "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n",
            UPGRADE_REQ,
            "HTTP/1.1 502",
        ),
    ] {
        let up = fixed_backend(resp).await;
        let listen = free_addr();
        let _w = Weir::start(&cfg(listen, up, ""), &[listen]);
        let got = raw_exchange(listen, req.as_bytes(), t).await;
        assert!(got.starts_with(want), "{resp:?} -> {got}");
        assert!(!got.to_ascii_lowercase().contains("upgrade:"), "{got}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn over_tls_and_closed_by_the_upgrade_idle_timeout() {
    let up = WsUpstream::echo().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = weir_testkit::certs::Ca::new("ca");
    let pair = ca.leaf(&["ws.test"]).write(dir.path(), "ws");
    let listen = free_addr();
    let extra = format!(
        "upgrade_idle_timeout = \"1s\"\n[listeners.web.tls]\ncertificates = [{{ cert = \"{}\", key = \"{}\", default = true }}]",
        pair.cert.display(),
        pair.key.display()
    );
    let w = Weir::start(&cfg(listen, up.addr(), &extra), &[listen]);
    // HTTP/1.1 by ALPN: an Upgrade is HTTP/1.1's.
    let tls = crate::tls_kit::client(&ca.pem, &["http/1.1"], None);
    let h = crate::tls_kit::connect(&tls, listen, Some("ws.test"))
        .await
        .unwrap();
    assert_eq!(h.alpn().as_deref(), Some("http/1.1"));
    let (mut ws, resp) = tokio_tungstenite::client_async("wss://ws.test/ws", h.stream)
        .await
        .unwrap();
    assert_eq!(resp.status(), 101);
    wait_gauge(w.admin, 1.0).await;
    ws.send(Message::text("over tls")).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .expect("no echo")
        .expect("stream ended")
        .expect("websocket error");
    assert_eq!(got, Message::text("over tls"));
    // Then silence: weir closes it after upgrade_idle_timeout.
    let quiet = Instant::now();
    let end = tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .expect("the idle socket was never closed");
    assert!(
        !matches!(end, Some(Ok(Message::Text(_) | Message::Binary(_)))),
        "{end:?}"
    );
    assert!(
        quiet.elapsed() >= Duration::from_millis(900),
        "closed before the idle timeout"
    );
    wait_gauge(w.admin, 0.0).await;
}

/// WebSocket over HTTP/2 (RFC 8441): an h2c client's extended CONNECT reaches the
/// HTTP/1.1 WebSocket backend as an upgrade; the stream is the socket, both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn websocket_over_http2_extended_connect() {
    let up = WsUpstream::echo().await.unwrap();
    let listen = free_addr();
    let w = Weir::start(&cfg(listen, up.addr(), ""), &[listen]);
    let tcp = TcpStream::connect(listen).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut client = client.ready().await.unwrap();
    // The server's SETTINGS say whether it takes extended CONNECT; wait for them.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !client.is_extended_connect_protocol_enabled() {
        assert!(
            Instant::now() < deadline,
            "weir never enabled extended CONNECT"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
        client = client.ready().await.unwrap();
    }
    let mut req = http::Request::builder()
        .method(http::Method::CONNECT)
        .uri(format!("http://{listen}/ws"))
        .header("sec-websocket-version", "13")
        .body(())
        .unwrap();
    req.extensions_mut()
        .insert(h2::ext::Protocol::from_static("websocket"));
    let (resp, send) = client.send_request(req, false).unwrap();
    let resp = resp.await.unwrap();
    assert_eq!(resp.status(), 200, "{:?}", resp.headers());
    let io = crate::h2_tunnel::Tunnel::new(resp.into_body(), send);
    let mut ws = WebSocketStream::from_raw_socket(
        io,
        tokio_tungstenite::tungstenite::protocol::Role::Client,
        None,
    )
    .await;
    wait_gauge(w.admin, 1.0).await;
    ws.send(Message::text("over h2")).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got, Message::text("over h2"));
    // 1 MiB each way, through both flow-control windows.
    let big = vec![7u8; 1 << 20];
    ws.send(Message::binary(big.clone())).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(got.into_data().len(), big.len());
    // Closing: the handshake's frames, then the client drops its stream (RST_STREAM),
    // which ends the relay and frees the upstream socket.
    ws.close(None).await.unwrap();
    while let Some(Ok(_)) = ws.next().await {}
    drop(ws);
    wait_gauge(w.admin, 0.0).await;
}
