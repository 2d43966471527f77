//! TCP_NODELAY on both sides, so small requests, responses and relayed
//! bytes never wait for Nagle: weir sets it once on the listening socket
//! and relies on accepted sockets inheriting it, and sets it on each
//! upstream socket before connecting. Checked on weir's own sockets,
//! duplicated out of the running process with pidfd_getfd(2).

use std::net::{SocketAddr, TcpStream};
use std::os::fd::FromRawFd;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_testkit::{HttpUpstream, TcpUpstream};

use crate::common::{endpoints, free_addr, one_pool, Weir};

/// TCP_NODELAY of the socket in process `pid` whose peer is `peer`.
fn nodelay_of_peer(pid: u32, peer: SocketAddr) -> bool {
    // SAFETY: plain system calls; every fd obtained is owned by a TcpStream
    // (closed on drop) or closed here.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::c_int, 0) };
    assert!(
        pidfd >= 0,
        "pidfd_open: {}",
        std::io::Error::last_os_error()
    );
    let mut found = None;
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap() {
        let entry = entry.unwrap();
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|t| t.to_string_lossy().starts_with("socket:"));
        let Ok(n) = entry.file_name().to_string_lossy().parse::<libc::c_int>() else {
            continue;
        };
        if !is_socket {
            continue;
        }
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd as libc::c_int, n, 0) };
        if fd < 0 {
            continue;
        }
        let s = unsafe { TcpStream::from_raw_fd(fd as libc::c_int) };
        if s.peer_addr().ok() == Some(peer) {
            found = Some(s.nodelay().unwrap());
            break;
        }
    }
    unsafe { libc::close(pidfd as libc::c_int) };
    found.unwrap_or_else(|| panic!("weir has no socket connected to {peer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accepted_http_sockets_have_nodelay() {
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 512];
    assert!(s.read(&mut buf).await.unwrap() > 0);
    // The connection stays open (keep-alive): weir's end of it is there.
    assert!(nodelay_of_peer(w.child.id(), s.local_addr().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accepted_tcp_sockets_have_nodelay() {
    let up = TcpUpstream::echo("a", true).await.unwrap();
    let listen = free_addr();
    let cfg = crate::tcp::tcp_cfg(listen, &endpoints(&[(up.addr(), 1)]), "");
    let w = Weir::start(&cfg, &[listen]);
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    let mut buf = [0u8; 2];
    s.read_exact(&mut buf).await.unwrap();
    assert_eq!(&buf, b"a\n");
    assert!(nodelay_of_peer(w.child.id(), s.local_addr().unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn upstream_sockets_have_nodelay() {
    // HTTP: the pooled keep-alive connection to the upstream.
    let up = HttpUpstream::spawn("a").await.unwrap();
    let listen = free_addr();
    let w = Weir::start(
        &one_pool(listen, &endpoints(&[(up.addr(), 1)]), ""),
        &[listen],
    );
    let r = weir_testkit::client::get(listen, "/").await.unwrap();
    assert_eq!(r.status, 200);
    assert!(nodelay_of_peer(w.child.id(), up.addr()));
    // TCP: the session's upstream side, open while the client is.
    let echo = TcpUpstream::echo("b", true).await.unwrap();
    let listen = free_addr();
    let cfg = crate::tcp::tcp_cfg(listen, &endpoints(&[(echo.addr(), 1)]), "");
    let w = Weir::start(&cfg, &[listen]);
    let mut s = tokio::net::TcpStream::connect(listen).await.unwrap();
    let mut buf = [0u8; 2];
    s.read_exact(&mut buf).await.unwrap();
    assert!(nodelay_of_peer(w.child.id(), echo.addr()));
}
