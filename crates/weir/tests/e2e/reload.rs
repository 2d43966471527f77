//! Live reload: validated first, applied by one snapshot swap; in-flight
//! requests and TCP sessions survive; listeners come and go.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use weir_testkit::client::{self, HttpConn};
use weir_testkit::{HttpUpstream, Latency, TcpUpstream};

use crate::common::{endpoints, free_addr, one_pool, Weir};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pool_change_keeps_twenty_slow_requests_in_flight() {
    let slow = HttpUpstream::builder("old")
        .latency(Latency::Fixed(Duration::from_secs(2)))
        .spawn()
        .await
        .unwrap();
    let fresh = HttpUpstream::spawn("new").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(slow.addr(), 1)]), ""),
        &[listen],
    );

    let inflight: Vec<_> = (0..20)
        .map(|_| tokio::spawn(async move { client::get(listen, "/").await }))
        .collect();
    // Wait until all 20 reached the old backend.
    for _ in 0..100 {
        if slow.in_flight() == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(slow.in_flight(), 20);

    let outcome = w.reload(&one_pool(listen, &endpoints(&[(fresh.addr(), 1)]), ""));
    assert!(outcome.contains("config reloaded"), "{outcome}");
    // New requests go to the new pool at once...
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "new\n");
    // ...and every old one completes.
    for h in inflight {
        let r = h.await.unwrap().unwrap();
        assert_eq!((r.status.as_u16(), r.text()), (200, "old\n".to_string()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_file_is_rejected_and_the_old_config_keeps_serving() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let good = one_pool(listen, &endpoints(&[(up.addr(), 1)]), "");
    let w = Weir::start(&good, &[listen]);
    let bad = good.replace("pool = \"app\"", "pool = \"nope\"");
    let outcome = w.reload(&bad);
    assert!(outcome.contains("reload rejected"), "{outcome}");
    let text = w.log_text();
    assert!(
        text.contains("weir.toml:4:8: error: no pool named `nope`"),
        "{text}"
    );
    assert_eq!(client::get(listen, "/").await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_changed_file_reloads_without_sighup() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(a.addr(), 1)]), ""),
        &[listen],
    );
    let from = w.log_lines();
    std::fs::write(
        &w.config,
        one_pool(listen, &endpoints(&[(b.addr(), 1)]), ""),
    )
    .unwrap();
    w.wait_log(from, "config reloaded", Duration::from_secs(5));
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "b\n");
}

/// An editor that deletes the file and writes it anew leaves no file for a moment: that is
/// not a failed reload (nothing logged as rejected, no failure counted); the running config
/// stays, and the file read when it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_file_gone_for_a_moment_is_no_failed_reload() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(a.addr(), 1)]), ""),
        &[listen],
    );
    let from = w.log_lines();
    std::fs::remove_file(&w.config).unwrap();
    w.wait_log(from, "is gone", Duration::from_secs(20));
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "a\n");
    std::fs::write(
        &w.config,
        one_pool(listen, &endpoints(&[(b.addr(), 1)]), ""),
    )
    .unwrap();
    w.wait_log(from, "config reloaded", Duration::from_secs(20));
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "b\n");
    let log = w.log_text();
    assert!(!log.contains("reload rejected"), "{log}");
    let metrics = client::get(w.admin, "/metrics").await.unwrap().text();
    assert!(
        metrics.contains("weir_config_reloads_total{result=\"failed\"} 0"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tcp_session_survives_a_reload() {
    let a = TcpUpstream::echo("a", false).await.unwrap();
    let b = TcpUpstream::echo("b", false).await.unwrap();
    let listen = free_addr();
    let cfg = |up: std::net::SocketAddr| {
        format!(
            "[listeners.db]\nbind = \"{listen}\"\nprotocol = \"tcp\"\npool = \"db\"\n[pools.db]\n{}\n",
            endpoints(&[(up, 1)])
        )
    };
    let w = Weir::start(&cfg(a.addr()), &[listen]);
    let mut s = TcpStream::connect(listen).await.unwrap();
    s.write_all(b"before").await.unwrap();
    let mut buf = [0u8; 6];
    s.read_exact(&mut buf).await.unwrap();
    assert!(w.reload(&cfg(b.addr())).contains("config reloaded"));
    s.write_all(b"after!").await.unwrap();
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"after!");
    assert_eq!(a.active(), 1, "the session moved");
    // New sessions use the new pool.
    let mut s2 = TcpStream::connect(listen).await.unwrap();
    s2.write_all(b"x").await.unwrap();
    s2.read_exact(&mut [0u8; 1]).await.unwrap();
    assert_eq!(b.connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn listeners_are_added_and_removed_live() {
    let up = HttpUpstream::builder("a")
        .latency(Latency::Fixed(Duration::from_millis(800)))
        .spawn()
        .await
        .unwrap();
    let (l1, l2) = (free_addr(), free_addr());
    let eps = endpoints(&[(up.addr(), 1)]);
    let first = format!("[listeners.one]\nbind = \"{l1}\"\npool = \"app\"\n[pools.app]\n{eps}\n");
    let second = format!("[listeners.two]\nbind = \"{l2}\"\npool = \"app\"\n[pools.app]\n{eps}\n");
    let w = Weir::start(&first, &[l1]);

    // A request in flight on the listener that is about to go.
    let mut conn = HttpConn::connect(l1).await.unwrap();
    let pending = tokio::spawn(async move { conn.get("/").await });
    tokio::time::sleep(Duration::from_millis(200)).await;

    assert!(w.reload(&second).contains("config reloaded"));
    assert_eq!(client::get(l2, "/").await.unwrap().status, 200);
    // The removed listener no longer accepts...
    assert!(
        TcpStream::connect(l1).await.is_err(),
        "removed listener still accepts"
    );
    // ...but its in-flight request finished.
    assert_eq!(pending.await.unwrap().unwrap().status, 200);
}

/// A SIGHUP sent the moment the data listener accepts (a reload right after
/// a start, as service managers do) reloads; it must not meet the default
/// action of a signal not yet handled, which ends the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sighup_as_soon_as_weir_listens_is_a_reload() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    for _ in 0..5 {
        let listen = free_addr();
        let w = Weir::start(&one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""), &[]);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(listen).is_err() {
            assert!(std::time::Instant::now() < deadline, "weir never listened");
            std::thread::sleep(Duration::from_micros(200));
        }
        w.signal(libc::SIGHUP);
        w.wait_log(0, "SIGHUP: reloading", Duration::from_secs(5));
        let r = client::get(listen, "/").await.unwrap();
        assert_eq!(r.status, 200);
    }
}

/// `[admin]` is read at start only: a reload that changes `admin.listen`
/// says so in the log, applies the rest, and the admin listener stays where
/// it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_changed_admin_listen_says_it_needs_a_restart() {
    let a = HttpUpstream::spawn("a").await.unwrap();
    let b = HttpUpstream::spawn("b").await.unwrap();
    let (listen, other) = (free_addr(), free_addr());
    let cfg = |up: std::net::SocketAddr, admin: std::net::SocketAddr| {
        format!(
            "[admin]\nlisten = \"{admin}\"\n\n{}",
            one_pool(listen, &endpoints(&[(up, 1)]), "")
        )
    };
    // The file's first admin address is never bound: the test's `--admin` overrides it.
    let w = Weir::start(&cfg(a.addr(), free_addr()), &[listen]);
    let from = w.log_lines();
    let outcome = w.reload(&cfg(b.addr(), other));
    assert!(outcome.contains("config reloaded"), "{outcome}");
    let line = w.wait_log(from, "next start", Duration::from_secs(5));
    assert!(line.contains("[admin]"), "{line}");
    assert_eq!(client::get(listen, "/").await.unwrap().text(), "b\n");
    // Still on the address it started with; nothing on the new one.
    assert_eq!(client::get(w.admin, "/healthz").await.unwrap().status, 200);
    assert!(std::net::TcpStream::connect(other).is_err());
}
