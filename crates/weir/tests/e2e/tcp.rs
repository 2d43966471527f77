//! The TCP proxy: per-connection round robin, failover on connect, half-close,
//! idle timeout, and a large transfer byte-exact.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::{BlackHole, TcpUpstream};

use crate::common::{endpoints, free_addr, Weir};

pub(crate) fn tcp_cfg(listen: SocketAddr, eps: &str, listener_extra: &str) -> String {
    format!(
        r#"
[listeners.db]
bind = "{listen}"
protocol = "tcp"
pool = "db"
{listener_extra}

[pools.db]
{eps}
"#
    )
}

async fn greeting(s: &mut TcpStream) -> String {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while s.read_exact(&mut b).await.is_ok() && b[0] != b'\n' {
        line.push(b[0]);
    }
    String::from_utf8(line).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn balances_connections_by_weight() {
    let a = TcpUpstream::echo("a", true).await.unwrap();
    let b = TcpUpstream::echo("b", true).await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &tcp_cfg(listen, &endpoints(&[(a.addr(), 2), (b.addr(), 1)]), ""),
        &[listen],
    );
    // The readiness probe was a session too; let its pick happen first so
    // ours are nine consecutive picks (three full 2:1 cycles).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut seen = String::new();
    for _ in 0..9 {
        let mut s = TcpStream::connect(listen).await.unwrap();
        seen.push_str(&greeting(&mut s).await);
    }
    assert_eq!(seen.matches('a').count(), 6, "{seen}");
    assert_eq!(seen.matches('b').count(), 3, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tries_the_next_endpoint_when_connect_fails() {
    let dead = free_addr();
    let live = TcpUpstream::echo("live", true).await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &tcp_cfg(listen, &endpoints(&[(dead, 1), (live.addr(), 1)]), ""),
        &[listen],
    );
    for _ in 0..6 {
        let mut s = TcpStream::connect(listen).await.unwrap();
        assert_eq!(greeting(&mut s).await, "live");
    }
}

/// A connect that times out moves on to the next endpoint; the session's
/// one timer then bounds its idle time from the last byte, not from the
/// connect deadline it was first armed with.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_connect_timeout_fails_over_and_the_session_then_idles_out() {
    let hole = BlackHole::new().unwrap();
    let live = TcpUpstream::echo("live", true).await.unwrap();
    let listen = free_addr();
    let eps = format!(
        "connect_timeout = \"300ms\"\n{}",
        endpoints(&[(hole.addr(), 1), (live.addr(), 1)])
    );
    let _w = Weir::start(
        &tcp_cfg(listen, &eps, r#"idle_timeout = "700ms""#),
        &[listen],
    );
    let mut slow = None;
    // Round robin: every other session tries the black hole first.
    for _ in 0..4 {
        let t = Instant::now();
        let mut s = TcpStream::connect(listen).await.unwrap();
        assert_eq!(greeting(&mut s).await, "live");
        let took = t.elapsed();
        if took >= Duration::from_millis(280) {
            assert!(took < Duration::from_millis(1500), "{took:?}");
            slow.get_or_insert(s);
        }
    }
    let mut s = slow.expect("no session tried the unanswering endpoint first");
    s.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"ping");
    closes_idle(s, Duration::from_millis(600)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn half_close_passes_through() {
    let up = TcpUpstream::echo("e", false).await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &tcp_cfg(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"hello, then EOF").await.unwrap();
    s.shutdown().await.unwrap();
    // Our write side is closed; the echo must still come back, then EOF.
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out))
        .await
        .expect("no EOF after echo")
        .unwrap();
    assert_eq!(out, b"hello, then EOF");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn idle_sessions_are_closed() {
    let up = TcpUpstream::echo("e", false).await.unwrap();
    let listen = free_addr();
    let cfg = tcp_cfg(
        listen,
        &endpoints(&[(up.addr(), 1)]),
        r#"idle_timeout = "300ms""#,
    );
    let _w = Weir::start(&cfg, &[listen]);
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"ping").await.unwrap();
    let mut buf = [0u8; 4];
    s.read_exact(&mut buf).await.unwrap();
    closes_idle(s, Duration::from_millis(250)).await;
}

/// Waits for weir to close `s`, which just moved its last byte: not before
/// `at_least`, and within two seconds.
async fn closes_idle(mut s: TcpStream, at_least: Duration) {
    let start = Instant::now();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
        .await
        .expect("idle session not closed")
        .ok();
    let t = start.elapsed();
    assert!(
        t >= at_least && t < Duration::from_secs(2),
        "closed {t:?} after the last byte"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_mib_round_trip_byte_exact() {
    let up = TcpUpstream::echo("e", false).await.unwrap();
    let listen = free_addr();
    let _w = Weir::start(
        &tcp_cfg(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let s = TcpStream::connect(listen).await.unwrap();
    let (mut r, mut w) = s.into_split();
    let data = weir_testkit::pattern(64 * 1024 * 1024);
    let sent = data.clone();
    let writer = tokio::spawn(async move {
        w.write_all(&sent).await.unwrap();
        w.shutdown().await.unwrap();
    });
    let mut got = Vec::with_capacity(data.len());
    tokio::time::timeout(Duration::from_secs(60), r.read_to_end(&mut got))
        .await
        .unwrap()
        .unwrap();
    writer.await.unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data[..], "bytes differ");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hash_keeps_a_client_ip_on_one_endpoint() {
    let ups = [
        TcpUpstream::echo("a", true).await.unwrap(),
        TcpUpstream::echo("b", true).await.unwrap(),
        TcpUpstream::echo("c", true).await.unwrap(),
    ];
    let listen = free_addr();
    let eps = endpoints(&[(ups[0].addr(), 1), (ups[1].addr(), 1), (ups[2].addr(), 1)]);
    let _w = Weir::start(
        &tcp_cfg(listen, &format!("{eps}\nbalance = \"hash\""), ""),
        &[listen],
    );
    // Let the readiness probe's session end first.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..9 {
        let mut s = TcpStream::connect(listen).await.unwrap();
        seen.insert(greeting(&mut s).await);
        // End each session before the next, so bounded load (which spills a
        // key to the next endpoint when its own is busy) does not apply.
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every connection comes from 127.0.0.1: one endpoint takes them all.
    assert_eq!(seen.len(), 1, "{seen:?}");
}

/// TCP listeners accept at once, so a backend that speaks first (MySQL,
/// SMTP) greets a client that has sent nothing, also when a reload turns
/// an HTTP listener's address (whose accepts wait for the client's bytes)
/// into a TCP listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_speaks_first_also_after_a_reload_from_http() {
    let a = TcpUpstream::echo("hello-from-a", true).await.unwrap();
    let listen = free_addr();
    let eps = endpoints(&[(a.addr(), 1)]);
    let w = Weir::start(&crate::common::one_pool(listen, &eps, ""), &[listen]);
    let outcome = w.reload(&tcp_cfg(listen, &eps, ""));
    assert!(outcome.contains("config reloaded"), "{outcome}");
    for _ in 0..3 {
        let started = Instant::now();
        let mut s = TcpStream::connect(listen).await.unwrap();
        let hello = tokio::time::timeout(Duration::from_secs(3), greeting(&mut s))
            .await
            .expect("no greeting");
        assert_eq!(hello, "hello-from-a");
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "greeting after {:?}",
            started.elapsed()
        );
    }
}

/// TCP sessions count in `weir_requests_total` like requests:
/// with an empty `code`, reason "" when relayed, the reason when refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_are_counted_in_requests_total() {
    let up = TcpUpstream::echo("a", false).await.unwrap();
    let (db, dead, nowhere) = (free_addr(), free_addr(), free_addr());
    let cfg = format!(
        "[listeners.db]\nbind = \"{db}\"\nprotocol = \"tcp\"\npool = \"db\"\n\n\
         [listeners.dead]\nbind = \"{dead}\"\nprotocol = \"tcp\"\npool = \"dead\"\n\n\
         [pools.db]\n{}\n[pools.dead]\n{}",
        endpoints(&[(up.addr(), 1)]),
        endpoints(&[(nowhere, 1)]),
    );
    // Waiting on the admin listener alone (weir opens it after the config's
    // listeners): a probe connection to db or dead would be a session too.
    let mut w = Weir::start(&cfg, &[]);
    let admin = w.admin;
    w.wait_listening(admin);
    for _ in 0..3 {
        let mut s = TcpStream::connect(db).await.unwrap();
        s.write_all(b"hi\n").await.unwrap();
        let mut b = [0u8; 3];
        s.read_exact(&mut b).await.unwrap();
    }
    // Refused: nothing listens at the dead pool's endpoint.
    let mut s = TcpStream::connect(dead).await.unwrap();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;

    let relayed = format!(
        "weir_requests_total{{listener=\"db\",route=\"\",pool=\"db\",endpoint=\"{}\",code=\"\",reason=\"\"}} 3",
        up.addr()
    );
    let refused = "weir_requests_total{listener=\"dead\",route=\"\",pool=\"dead\",endpoint=\"\",code=\"\",reason=\"connect_failed\"} 1";
    // A session is counted when it ends, which weir sees a moment after the client.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = weir_testkit::client::get(w.admin, "/metrics")
            .await
            .unwrap()
            .text();
        if m.lines().any(|l| l == relayed) && m.lines().any(|l| l == refused) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "want\n{relayed}\n{refused}\nin\n{m}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
